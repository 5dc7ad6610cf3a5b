/**
 * GENERATED from jupyter_codelia/wire.py by `python -m jupyter_codelia.wire --typescript`:
 * do not edit. A test fails when this file and the Python models differ.
 */

export type ActiveRun = {
  run_id: string;
  session_id?: string | null;
  prompt: string;
  source: 'magic' | 'panel' | 'external';
};

export type AgentEventMessage = {
  type: 'agent.event';
  run_id: string;
  seq: number;
  event: TextEvent | TextDeltaEvent | TextDiscardedEvent | ReasoningEvent | ReasoningDeltaEvent | LlmRetryEvent | StepStartEvent | ToolCallEvent | PermissionPreviewEvent | PermissionReadyEvent | PermissionRequestEvent | PermissionResolvedEvent | ToolResultEvent | StepCompleteEvent | CompactionStartEvent | CompactionCompleteEvent | HiddenUserMessageEvent | UsageEvent | TodosUpdatedEvent | ToolProgressEvent | BudgetEvent | SessionForkedEvent | FinalEvent;
};

export type BudgetEvent = {
  seq?: number | null;
  type: 'budget';
  run_spent: { [key: string]: number | null };
  run_limits: { [key: string]: number };
  session_spent: { [key: string]: number | null };
  session_limits: { [key: string]: number };
  reached?: string | null;
};

export type CellControl = {
  type: 'cell.control';
  request_id: string;
  run_id: string;
  action: 'allow' | 'allow_remember' | 'deny' | 'stop';
  permission_request_id?: string | null;
  reason?: string | null;
};

export type Citation = {
  title?: string | null;
  url?: string | null;
  cited_text?: string | null;
};

export type CompactionCompleteEvent = {
  seq?: number | null;
  type: 'compaction_complete';
  timestamp?: number | null;
  compacted: boolean;
};

export type CompactionStartEvent = {
  seq?: number | null;
  type: 'compaction_start';
  timestamp?: number | null;
};

export type ExternalTool = {
  name: string;
  description: string;
  input_schema: { [key: string]: unknown };
  read_only: boolean;
  destructive: boolean;
};

export type FinalEvent = {
  seq?: number | null;
  type: 'final';
  content: string;
  citations?: Array<Citation> | null;
};

export type Hello = {
  protocol?: number | null;
  session_id?: string | null;
  model?: string | null;
  provider?: string | null;
  api_key_env?: string | null;
  approval_mode?: string | null;
  active_run?: ActiveRun | null;
  api_key_configured?: boolean | null;
  store?: StoreInfo | null;
  control_requests?: Array<string> | null;
  type: 'hello';
  client_id?: string | null;
};

export type HiddenUserMessageEvent = {
  seq?: number | null;
  type: 'hidden_user_message';
  content: string;
};

export type JobProgress = {
  percent: number;
  done: string;
  total: string;
};

export type JobUpdated = {
  type: 'job.updated';
  job: JobView;
};

export type JobView = {
  job_id: string;
  kind: 'python' | 'shell';
  title: string;
  state: 'running' | 'completed' | 'failed' | 'stopped';
  elapsed_s: number;
  summary?: string | null;
  last_lines: Array<string>;
  progress?: JobProgress | null;
};

export type LlmRetryEvent = {
  seq?: number | null;
  type: 'llm.retry';
  provider: string;
  failure_kind: 'rate_limit' | 'overloaded' | 'timeout' | 'network' | 'provider' | 'bad_request';
  next_attempt: number;
  max_attempts: number;
  delay_ms: number;
  delay_source: 'retry-after' | 'reset-header' | 'provider-body' | 'backoff';
  status?: number | null;
  message?: string | null;
};

export type NamespaceChange = {
  name: string;
  change: 'added' | 'rebound' | 'deleted' | 'mutated';
};

export type NotebookHello = {
  type: 'hello';
  request_id: string;
  protocol?: number | null;
};

export type NotebookRequest = {
  type: 'notebook.request';
  request_id: string;
  client_id: string;
  action: 'snapshot' | 'edit' | 'run' | 'revert' | 'ping';
  params: { [key: string]: unknown };
};

export type OutputFinished = {
  type: 'output.finished';
  model_id: string;
  data: { [key: string]: unknown };
};

export type PermissionPreviewEvent = {
  seq?: number | null;
  type: 'permission.preview';
  tool: string;
  tool_call_id?: string | null;
  file_path?: string | null;
  language?: string | null;
  diff?: string | null;
  summary?: string | null;
  truncated?: boolean | null;
};

export type PermissionReadyEvent = {
  seq?: number | null;
  type: 'permission.ready';
  tool: string;
  tool_call_id?: string | null;
};

export type PermissionRequestEvent = {
  seq?: number | null;
  type: 'permission.request';
  request_id: string;
  tool: string;
  tool_call_id?: string | null;
  title: string;
  message: string;
  args?: { [key: string]: unknown } | null;
  remember_rules?: Array<string> | null;
  kind?: 'tool' | 'elicitation' | 'sampling' | 'authorization' | null;
  url?: string | null;
  fields?: { [key: string]: unknown } | null;
};

