/**
 * Types of the `codelia` comm protocol (docs/comm-protocol.md). The kernel's messages and the
 * agent events they carry are generated from the Python models (wire.ts); this module names them
 * for the panel and adds the request results. Pure declarations: no JupyterLab imports, so the transcript
 * reducer and its unit tests stay free of the DOM.
 */

import type * as wire from './wire';

export type JSONObject = { [key: string]: unknown };

export type TodoItem = wire.TodoItemView;

export type TodoStatus = TodoItem['status'];

export type PermissionDecision = 'allow' | 'allow_remember' | 'deny';

export type RunStatus = wire.RunStatusMessage['status'];

export type RunSource = wire.RunStarted['source'];

export type ActiveRun = wire.ActiveRun;

/** A source the model cited: a web page (`url`) or a passage of a document. */
export type Citation = wire.Citation;

/** Agent events (the `event` of an `agent.event` message); unknown types are ignored. */
export type AgentEvent = wire.AgentEventMessage['event'];

/** Content parts as tools return them; images carry a data URL. */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: string; [key: string]: unknown };

export type HelloMessage = wire.Hello;

/** What `state.get` answers: the hello's body (provider, key, active run, store). */
export type KernelState = Omit<wire.Hello, 'type' | 'client_id'>;

/** A background job, as `job.updated` and `jobs.list` describe it. */
export type JobView = wire.JobView;

/** Everything the kernel sends on the comm (generated from jupyter_codelia/wire.py). */
export type KernelMessage = wire.KernelMessage;

/** A codelia home as a process sees it; equal `store_id`s mean the same files. */
export type StoreInfo = wire.StoreInfo;

/** A session row, as `sessions.list` and `GET /codelia/api/sessions` return it. */
export interface SessionSummary {
  session_id: string;
  updated_at: string | null;
  message_count: number | null;
  last_user_message: string | null;
  title?: string | null;
}

/** A tool-output cache entry, as `cache.list` returns it. */
export interface CacheEntry {
  ref_id: string;
  tool_name: string;
  created_at: string;
  size_bytes: number;
  line_count: number;
  has_parts: boolean;
  is_error: boolean;
  /** "(this session)", "(this kernel)", "(this notebook)" or "(other: ...)"; own ones first. */
  whose?: string;
}

export const TERMINAL_RUN_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>([
  'completed',
  'error',
  'cancelled'
]);
