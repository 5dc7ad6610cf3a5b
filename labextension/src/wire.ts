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
  event: TextEvent | TextDeltaEvent | TextDiscardedEvent | ReasoningEvent | ReasoningDeltaEvent | LlmRetryEvent | StepStartEvent | ToolCallEvent | PermissionPreviewEvent | PermissionReadyEvent | PermissionRequestEvent | PermissionResolvedEvent | ToolResultEvent | StepCompleteEvent | CompactionStartEvent | CompactionCompleteEvent | UsageEvent | TodosUpdatedEvent | ToolProgressEvent | BudgetEvent | SessionForkedEvent | FinalEvent;
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

export type CacheEntry = {
  ref_id: string;
  tool_name: string;
  created_at: string;
  size_bytes: number;
  line_count: number;
  has_parts: boolean;
  is_error: boolean;
  whose: string;
};

export type CacheGrepRequest = {
  request_id: string;
  type: 'cache.grep';
  ref_id: string;
  pattern: string;
  regex?: boolean;
  before?: number | null;
  after?: number | null;
  max_matches?: number | null;
};

export type CacheLineRequest = {
  request_id: string;
  type: 'cache.line';
  ref_id: string;
  line_number: number;
  char_offset?: number | null;
  char_limit?: number | null;
};

export type CacheListRequest = {
  request_id: string;
  type: 'cache.list';
};

export type CacheListResult = {
  entries: Array<CacheEntry>;
};

export type CachePartsRequest = {
  request_id: string;
  type: 'cache.parts';
  ref_id: string;
};

export type CachePartsResult = {
  parts: Array<{ [key: string]: unknown }>;
};

export type CacheReadRequest = {
  request_id: string;
  type: 'cache.read';
  ref_id: string;
  offset?: number;
  limit?: number | null;
};

export type CacheTextResult = {
  text: string;
};

export type CellControl = {
  request_id: string;
  type: 'cell.control';
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
  timestamp?: number;
  compacted: boolean;
};

export type CompactionStartEvent = {
  seq?: number | null;
  type: 'compaction_start';
  timestamp?: number;
};

export type Empty = Record<string, never>;

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
  protocol?: number;
  session_id?: string | null;
  model?: string | null;
  provider?: string | null;
  api_key_env?: string | null;
  approval_mode?: 'minimal' | 'trusted' | 'full-access' | null;
  active_run?: ActiveRun | null;
  api_key_configured?: boolean | null;
  store?: StoreInfo | null;
  control_requests?: Array<string> | null;
  type: 'hello';
  client_id?: string | null;
};

export type JobProgress = {
  percent: number;
  done: string;
  total: string;
};

export type JobStopRequest = {
  request_id: string;
  type: 'job.stop';
  job_id: string;
};

