/**
 * The transcript model: folds comm messages (docs/comm-protocol.md) into what the panel shows —
 * chat items (user prompts, coalesced assistant text, tool cards, approval cards, notices), the
 * todo list, the usage meter and the state of each run.
 *
 * `Transcript.apply(message)` is a deterministic reducer step: the same messages always build the
 * same model, nothing outside the model is touched, and it returns the list of changes so a view
 * can patch only what changed. Every step is O(1) in the size of the transcript (items are found
 * through maps, never by scanning), so long sessions stay fast.
 */

import {
  AgentEvent,
  Citation,
  ContentPart,
  JSONObject,
  KernelMessage,
  PermissionDecision,
  RunSource,
  RunStatus,
  JobView,
  TERMINAL_RUN_STATUSES,
  TodoItem
} from './protocol';
import { BudgetLine } from './budget';

/**
 * The `default` of an exhaustive switch: its argument has type `never` only when every case is
 * handled, so a new message or event kind fails the build; at run time (a newer kernel's
 * message) it changes nothing.
 */
function unhandled(_kind: never): Change[] {
  return [];
}

export type ToolStatus =
  'running' | 'awaiting_approval' | 'completed' | 'error' | 'denied' | 'cancelled';

export interface UserItem {
  kind: 'user';
  id: string;
  runId: string;
  text: string;
  source: RunSource;
}

export interface TextItem {
  kind: 'text' | 'reasoning';
  id: string;
  runId: string;
  text: string;
  /** True while deltas may still arrive. */
  streaming: boolean;
  /** True for the run's terminal answer. */
  final: boolean;
  /** Sources the model cited for this text, shown as numbered links under it. */
  citations: Citation[];
}

export interface ImageRef {
  url: string;
}

export interface ToolItem {
  kind: 'tool';
  id: string;
  runId: string;
  toolCallId: string;
  tool: string;
  displayName: string | null;
  args: JSONObject;
  status: ToolStatus;
  startedAt: number | null;
  durationMs: number | null;
  result: string | null;
  isError: boolean;
  images: ImageRef[];
  outputRef: string | null;
  /** A unified diff: from the approval preview, or the diff the result's data carries. */
  diff: string | null;
  summary: string | null;
  /** The notebook edit the call made (its Revert button), from the result's data. */
  editId: string | null;
  /** The background job the call became (it returned; the job goes on), from the result's data. */
  jobId: string | null;
  /** The latest progress or log line a running call reported (an MCP server's). */
  progress: string | null;
}

export interface PermissionItem {
  kind: 'permission';
  id: string;
  runId: string;
  permissionRequestId: string;
  tool: string;
  toolCallId: string | null;
  title: string;
  message: string;
  args: JSONObject;
  rememberRules: string[];
  /** `tool` for a call's approval; otherwise a question a tool relays (an MCP server's). */
  questionKind: 'tool' | 'elicitation' | 'sampling' | 'authorization';
  /** A link to open (URL elicitation, OAuth sign-in). */
  url: string | null;
  /** The flat JSON schema of a form to fill in (elicitation). */
  fields: JSONObject | null;
  /** `null` while the question is open; `expired` when the run ended unanswered. */
  decision: PermissionDecision | 'expired' | null;
  reason: string | null;
}

export interface NoticeItem {
  kind: 'notice';
  id: string;
  runId: string;
  level: 'info' | 'warning' | 'error';
  text: string;
}

/** A background job's card; it is updated in place while the job runs (jobs outlive runs). */
export interface JobItem {
  kind: 'job';
  id: string;
  runId: string;
  job: JobView;
  /** `clock()` when the last update arrived: the view counts elapsed time on from it. */
  receivedAt: number;
}

export type TranscriptItem =
  UserItem | TextItem | ToolItem | PermissionItem | NoticeItem | JobItem;

export interface UsageMeter {
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  /** Sum over model calls; `null` when any call's cost is unknown (never a guess). */
  costUsd: number | null;
  /** Calls answered by the offline demo's scripted server (counted, never priced). */
  demoCalls: number;
  contextLeftPercent: number | null;
  contextLimit: number | null;
}

export interface RunState {
  runId: string;
  sessionId: string | null;
  source: RunSource;
  status: RunStatus;
  message: string | null;
  demo: boolean;
}

