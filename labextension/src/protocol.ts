/**
 * Types of the `codelia` comm protocol (docs/comm-protocol.md). The kernel's messages and the
 * agent events they carry, the requests and their results are generated from the Python models
 * (wire.ts); this module names them for the panel. Pure declarations: no JupyterLab imports, so the transcript
 * reducer and its unit tests stay free of the DOM.
 */

import type * as wire from './wire';

export type JSONObject = { [key: string]: unknown };

export type TodoItem = wire.TodoItemView;

export type TodoStatus = TodoItem['status'];

export type PermissionDecision = wire.PermissionRespondRequest['decision'];

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
export type SessionSummary = wire.SessionSummary;

/** A tool-output cache entry, as `cache.list` returns it (own ones first). */
export type CacheEntry = wire.CacheEntry;

/** The type of each request the panel sends the kernel. */
export type RequestType = wire.Request['type'];

/** A request's own fields: the connection adds `type` and `request_id`. */
export type RequestFields<K extends RequestType> = Omit<
  Extract<wire.Request, { type: K }>,
  'type' | 'request_id'
>;

/**
 * The fields argument of a request: optional when the request has no required field (`[]`
 * then fits), required otherwise.
 */
export type RequestArgs<K extends RequestType> =
  object extends RequestFields<K>
    ? [fields?: RequestFields<K>]
    : [fields: RequestFields<K>];

/** What the response to a request of type `K` carries as its `result`. */
export type RequestResult<K extends RequestType> = wire.RequestResults[K];

export const TERMINAL_RUN_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>([
  'completed',
  'error',
  'cancelled'
]);