export type PermissionResolvedEvent = {
  seq?: number | null;
  type: 'permission.resolved';
  request_id: string;
  tool_call_id?: string | null;
  decision: 'allow' | 'allow_remember' | 'deny';
  reason?: string | null;
};

export type ReasoningDeltaEvent = {
  seq?: number | null;
  type: 'reasoning_delta';
  delta: string;
  timestamp?: number | null;
};

export type ReasoningEvent = {
  seq?: number | null;
  type: 'reasoning';
  content: string;
  timestamp?: number | null;
};

export type Response = {
  type: 'response';
  request_id?: string | null;
  ok: boolean;
  result?: { [key: string]: unknown } | null;
  error?: string | null;
};

export type RunStarted = {
  type: 'run.started';
  run_id: string;
  session_id?: string | null;
  prompt: string;
  source: 'magic' | 'panel' | 'external';
  demo?: boolean | null;
};

export type RunStatusMessage = {
  type: 'run.status';
  run_id: string;
  status: 'running' | 'awaiting_ui' | 'completed' | 'error' | 'cancelled';
  message?: string | null;
};

export type SessionForkedEvent = {
  seq?: number | null;
  type: 'session.forked';
  session_id: string;
  forked_from: string;
};

export type StepCompleteEvent = {
  seq?: number | null;
  type: 'step_complete';
  step_id: string;
  status: 'completed' | 'error';
  duration_ms: number;
  approval_wait_ms?: number | null;
};

export type StepStartEvent = {
  seq?: number | null;
  type: 'step_start';
  step_id: string;
  title: string;
  step_number: number;
};

export type StoreChanged = {
  type: 'store.changed';
  store: StoreInfo;
};

export type StoreInfo = {
  home: string;
  store_id?: string | null;
};

export type TextDeltaEvent = {
  seq?: number | null;
  type: 'text_delta';
  delta: string;
  timestamp?: number | null;
};

export type TextDiscardedEvent = {
  seq?: number | null;
  type: 'text_discarded';
  timestamp?: number | null;
};

export type TextEvent = {
  seq?: number | null;
  type: 'text';
  content: string;
  citations?: Array<Citation> | null;
  timestamp?: number | null;
};

export type TodoItemView = {
  id: string;
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
  priority?: number | null;
  notes?: string | null;
  activeForm?: string | null;
};

export type TodosUpdatedEvent = {
  seq?: number | null;
  type: 'todos.updated';
  session_id?: string | null;
  todos: Array<TodoItemView>;
};

export type ToolCallEvent = {
  seq?: number | null;
  type: 'tool_call';
  tool: string;
  args: { [key: string]: unknown };
  raw_args?: string | null;
  tool_call_id: string;
  display_name?: string | null;
};

export type ToolCallRequest = {
  type: 'tool.call';
  request_id: string;
  caller: string;
  tool: string;
  arguments?: { [key: string]: unknown } | null;
};

export type ToolCallResult = {
  is_error: boolean;
  content: Array<{ [key: string]: unknown }>;
  output_ref?: string | null;
  run_id: string;
  data?: ToolResultData | null;
};

export type ToolProgressEvent = {
  seq?: number | null;
  type: 'tool.progress';
  tool_call_id?: string | null;
  progress?: number | null;
  total?: number | null;
  message?: string | null;
  level?: string | null;
};

export type ToolResultData = {
  outcome?: 'completed' | 'error' | 'denied' | 'cut_off' | null;
  summary?: string | null;
  diff?: string | null;
  file_path?: string | null;
  edit_id?: string | null;
  namespace_changes?: Array<NamespaceChange> | null;
  job_id?: string | null;
  cache_ref?: string | null;
};

export type ToolResultEvent = {
  seq?: number | null;
  type: 'tool_result';
  tool: string;
  result: string;
  tool_call_id: string;
  is_error?: boolean | null;
  parts?: Array<{ [key: string]: unknown }> | null;
  output_ref?: string | null;
  data?: ToolResultData | null;
};

export type ToolsListResult = {
  tools: Array<ExternalTool>;
};

export type UsageEvent = {
  seq?: number | null;
  type: 'usage';
  model: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens?: number | null;
  cache_write_tokens?: number | null;
  total_input_tokens: number;
  total_output_tokens: number;
  cost_usd?: number | null;
  total_cost_usd?: number | null;
  context_limit?: number | null;
  context_left_percent?: number | null;
  web_search_requests?: number | null;
  web_fetch_requests?: number | null;
};

export type KernelMessage = Hello | Response | RunStarted | AgentEventMessage | RunStatusMessage | StoreChanged | JobUpdated;

export type NotebookKernelMessage = NotebookHello | NotebookRequest | OutputFinished;