export interface KernelInfo {
  sessionId: string | null;
  model: string | null;
  approvalMode: string | null;
  apiKeyConfigured: boolean | null;
}

export type Change =
  | { op: 'add'; item: TranscriptItem }
  | { op: 'update'; item: TranscriptItem }
  | { op: 'remove'; item: TranscriptItem }
  | { op: 'todos'; todos: TodoItem[] }
  | { op: 'usage'; usage: UsageMeter }
  | { op: 'budget'; budget: string }
  | { op: 'run'; run: RunState }
  | { op: 'kernel'; kernel: KernelInfo }
  | { op: 'reset' };

const EMPTY_USAGE: UsageMeter = {
  model: null,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  costUsd: 0,
  demoCalls: 0,
  contextLeftPercent: null,
  contextLimit: null
};

function imagesOf(parts: ContentPart[] | null | undefined): ImageRef[] {
  const images: ImageRef[] = [];
  for (const part of parts ?? []) {
    if (part.type === 'image_url') {
      const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
      if (typeof url === 'string' && url.startsWith('data:image/')) {
        images.push({ url });
      }
    }
  }
  return images;
}

export class Transcript {
  /** Items in display order. */
  readonly items: TranscriptItem[] = [];
  todos: TodoItem[] = [];
  usage: UsageMeter = { ...EMPTY_USAGE };
  /** Spend against the budget limits of the current run and session ('' when none). */
  get budget(): string {
    return this.budgetLine.summary;
  }
  kernel: KernelInfo = {
    sessionId: null,
    model: null,
    approvalMode: null,
    apiKeyConfigured: null
  };
  readonly runs = new Map<string, RunState>();
  /** The run most recently started and not yet finished, if any. */
  activeRunId: string | null = null;

  private readonly byKey = new Map<string, TranscriptItem>();
  private readonly openText = new Map<string, TextItem>();
  private readonly lastSeq = new Map<string, number>();
  private readonly openTools = new Map<string, Set<ToolItem>>();
  private readonly openPermissions = new Map<string, Set<PermissionItem>>();
  private readonly budgetLine = new BudgetLine();
  private counter = 0;

  /** @param clock - milliseconds now; injected so durations are deterministic in tests. */
  constructor(private readonly clock: () => number = () => Date.now()) {}

  /** Build a transcript from a list of messages (a pure function of its input). */
  static from(messages: KernelMessage[], clock?: () => number): Transcript {
    const transcript = new Transcript(clock);
    for (const message of messages) {
      transcript.apply(message);
    }
    return transcript;
  }

  /** Forget everything (another notebook, a new session, a session loaded from history). */
  reset(): Change[] {
    this.items.length = 0;
    this.todos = [];
    this.usage = { ...EMPTY_USAGE };
    this.budgetLine.clear();
    this.runs.clear();
    this.activeRunId = null;
    for (const map of [
      this.byKey,
      this.openText,
      this.lastSeq,
      this.openTools,
      this.openPermissions
    ]) {
      map.clear();
    }
    return [{ op: 'reset' }];
  }

  /** Fold one message into the model; returns what changed (empty when nothing did). */
  apply(message: KernelMessage): Change[] {
    switch (message.type) {
      case 'hello':
        this.kernel = {
          sessionId: message.session_id ?? null,
          model: message.model ?? null,
          approvalMode: message.approval_mode ?? null,
          apiKeyConfigured: message.api_key_configured ?? null
        };
        if (message.active_run) {
          const run = message.active_run;
          return [
            { op: 'kernel', kernel: this.kernel },
            ...this.startRun(run.run_id, run.session_id ?? null, run.prompt, run.source)
          ];
        }
        return [{ op: 'kernel', kernel: this.kernel }];
      case 'run.started': {
        const started = this.startRun(
          message.run_id,
          message.session_id ?? null,
          message.prompt,
          message.source,
          message.demo ?? false
        );
        if (this.kernel.apiKeyConfigured === false) {
          // A run could start, so a key was set after the hello (in a cell, or an offline demo).
          this.kernel = { ...this.kernel, apiKeyConfigured: true };
          return [{ op: 'kernel', kernel: this.kernel }, ...started];
        }
        return started;
      }
      case 'agent.event': {
        const last = this.lastSeq.get(message.run_id);
        if (typeof message.seq === 'number') {
          if (last !== undefined && message.seq <= last) {
            return []; // already applied (history replay overlapping the live stream)
          }
          this.lastSeq.set(message.run_id, message.seq);
        }
        return this.applyEvent(message.run_id, message.event);
      }
      case 'run.status':
        return this.setRunStatus(message.run_id, message.status, message.message ?? null);
      case 'job.updated':
        return this.updateJob(message.job);
      case 'response':
      case 'store.changed':
        return []; // answers and store notices are the connection's, not the transcript's
      default:
        return unhandled(message);
    }
  }

