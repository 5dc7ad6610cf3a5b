/**
 * Types of the `codelia` comm protocol (docs/comm-protocol.md) and of the agent events it carries
 * (jupyter_codelia/agent/events.py). Pure declarations: no JupyterLab imports, so the transcript
 * reducer and its unit tests stay free of the DOM.
 */

export type JSONObject = { [key: string]: unknown };

export type TodoStatus = 'pending' | 'in_progress' | 'completed';

export interface TodoItem {
  id: string;
  content: string;
  status: TodoStatus;
  priority?: number;
  notes?: string;
  activeForm?: string;
}

export type PermissionDecision = 'allow' | 'allow_remember' | 'deny';

export type RunStatus = 'running' | 'awaiting_ui' | 'completed' | 'error' | 'cancelled';

export type RunSource = 'magic' | 'panel';

export interface ActiveRun {
  run_id: string;
  session_id: string | null;
  prompt: string;
  source: RunSource;
}

/** Agent events (the `event` of an `agent.event` envelope); unknown types are ignored. */
export type AgentEvent =
  | { type: 'text'; content: string; timestamp?: number }
  | { type: 'text_delta'; delta: string; timestamp?: number }
  | { type: 'reasoning'; content: string; timestamp?: number }
  | { type: 'reasoning_delta'; delta: string; timestamp?: number }
  | {
      type: 'llm.retry';
      provider: string;
      failure_kind: string;
      next_attempt: number;
      max_attempts: number;
      delay_ms: number;
      status?: number;
      message?: string;
    }
  | { type: 'step_start'; step_id: string; title: string; step_number: number }
  | {
      type: 'tool_call';
      tool: string;
      args: JSONObject;
      raw_args?: string;
      tool_call_id: string;
      display_name?: string;
    }
  | {
      type: 'permission.preview';
      tool: string;
      tool_call_id?: string;
      file_path?: string;
      language?: string;
      diff?: string;
      summary?: string;
      truncated?: boolean;
    }
  | { type: 'permission.ready'; tool: string; tool_call_id?: string }
  | {
      type: 'permission.request';
      request_id: string;
      tool: string;
      tool_call_id?: string;
      title: string;
      message: string;
      args?: JSONObject;
      remember_rules?: string[];
    }
  | {
      type: 'permission.resolved';
      request_id: string;
      tool_call_id?: string;
      decision: PermissionDecision;
      reason?: string;
    }
  | {
      type: 'tool_result';
      tool: string;
      result: string;
      tool_call_id: string;
      is_error?: boolean;
      parts?: ContentPart[];
      output_ref?: string;
    }
  | {
      type: 'step_complete';
      step_id: string;
      status: 'completed' | 'error';
      duration_ms: number;
    }
  | { type: 'compaction_start'; timestamp?: number }
  | { type: 'compaction_complete'; timestamp?: number; compacted: boolean }
  | { type: 'hidden_user_message'; content: string }
  | {
      type: 'usage';
      model: string;
      input_tokens: number;
      output_tokens: number;
      cache_read_tokens?: number;
      cache_write_tokens?: number;
      total_input_tokens: number;
      total_output_tokens: number;
      cost_usd?: number | null;
      total_cost_usd?: number | null;
      context_limit?: number | null;
      context_left_percent?: number | null;
    }
  | { type: 'todos.updated'; session_id?: string | null; todos: TodoItem[] }
  | {
      type: 'budget';
      run_spent: { [measure: string]: number | null };
      run_limits: { [measure: string]: number };
      session_spent: { [measure: string]: number | null };
      session_limits: { [measure: string]: number };
      /** The limit that ended the run, or null/absent while within the budget. */
      reached?: string | null;
    }
  | { type: 'final'; content: string };

/** Content parts as tools return them; images carry a data URL. */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: string; [key: string]: unknown };

export interface HelloMessage {
  type: 'hello';
  protocol: number;
  session_id: string | null;
  model?: string;
  approval_mode?: string;
  active_run?: ActiveRun | null;
  api_key_configured?: boolean;
}

/** Everything the kernel sends on the comm. */
export type KernelMessage =
  | HelloMessage
  | {
      type: 'response';
      request_id: string;
      ok: boolean;
      result?: JSONObject;
      error?: string;
    }
  | {
      type: 'run.started';
      run_id: string;
      session_id: string | null;
      prompt: string;
      source: RunSource;
    }
  | { type: 'agent.event'; run_id: string; seq: number; event: AgentEvent }
  | { type: 'run.status'; run_id: string; status: RunStatus; message?: string }
  | {
      type: 'permission.request';
      run_id: string;
      permission_request_id: string;
      tool: string;
      tool_call_id?: string;
      title: string;
      message: string;
      args?: JSONObject;
      remember_rules?: string[];
    }
  | {
      type: 'permission.resolved';
      run_id: string;
      permission_request_id: string;
      decision: PermissionDecision;
      reason?: string;
    }
  | { type: 'todos.updated'; session_id?: string | null; todos: TodoItem[] }
  | { type: 'job.updated'; job: JobView };

/** A background job, as `job.updated` and `jobs.list` describe it. */
export interface JobView {
  job_id: string;
  kind: 'python' | 'shell';
  title: string;
  state: 'running' | 'completed' | 'failed' | 'stopped';
  elapsed_s: number;
  summary?: string | null;
  last_lines: string[];
  progress: { percent: number; done: string; total: string } | null;
}

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
}

export const TERMINAL_RUN_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>([
  'completed',
  'error',
  'cancelled'
]);