export type JobStopResult = {
  job: JobView;
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

export type JobsListRequest = {
  request_id: string;
  type: 'jobs.list';
};

export type JobsListResult = {
  jobs: Array<JobView>;
};

export type KernelState = {
  protocol?: number;
  session_id?: string | null;
  model?: string | null;
  provider?: string | null;
  api_key_env?: string | null;
  approval_mode?: 'minimal' | 'trusted' | 'full-access' | null;
  active_run?: ActiveRun | null;
  api_key_configured?: boolean | null;
  store?: StoreInfo | null;
  control_requests?: Array<string> | null;
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

export type McpAddRequest = {
  request_id: string;
  type: 'mcp.add';
  name: string;
  server: { [key: string]: unknown };
};

export type NamespaceChange = {
  name: string;
  change: 'added' | 'rebound' | 'deleted' | 'mutated';
};

export type NotebookHello = {
  type: 'hello';
  request_id: string;
  protocol?: number;
};

export type NotebookReplyRequest = {
  type: 'notebook.reply';
  reply_to: string;
  ok: boolean;
  result?: { [key: string]: unknown } | null;
  error?: string | null;
  error_kind?: 'invalid' | 'not_found' | 'cell_changed' | 'file_changed' | 'unreadable' | 'too_large' | 'needs_tab' | 'refused' | null;
  request_id: string;
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

export type PanelAttachRequest = {
  request_id: string;
  type: 'panel.attach';
  client_id: string;
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
  args?: { [key: string]: unknown };
  remember_rules?: Array<string>;
  kind?: 'tool' | 'elicitation' | 'sampling' | 'authorization';
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

export type PermissionRespondRequest = {
  request_id: string;
  type: 'permission.respond';
  permission_request_id: string;
  decision: 'allow' | 'allow_remember' | 'deny';
  reason?: string | null;
  content?: { [key: string]: unknown } | null;
};

export type ReasoningDeltaEvent = {
  seq?: number | null;
  type: 'reasoning_delta';
  delta: string;
  timestamp?: number;
};

export type ReasoningEvent = {
  seq?: number | null;
  type: 'reasoning';
  content: string;
  timestamp?: number;
};

export type Response = {
  type: 'response';
  request_id?: string | null;
  ok: boolean;
  result?: { [key: string]: unknown } | null;
  error?: string | null;
};

export type RunCancelRequest = {
  request_id: string;
  type: 'run.cancel';
  run_id: string;
};

export type RunStartRequest = {
  request_id: string;
  type: 'run.start';
  prompt: string;
  session_id?: string | null;
  new_session?: boolean;
};

export type RunStartResult = {
  run_id: string;
  session_id?: string | null;
};

export type RunStarted = {
  type: 'run.started';
  run_id: string;
  session_id?: string | null;
  prompt: string;
  source: 'magic' | 'panel' | 'external';
  demo?: boolean;
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

export type SessionSummary = {
  session_id: string;
  updated_at: string;
  message_count: number;
  last_user_message?: string | null;
  title?: string | null;
};

export type SessionTranscriptRequest = {
  request_id: string;
  type: 'session.transcript';
  session_id: string;
};

export type SessionsListRequest = {
  request_id: string;
  type: 'sessions.list';
};

export type SessionsListResult = {
  sessions: Array<SessionSummary>;
};

export type StateGetRequest = {
  request_id: string;
  type: 'state.get';
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
  timestamp?: number;
};

export type TextDiscardedEvent = {
  seq?: number | null;
  type: 'text_discarded';
  timestamp?: number;
};

export type TextEvent = {
  seq?: number | null;
  type: 'text';
  content: string;
  citations?: Array<Citation> | null;
  timestamp?: number;
};

export type TodoItemView = {
  id: string;
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
  priority?: number;
  notes?: string | null;
  activeForm?: string | null;
};

export type TodosGetRequest = {
  request_id: string;
  type: 'todos.get';
};

export type TodosResult = {
  session_id?: string | null;
  todos: Array<TodoItemView>;
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
  request_id: string;
  type: 'tool.call';
  caller: string;
  tool: string;
  arguments?: { [key: string]: unknown };
};

export type ToolCallResult = {
  is_error: boolean;
  content: Array<{ [key: string]: unknown }>;
  output_ref?: string | null;
  run_id: string;
  data?: ToolResultData;
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
  outcome?: 'completed' | 'error' | 'denied' | 'cut_off';
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
  data?: ToolResultData;
};

export type ToolsListRequest = {
  request_id: string;
  type: 'tools.list';
};

export type ToolsListResult = {
  tools: Array<ExternalTool>;
};

export type TranscriptResult = {
  session_id: string;
  events: Array<KernelMessage>;
};

export type UsageEvent = {
  seq?: number | null;
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
  web_search_requests?: number | null;
  web_fetch_requests?: number | null;
};

export type KernelMessage = Hello | Response | RunStarted | AgentEventMessage | RunStatusMessage | StoreChanged | JobUpdated;

export type NotebookKernelMessage = NotebookHello | NotebookRequest | OutputFinished;

export type Request = RunStartRequest | RunCancelRequest | PermissionRespondRequest | StateGetRequest | SessionsListRequest | SessionTranscriptRequest | CacheListRequest | CacheReadRequest | CacheGrepRequest | CacheLineRequest | CachePartsRequest | TodosGetRequest | PanelAttachRequest | JobsListRequest | JobStopRequest | CellControl | McpAddRequest | NotebookReplyRequest | ToolsListRequest | ToolCallRequest;

/** The result of each request type. */
export type RequestResults = {
  'run.start': RunStartResult;
  'run.cancel': Empty;
  'permission.respond': Empty;
  'state.get': KernelState;
  'sessions.list': SessionsListResult;
  'session.transcript': TranscriptResult;
  'cache.list': CacheListResult;
  'cache.read': CacheTextResult;
  'cache.grep': CacheTextResult;
  'cache.line': CacheTextResult;
  'cache.parts': CachePartsResult;
  'todos.get': TodosResult;
  'panel.attach': Empty;
  'jobs.list': JobsListResult;
  'job.stop': JobStopResult;
  'cell.control': Empty;
  'mcp.add': Empty;
  'notebook.reply': Empty;
  'tools.list': ToolsListResult;
  'tool.call': ToolCallResult;
};