  /** A job's card: added under the active (or latest) run on first sight, then updated. */
  private updateJob(job: JobView): Change[] {
    const key = `job:${job.job_id}`;
    const existing = this.byKey.get(key);
    if (existing && existing.kind === 'job') {
      existing.job = job;
      existing.receivedAt = this.clock();
      return [{ op: 'update', item: existing }];
    }
    const runs = [...this.runs.keys()];
    const runId = this.activeRunId ?? runs[runs.length - 1] ?? '';
    return [
      this.add(key, {
        kind: 'job',
        id: this.nextId('job'),
        runId,
        job,
        receivedAt: this.clock()
      })
    ];
  }

  private nextId(prefix: string): string {
    this.counter += 1;
    return `${prefix}-${this.counter}`;
  }

  private add(key: string | null, item: TranscriptItem): Change {
    this.items.push(item);
    if (key !== null) {
      this.byKey.set(key, item);
    }
    return { op: 'add', item };
  }

  private ensureRun(runId: string): RunState {
    let run = this.runs.get(runId);
    if (!run) {
      run = {
        runId,
        sessionId: null,
        source: 'magic',
        status: 'running',
        message: null,
        demo: false
      };
      this.runs.set(runId, run);
    }
    return run;
  }

  private startRun(
    runId: string,
    sessionId: string | null,
    prompt: string,
    source: RunSource,
    demo = false
  ): Change[] {
    const changes: Change[] = [];
    const known = this.runs.get(runId);
    const run = this.ensureRun(runId);
    run.sessionId = sessionId ?? run.sessionId;
    run.source = source ?? run.source;
    run.demo = run.demo || demo;
    if (!known || !TERMINAL_RUN_STATUSES.has(run.status)) {
      this.activeRunId = runId;
    }
    changes.push({ op: 'run', run: { ...run } });
    changes.push(...this.budgetChange(this.budgetLine.runStarted(runId, run.sessionId)));
    const key = `user:${runId}`;
    if (!this.byKey.has(key)) {
      changes.push(
        this.add(key, {
          kind: 'user',
          id: this.nextId('user'),
          runId,
          text: prompt,
          source
        })
      );
    }
    return changes;
  }

  private setRunStatus(
    runId: string,
    status: RunStatus,
    message: string | null
  ): Change[] {
    const run = this.ensureRun(runId);
    const wasTerminal = TERMINAL_RUN_STATUSES.has(run.status);
    if (wasTerminal && run.status === status) {
      return []; // a replayed run.status and run.end report the same ending
    }
    run.status = status;
    run.message = message;
    const changes: Change[] = [{ op: 'run', run: { ...run } }];
    if (!TERMINAL_RUN_STATUSES.has(status)) {
      if (!wasTerminal) {
        this.activeRunId = runId;
      }
      return changes;
    }
    if (this.activeRunId === runId) {
      this.activeRunId = null;
    }
    changes.push(...this.budgetChange(this.budgetLine.runFinished(runId)));
    changes.push(...this.closeText(runId));
    const toolStatus: ToolStatus = status === 'completed' ? 'completed' : 'cancelled';
    for (const tool of this.openTools.get(runId) ?? []) {
      tool.status = toolStatus;
      changes.push({ op: 'update', item: tool });
    }
    this.openTools.delete(runId);
    for (const permission of this.openPermissions.get(runId) ?? []) {
      permission.decision = 'expired';
      changes.push({ op: 'update', item: permission });
    }
    this.openPermissions.delete(runId);
    if (status === 'cancelled') {
      changes.push(this.notice(runId, 'warning', message ?? 'Stopped.'));
    } else if (status === 'error') {
      changes.push(this.notice(runId, 'error', message ?? 'The run failed.'));
    }
    return changes;
  }

  private budgetChange(summary: string | null): Change[] {
    return summary === null ? [] : [{ op: 'budget', budget: summary }];
  }

  private notice(runId: string, level: NoticeItem['level'], text: string): Change {
    return this.add(null, {
      kind: 'notice',
      id: this.nextId('notice'),
      runId,
      level,
      text
    });
  }

  private closeText(runId: string): Change[] {
    const open = this.openText.get(runId);
    if (!open) {
      return [];
    }
    this.openText.delete(runId);
    open.streaming = false;
    return [{ op: 'update', item: open }];
  }

  /** The streamed text's model call failed and is retried: take the text away. */
  private discardText(runId: string): Change[] {
    const open = this.openText.get(runId);
    if (!open || open.kind !== 'text') {
      return [];
    }
    this.openText.delete(runId);
    const index = this.items.lastIndexOf(open);
    if (index >= 0) {
      this.items.splice(index, 1);
    }
    return [{ op: 'remove', item: open }];
  }

  private streamText(runId: string, kind: TextItem['kind'], delta: string): Change[] {
    const open = this.openText.get(runId);
    if (open && open.kind === kind) {
      open.text += delta;
      return [{ op: 'update', item: open }];
    }
    const changes = this.closeText(runId);
    const item: TextItem = {
      kind,
      id: this.nextId(kind),
      runId,
      text: delta,
      streaming: true,
      final: false,
      citations: []
    };
    this.openText.set(runId, item);
    changes.push(this.add(null, item));
    return changes;
  }

  /** A whole block: it replaces the streamed text of the same kind, or becomes a new item. */
  private wholeText(
    runId: string,
    kind: TextItem['kind'],
    content: string,
    final: boolean,
    citations: Citation[] = []
  ): Change[] {
    const open = this.openText.get(runId);
    if (open && open.kind === kind) {
      this.openText.delete(runId);
      open.text = content;
      open.streaming = false;
      open.final = final;
      open.citations = citations;
      return [{ op: 'update', item: open }];
    }
    const changes = this.closeText(runId);
    if (content.trim() === '') {
      return changes;
    }
    const item: TextItem = {
      kind,
      id: this.nextId(kind),
      runId,
      text: content,
      streaming: false,
      final,
      citations
    };
    changes.push(this.add(null, item));
    return changes;
  }

  private toolKey(runId: string, toolCallId: string): string {
    return `tool:${runId}:${toolCallId}`;
  }

  private ensureTool(runId: string, toolCallId: string, tool: string): Change[] {
    const key = this.toolKey(runId, toolCallId);
    const existing = this.byKey.get(key);
    if (existing) {
      return [];
    }
    const changes = this.closeText(runId);
    const item: ToolItem = {
      kind: 'tool',
      id: this.nextId('tool'),
      runId,
      toolCallId,
      tool,
      displayName: null,
      args: {},
      status: 'running',
      startedAt: this.clock(),
      durationMs: null,
      result: null,
      isError: false,
      images: [],
      outputRef: null,
      diff: null,
      summary: null,
      editId: null,
      jobId: null,
      progress: null
    };
    let open = this.openTools.get(runId);
    if (!open) {
      open = new Set();
      this.openTools.set(runId, open);
    }
    open.add(item);
    changes.push(this.add(key, item));
    return changes;
  }

  private tool(runId: string, toolCallId: string | null | undefined): ToolItem | null {
    if (!toolCallId) {
      return null;
    }
    const item = this.byKey.get(this.toolKey(runId, toolCallId));
    return item && item.kind === 'tool' ? item : null;
  }

  private finishTool(
    item: ToolItem,
    status: ToolStatus,
    durationMs: number | null
  ): void {
    item.status = status;
    if (durationMs !== null) {
      item.durationMs = durationMs;
    } else if (item.durationMs === null && item.startedAt !== null) {
      item.durationMs = Math.max(0, this.clock() - item.startedAt);
    }
    this.openTools.get(item.runId)?.delete(item);
  }

  private applyEvent(runId: string, event: AgentEvent): Change[] {
    this.ensureRun(runId);
    switch (event.type) {
      case 'text_delta':
        return this.streamText(runId, 'text', event.delta);
      case 'reasoning_delta':
        return this.streamText(runId, 'reasoning', event.delta);
      case 'text_discarded':
        return this.discardText(runId);
      case 'text':
        return this.wholeText(runId, 'text', event.content, false, event.citations ?? []);
      case 'reasoning':
        return this.wholeText(runId, 'reasoning', event.content, false);
      case 'final':
        return this.wholeText(runId, 'text', event.content, true, event.citations ?? []);
      case 'step_start':
        return this.ensureTool(runId, event.step_id, event.title);
      case 'tool_call': {
        const changes = this.ensureTool(runId, event.tool_call_id, event.tool);
        const item = this.tool(runId, event.tool_call_id)!;
        item.tool = event.tool;
        item.displayName = event.display_name ?? null;
        item.args = event.args ?? {};
        if (changes.length === 0 || changes[changes.length - 1].op !== 'add') {
          changes.push({ op: 'update', item });
        }
        return changes;
      }
      case 'permission.preview': {
        const item = this.tool(runId, event.tool_call_id);
        if (!item) {
          return [];
        }
        item.diff = event.diff ?? item.diff;
        item.summary = event.summary ?? item.summary;
        return [{ op: 'update', item }];
      }
      case 'permission.ready': {
        const item = this.tool(runId, event.tool_call_id);
        if (!item || item.status !== 'running') {
          return [];
        }
        item.status = 'awaiting_approval';
        return [{ op: 'update', item }];
      }
      case 'permission.request':
        return this.openPermission(runId, event.request_id, {
          tool: event.tool,
          toolCallId: event.tool_call_id ?? null,
          title: event.title,
          message: event.message,
          args: event.args ?? {},
          rememberRules: event.remember_rules ?? [],
          questionKind: event.kind ?? 'tool',
          url: event.url ?? null,
          fields: (event.fields as JSONObject | null | undefined) ?? null
        });
      case 'permission.resolved':
        return this.resolvePermission(
          event.request_id,
          event.decision,
          event.reason ?? null
        );
      case 'tool_result': {
        const changes = this.ensureTool(runId, event.tool_call_id, event.tool);
        const item = this.tool(runId, event.tool_call_id)!;
        item.result = event.result;
        item.isError = event.is_error === true;
        // Parts are content-part JSON (the Python side types them as plain objects).
        item.images = imagesOf(event.parts as ContentPart[] | null | undefined);
        item.outputRef = event.output_ref ?? null;
        // What the card shows comes from the result's typed data, never from its text (the
        // model's); a run log written before the data existed has none.
        const data = event.data ?? {};
        if (data.diff) {
          item.diff = data.diff;
          item.summary = data.summary ?? item.summary;
        }
        item.editId = data.edit_id ?? null;
        item.jobId = data.job_id ?? null;
        const outcome = data.outcome ?? (item.isError ? 'error' : 'completed');
        this.finishTool(
          item,
          outcome === 'denied'
            ? 'denied'
            : outcome === 'completed'
              ? 'completed'
              : 'error',
          null
        );
        changes.push({ op: 'update', item });
        return changes;
      }
      case 'step_complete': {
        const item = this.tool(runId, event.step_id);
        if (!item) {
          return [];
        }
        const status: ToolStatus =
          item.status === 'denied'
            ? 'denied'
            : event.status === 'error'
              ? 'error'
              : 'completed';
        this.finishTool(item, status, event.duration_ms);
        return [{ op: 'update', item }];
      }
      case 'llm.retry':
        return [
          this.notice(
            runId,
            'warning',
            `The model call failed (${event.failure_kind}${event.status ? ` ${event.status}` : ''}); ` +
              `retrying in ${(event.delay_ms / 1000).toFixed(1)} s ` +
              `(attempt ${event.next_attempt} of ${event.max_attempts}).`
          )
        ];
      case 'compaction_complete':
        return event.compacted
          ? [
              this.notice(
                runId,
                'info',
                'Older context was compacted to stay within the limit.'
              )
            ]
          : [];
      case 'session.forked':
        return [
          this.notice(
            runId,
            'warning',
            `Another kernel saved session ${event.forked_from} while this one had it open: ` +
              `this conversation continues as session ${event.session_id}, so neither ` +
              "kernel's turns are lost."
          )
        ];
      case 'usage':
        return this.addUsage(runId, event);
      case 'todos.updated':
        return this.setTodos(event.todos);
      case 'tool.progress': {
        const tool = this.tool(runId, event.tool_call_id);
        if (!tool) {
          return [];
        }
        tool.progress = progressText(event);
        return [{ op: 'update', item: tool }];
      }
      case 'budget': {
        const sessionId = this.runs.get(runId)?.sessionId ?? null;
        const meter: Change = {
          op: 'budget',
          budget: this.budgetLine.update(runId, sessionId, event)
        };
        return event.reached
          ? [
              meter,
              this.notice(
                runId,
                'warning',
                `Budget reached: ${event.reached}. Ending with a summary.`
              )
            ]
          : [meter];
      }
      case 'compaction_start':
        return [];
      default:
        // Every event kind is named above: a new one fails the build until it is handled here.
        return unhandled(event);
    }
  }

  private openPermission(
    runId: string,
    permissionRequestId: string,
    fields: Pick<
      PermissionItem,
      | 'tool'
      | 'toolCallId'
      | 'title'
      | 'message'
      | 'args'
      | 'rememberRules'
      | 'questionKind'
      | 'url'
      | 'fields'
    >
  ): Change[] {
    const key = `permission:${permissionRequestId}`;
    if (this.byKey.has(key)) {
      return []; // sent both as an agent event and as a comm notification
    }
    this.ensureRun(runId);
    const changes = this.closeText(runId);
    const item: PermissionItem = {
      kind: 'permission',
      id: this.nextId('permission'),
      runId,
      permissionRequestId,
      ...fields,
      decision: null,
      reason: null
    };
    let open = this.openPermissions.get(runId);
    if (!open) {
      open = new Set();
      this.openPermissions.set(runId, open);
    }
    open.add(item);
    changes.push(this.add(key, item));
    const tool = this.tool(runId, fields.toolCallId);
    if (tool && tool.status === 'running') {
      tool.status = 'awaiting_approval';
      changes.push({ op: 'update', item: tool });
    }
    return changes;
  }

  /** Record the answer to an approval request (the kernel's event confirms it later). */
  resolvePermission(
    permissionRequestId: string,
    decision: PermissionDecision,
    reason: string | null
  ): Change[] {
    const item = this.byKey.get(`permission:${permissionRequestId}`);
    if (!item || item.kind !== 'permission') {
      return [];
    }
    if (item.decision === decision && item.reason === reason) {
      return [];
    }
    item.decision = decision;
    item.reason = reason;
    this.openPermissions.get(item.runId)?.delete(item);
    const changes: Change[] = [{ op: 'update', item }];
    const tool = this.tool(item.runId, item.toolCallId);
    if (tool && tool.status === 'awaiting_approval') {
      tool.status = decision === 'deny' ? 'denied' : 'running';
      changes.push({ op: 'update', item: tool });
    }
    return changes;
  }

  private setTodos(todos: TodoItem[]): Change[] {
    this.todos = todos.map(todo => ({ ...todo }));
    return [{ op: 'todos', todos: this.todos }];
  }

  private addUsage(
    runId: string,
    event: Extract<AgentEvent, { type: 'usage' }>
  ): Change[] {
    // Each usage event is one model call; its total_* fields are the kernel session's
    // running totals (they span runs), so only the per-call figures are added up.
    const usage = this.usage;
    usage.model = event.model;
    usage.inputTokens += event.input_tokens;
    usage.outputTokens += event.output_tokens;
    usage.cacheReadTokens += event.cache_read_tokens ?? 0;
    if (this.runs.get(runId)?.demo) {
      usage.demoCalls += 1;
    } else if (usage.costUsd !== null && typeof event.cost_usd === 'number') {
      usage.costUsd += event.cost_usd;
    } else {
      usage.costUsd = null;
    }
    usage.contextLeftPercent = event.context_left_percent ?? usage.contextLeftPercent;
    usage.contextLimit = event.context_limit ?? usage.contextLimit;
    return [{ op: 'usage', usage: { ...usage } }];
  }
}

/** A progress event as one line: "3/5 step 3", "40%", or a log line with its level. */
export function progressText(event: {
  progress?: number | null;
  total?: number | null;
  message?: string | null;
  level?: string | null;
}): string {
  if (event.level) {
    return `[${event.level}] ${event.message ?? ''}`.trim();
  }
  const done = event.progress ?? null;
  const count = done === null ? '' : event.total ? `${done}/${event.total}` : `${done}`;
  return [count, event.message ?? ''].filter(part => part !== '').join(' ');
}
