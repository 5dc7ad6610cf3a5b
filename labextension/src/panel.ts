/**
 * The "Codelia" side panel: follows the active notebook, talks to its kernel over the `codelia`
 * comm, and shows the chat (transcript, todos, usage meter, composer), the session picker and the
 * cache browser. All state lives in the `Transcript` model; this widget wires events to it.
 */

import { ISessionContext } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { CacheBrowser } from './cache';
import { CodeliaConnection, ConnectionState } from './connection';
import { button, Disclosure, el, formatTokens } from './dom';
import { SessionHistory } from './history';
import { codeliaIcon } from './icon';
import { keyHelp } from './keyhelp';
import { KernelLiveness, LOST_KERNEL_MESSAGE } from './liveness';
import {
  JSONObject,
  KernelMessage,
  KernelState,
  PermissionDecision,
  RequestFields,
  SessionSummary
} from './protocol';
import { ReplayGate } from './replay';
import { Change, PermissionItem, Transcript, UsageMeter } from './transcript';
import { TranscriptView } from './view';

export const PANEL_ID = 'jp-codelia-panel';
export const BUSY_FALLBACK_MESSAGE =
  'the kernel is busy; Stop will take effect when the current cell finishes';

const STATE_LABELS: { [state in ConnectionState]: string } = {
  'no-kernel': 'no kernel',
  connecting: 'connecting…',
  'loading-extension': 'loading jupyter_codelia…',
  ready: 'connected',
  failed: 'not connected',
  closed: 'disconnected'
};

const TODO_MARKS = { pending: '○', in_progress: '◐', completed: '●' } as const;

export class CodeliaPanel extends Widget {
  readonly transcript: Transcript;
  readonly view: TranscriptView;

  constructor(rendermime: IRenderMimeRegistry) {
    super();
    this.id = PANEL_ID;
    this.addClass('jp-codelia-panel');
    this.title.icon = codeliaIcon;
    this.title.caption = 'Codelia: chat with the agent in this notebook’s kernel';
    this.transcript = new Transcript();
    this.view = new TranscriptView(rendermime, {
      respond: (item, decision, reason, content) =>
        void this.respond(item, decision, reason, content),
      openCacheEntry: refId => {
        this.toggleDrawer(this.cacheDrawer, true);
        void this.cache.open(refId);
      },
      stopJob: jobId => void this.stopJob(jobId)
    });
    this.cache = new CacheBrowser(() => this.connection);
    this.history = new SessionHistory(() => this.connection);
    this.liveness = new KernelLiveness(
      () => this._connection?.kernel ?? null,
      lost => this.renderKernelLost(lost)
    );

    const header = el('div', 'jp-codelia-header');
    const title = el('div', 'jp-codelia-title');
    title.append(el('span', 'jp-codelia-title-text', 'Codelia'), this.kernelLabel);
    this.kernelLabel.className = 'jp-codelia-kernel';
    const tools = el('div', 'jp-codelia-toolbar');
    tools.append(
      button(
        'Sessions',
        'jp-codelia-sessions-button',
        () => this.toggleSessions(),
        'Past sessions'
      ),
      button(
        'New',
        'jp-codelia-new-session',
        () => this.newSession(),
        'Start a new session'
      ),
      button(
        'Cache',
        'jp-codelia-cache-button',
        () => {
          const open = this.toggleDrawer(this.cacheDrawer);
          if (open) {
            void this.cache.refresh();
          }
        },
        'Browse cached tool outputs'
      )
    );
    header.append(title, tools);

    this.sessionsDrawer.className = 'jp-codelia-drawer jp-codelia-sessions';
    this.sessionsDrawer.hidden = true;
    this.cacheDrawer.className = 'jp-codelia-drawer';
    this.cacheDrawer.hidden = true;
    this.cacheDrawer.appendChild(this.cache.node);

    this.todos.className = 'jp-codelia-todos';
    this.todos.hidden = true;
    this.resumeBanner.className = 'jp-codelia-resume';
    this.resumeBanner.hidden = true;

    const composer = el('div', 'jp-codelia-composer');
    this.input.className = 'jp-codelia-input';
    this.input.rows = 3;
    this.input.placeholder =
      'Message Codelia (Enter to send, Shift+Enter for a new line)';
    this.input.setAttribute('aria-label', 'Message Codelia');
    this.input.addEventListener('keydown', event => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        void this.send();
      }
    });
    this.sendButton = button(
      'Send',
      'jp-mod-accept jp-codelia-send',
      () => void this.send()
    );
    this.stopButton = button(
      'Stop',
      'jp-mod-warn jp-codelia-stop',
      () => void this.stop(),
      'Stop the run (Escape)'
    );
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Escape' && this.transcript.activeRunId !== null) {
        event.preventDefault();
        void this.stop();
      }
    });
    this.stopButton.hidden = true;
    const actions = el('div', 'jp-codelia-composer-actions');
    actions.append(this.meter, this.stopButton, this.sendButton);
    this.meter.className = 'jp-codelia-meter';
    this.budgetLine.className = 'jp-codelia-budget';
    this.budgetLine.hidden = true;
    this.statusLine.className = 'jp-codelia-status';
    this.statusLine.setAttribute('role', 'status');
    this.keyNotice.className = 'jp-codelia-key-help';
    this.keyNotice.setAttribute('role', 'status');
    this.keyNotice.hidden = true;
    composer.append(
      this.keyNotice,
      this.input,
      actions,
      this.budgetLine,
      this.statusLine
    );

    this.node.append(
      header,
      this.sessionsDrawer,
      this.cacheDrawer,
      this.todos,
      this.resumeBanner,
      this.view.node,
      composer
    );
    this.renderMeter(this.transcript.usage);
    this.renderHeader();
  }

  /** The connection to the followed notebook's kernel, if any. */
  get connection(): CodeliaConnection | null {
    return this._connection;
  }

  /** Follow another notebook (or none). */
  follow(notebook: NotebookPanel | null): void {
    if (notebook === this.notebook) {
      return;
    }
    if (this.notebook) {
      // A half-typed message belongs to its notebook: it waits there for the person's return.
      this.drafts.set(this.notebook, this.input.value);
    }
    this.detach();
    this.notebook = notebook;
    this.input.value = notebook ? (this.drafts.get(notebook) ?? '') : '';
    this.applyChanges(this.transcript.reset());
    this.resumeSessionId = null;
    this.startNewSession = false;
    this.renderResume();
    if (!notebook) {
      this.renderHeader();
      return;
    }
    const context = notebook.sessionContext;
    context.kernelChanged.connect(this.onKernelChanged, this);
    context.statusChanged.connect(this.onKernelStatus, this);
    context.propertyChanged.connect(this.renderHeader, this);
    notebook.disposed.connect(this.onNotebookDisposed, this);
    void context.ready.then(() => {
      if (this.notebook === notebook) {
        void this.connect(context);
      }
    });
    this.renderHeader();
  }

  /** Fold kernel messages into the model and the view (also used by the benchmark). */
  ingest(message: KernelMessage): void {
    this.applyChanges(this.transcript.apply(message));
  }

  focusInput(): void {
    this.input.focus();
  }

  protected onActivateRequest(): void {
    this.focusInput();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.detach();
    this.view.dispose();
    super.dispose();
  }

  private async connect(context: ISessionContext): Promise<void> {
    this._connection?.dispose();
    this.liveness.reset();
    const connection = new CodeliaConnection(context);
    this._connection = connection;
    this.providerState = null;
    // Live messages wait from the first one (the hello) until the replay of the session is in,
    // so events keep their order and dedupe by seq; a newer connect ends this hold.
    this.releaseHeld();
    const release = this.replayGate.hold();
    this.releaseHeld = release;
    connection.messageReceived.connect((_, message) => this.replayGate.push(message));
    connection.stateChanged.connect(() => this.renderHeader());
    try {
      await connection.connect();
      if (connection.state === 'ready' && connection.hello) {
        this.onKernelMessage(connection.hello);
        await this.loadKernelHistory(connection);
      }
    } finally {
      release();
    }
  }

  /**
   * Show what the kernel's current session already holds. Live messages that arrive meanwhile
   * wait until the replay is in, so events keep their order and dedupe by seq.
   */
  private async loadKernelHistory(connection: CodeliaConnection): Promise<void> {
    const sessionId = connection.hello?.session_id;
    if (!sessionId) {
      return;
    }
    try {
      await this.replayGate.replay(async () => {
        const result = await connection.read('session.transcript', {
          session_id: sessionId
        });
        return result.events;
      });
    } catch (error) {
      this.setStatus(
        `Could not load this session’s history: ${errorText(error)}`,
        'warning'
      );
    }
  }

  private onKernelMessage(message: KernelMessage): void {
    this.ingest(message);
    if (message.type === 'hello' || message.type === 'run.started') {
      this.renderHeader();
    }
  }

  private applyChanges(changes: Change[]): void {
    if (changes.length === 0) {
      return;
    }
    this.view.apply(changes);
    for (const change of changes) {
      if (change.op === 'todos') {
        this.renderTodos();
      } else if (change.op === 'usage') {
        this.renderMeter(change.usage);
      } else if (change.op === 'budget') {
        this.renderBudget(change.budget);
      } else if (change.op === 'run' || change.op === 'reset') {
        this.renderRunState();
      } else if (change.op === 'kernel') {
        this.renderHeader();
      }
    }
    if (changes.some(change => change.op === 'reset')) {
      this.renderTodos();
      this.renderMeter(this.transcript.usage);
      this.renderBudget(this.transcript.budget);
    }
  }

  /** Spend against the run's and the session's budget limits (hidden when none is set). */
  private renderBudget(summary: string): void {
    this.budgetLine.textContent = summary === '' ? '' : `budget: ${summary}`;
    this.budgetLine.hidden = summary === '';
  }

  private async send(): Promise<void> {
    const prompt = this.input.value.trim();
    if (prompt === '') {
      return;
    }
    const connection = this._connection;
    if (!connection || connection.state !== 'ready') {
      this.setStatus(
        this.notebook
          ? `Not connected to the kernel (${connection?.failure ?? STATE_LABELS[connection?.state ?? 'no-kernel']}).`
          : 'Open a notebook first: Codelia runs in its kernel.',
        'error'
      );
      return;
    }
    if (this.transcript.kernel.apiKeyConfigured === false && !(await this.keyIsSet())) {
      this.focusInput();
      return;
    }
    const fields: RequestFields<'run.start'> = { prompt };
    if (this.resumeSessionId) {
      fields.session_id = this.resumeSessionId;
    } else if (this.startNewSession) {
      fields.new_session = true;
    }
    this.sendButton.disabled = true;
    try {
      const result = await connection.request('run.start', fields);
      this.input.value = '';
      this.resumeSessionId = null;
      this.startNewSession = false;
      this.renderResume();
      this.setStatus('', 'info');
      // The kernel also broadcasts run.started; the model keeps one prompt per run.
      this.ingest({
        type: 'run.started',
        run_id: result.run_id,
        session_id: result.session_id ?? null,
        prompt,
        source: 'panel'
      });
    } catch (error) {
      // A missing key is told by the kernel's state, in the help above the box, not as the
      // error's text in red.
      if (await this.keyIsSet()) {
        this.setStatus(`Could not start the run: ${errorText(error)}`, 'error');
      }
    } finally {
      this.renderRunState();
    }
  }

  /**
   * Ask the kernel whether its provider has a key now (one may have been set in a cell since the
   * hello); shows or hides the key help accordingly.
   */
  private async keyIsSet(): Promise<boolean> {
    const connection = this._connection;
    if (!connection) {
      return true;
    }
    try {
      const state: KernelState = await connection.read('state.get');
      this.providerState = state;
      this.ingest({ ...state, type: 'hello' });
      this.renderHeader();
      return state.api_key_configured !== false;
    } catch {
      return true; // the run.start answer will say what is wrong
    }
  }

  private async stop(): Promise<void> {
    const runId = this.transcript.activeRunId;
    const connection = this._connection;
    if (!runId || !connection) {
      return;
    }
    const run = this.transcript.runs.get(runId);
    this.stopButton.disabled = true;
    try {
      const { route, result } = await connection.control('run.cancel', { run_id: runId });
      if (route === 'comm' && connection.kernel?.status === 'busy') {
        this.setStatus(`Stop sent, but ${BUSY_FALLBACK_MESSAGE}.`, 'warning', run);
      } else {
        this.setStatus('Stopping…', 'info');
      }
      // The footer says "Stopping…" only until the run reports its end (renderRunState,
      // which also clears it at once when the end arrived before this answer).
      this.stopPendingFor = runId;
      this.renderRunState();
      await result;
    } catch (error) {
      this.setStatus(`Stop failed: ${errorText(error)}`, 'error', run);
    } finally {
      this.stopButton.disabled = false;
    }
  }

  /** Stop a background job; its card updates when the kernel's job.updated says it ended. */
  private async stopJob(jobId: string): Promise<void> {
    const connection = this._connection;
    if (!connection) {
      this.setStatus('Not connected to the kernel.', 'error');
      return;
    }
    try {
      const { result } = await connection.control('job.stop', { job_id: jobId });
      await result;
    } catch (error) {
      this.setStatus(`Could not stop ${jobId}: ${errorText(error)}`, 'error');
    }
  }

  private async respond(
    item: PermissionItem,
    decision: PermissionDecision,
    reason: string,
    content?: JSONObject
  ): Promise<void> {
    const connection = this._connection;
    const view = this.view.permissionView(item.id);
    if (!connection) {
      view?.showError('Not connected to the kernel.');
      return;
    }
    const fields: RequestFields<'permission.respond'> = {
      permission_request_id: item.permissionRequestId,
      decision
    };
    if (reason !== '') {
      fields.reason = reason;
    }
    if (content !== undefined) {
      fields.content = content;
    }
    try {
      const { route, result } = await connection.control('permission.respond', fields);
      if (route === 'comm' && connection.kernel?.status === 'busy') {
        this.setStatus(
          'The kernel is busy; the answer is delivered when the current cell finishes.',
          'warning'
        );
      }
      await result;
      // Show the answer at once; the kernel's permission.resolved event confirms it.
      this.applyChanges(
        this.transcript.resolvePermission(
          item.permissionRequestId,
          decision,
          reason !== '' ? reason : null
        )
      );
    } catch (error) {
      view?.showError(`Could not send the answer: ${errorText(error)}`);
    }
  }

  private newSession(): void {
    this.applyChanges(this.transcript.reset());
    this.resumeSessionId = null;
    this.startNewSession = true;
    this.renderResume();
    this.toggleDrawer(this.sessionsDrawer, false);
    this.focusInput();
  }

  private toggleSessions(): void {
    if (this.toggleDrawer(this.sessionsDrawer)) {
      void this.renderSessions();
    }
  }

  private toggleDrawer(drawer: HTMLElement, open?: boolean): boolean {
    drawer.hidden = open === undefined ? !drawer.hidden : !open;
    return !drawer.hidden;
  }

  private async renderSessions(): Promise<void> {
    const drawer = this.sessionsDrawer;
    drawer.textContent = '';
    drawer.appendChild(el('div', 'jp-codelia-section-title', 'Sessions'));
    let sessions: SessionSummary[];
    try {
      sessions = await this.history.list();
    } catch (error) {
      drawer.appendChild(
        el('div', 'jp-mod-error', `Could not list sessions: ${errorText(error)}`)
      );
      return;
    }
    if (sessions.length === 0) {
      drawer.appendChild(el('div', 'jp-codelia-muted', 'No past sessions yet.'));
    }
    const list = el('div', 'jp-codelia-session-list');
    list.setAttribute('role', 'listbox');
    for (const session of sessions) {
      const label = session.title || session.last_user_message || session.session_id;
      const row = button('', 'jp-codelia-session', () => void this.resume(session));
      row.setAttribute('role', 'option');
      row.title = label;
      row.dataset.sessionId = session.session_id;
      row.append(
        el('span', 'jp-codelia-session-title', label),
        el(
          'span',
          'jp-codelia-session-meta',
          `${formatWhen(session.updated_at)} · ${session.message_count ?? 0} messages`
        )
      );
      list.appendChild(row);
    }
    drawer.appendChild(list);
  }

  /** Show a past session and continue it with the next message. */
  private async resume(session: SessionSummary): Promise<void> {
    let events: KernelMessage[];
    try {
      events = await this.history.transcript(session.session_id);
    } catch (error) {
      this.setStatus(`Could not load the session: ${errorText(error)}`, 'error');
      return;
    }
    this.applyChanges(this.transcript.reset());
    for (const message of events) {
      this.ingest(message);
    }
    this.resumeSessionId = session.session_id;
    this.startNewSession = false;
    this.renderResume(session);
    this.toggleDrawer(this.sessionsDrawer, false);
    this.focusInput();
  }

  private renderResume(session?: SessionSummary): void {
    const banner = this.resumeBanner;
    if (this.resumeSessionId && session) {
      banner.textContent = `Resuming “${session.title || session.last_user_message || session.session_id}”: your next message continues this session.`;
      banner.hidden = false;
    } else if (this.startNewSession) {
      banner.textContent = 'New session: your next message starts a fresh conversation.';
      banner.hidden = false;
    } else {
      banner.hidden = true;
    }
  }

  private renderHeader(): void {
    const context = this.notebook?.sessionContext;
    if (!context) {
      this.kernelLabel.textContent = 'Open a notebook to chat with its kernel';
      return;
    }
    const state = this._connection?.state ?? 'connecting';
    const failure = state === 'failed' ? `: ${this._connection?.failure ?? ''}` : '';
    const model = this.transcript.kernel.model
      ? ` · ${this.transcript.kernel.model}`
      : '';
    const name = context.path.split('/').pop() || context.name;
    this.kernelLabel.textContent = `${name} · ${context.kernelDisplayName}${model} · ${STATE_LABELS[state]}${failure}`;
    this.kernelLabel.title = `Attached to the kernel of ${context.path}`;
    this.kernelLabel.dataset.state = state;
    this.renderKeyHelp();
  }

  /** Say briefly how to give the kernel a key for its provider, with the rest in Details. */
  private renderKeyHelp(): void {
    const missing = this.transcript.kernel.apiKeyConfigured === false && !!this.notebook;
    const state = this.providerState ?? this._connection?.hello ?? null;
    const help = keyHelp(state?.provider, state?.api_key_env);
    const notice = this.keyNotice;
    notice.hidden = !missing;
    if (!missing || notice.dataset.title === help.title) {
      return;
    }
    notice.dataset.title = help.title;
    notice.textContent = '';
    const code = el('pre', 'jp-codelia-key-code', help.code);
    const details = new Disclosure('jp-codelia-key-details');
    details.header.textContent = 'Details';
    const list = el('ul');
    for (const line of help.details) {
      list.appendChild(el('li', undefined, line));
    }
    details.body.appendChild(list);
    notice.append(
      el('div', 'jp-codelia-key-title', help.title),
      el('div', 'jp-codelia-key-step', help.step),
      code,
      details.node
    );
  }

  private renderRunState(): void {
    const runId = this.transcript.activeRunId;
    const running = runId !== null;
    if (this.stopPendingFor !== null && runId !== this.stopPendingFor) {
      this.stopPendingFor = null;
      this.setStatus('', 'info');
    }
    this.stopButton.hidden = !running;
    this.sendButton.disabled = running;
    this.node.dataset.running = running ? 'true' : 'false';
    if (running) {
      this.liveness.start();
    } else {
      this.liveness.stop();
    }
  }

  /** Say when the kernel stops answering mid-run (see liveness.ts), and when it is back. */
  private renderKernelLost(lost: boolean): void {
    this.node.dataset.kernelLost = lost ? 'true' : 'false';
    if (lost) {
      this.setStatus(LOST_KERNEL_MESSAGE, 'error');
    } else if (this.statusLine.textContent === LOST_KERNEL_MESSAGE) {
      this.setStatus('', 'info');
    }
  }

  private renderTodos(): void {
    const todos = this.transcript.todos;
    this.todos.textContent = '';
    this.todos.hidden = todos.length === 0;
    if (todos.length === 0) {
      return;
    }
    const done = todos.filter(todo => todo.status === 'completed').length;
    const details = el('details');
    details.open = true;
    details.appendChild(
      el('summary', 'jp-codelia-section-title', `Todos (${done}/${todos.length})`)
    );
    const list = el('ul', 'jp-codelia-todo-list');
    for (const todo of todos) {
      const item = el('li', `jp-codelia-todo jp-codelia-todo-${todo.status}`);
      item.append(
        el('span', 'jp-codelia-todo-mark', TODO_MARKS[todo.status] ?? '○'),
        el(
          'span',
          'jp-codelia-todo-text',
          todo.status === 'in_progress' && todo.activeForm
            ? todo.activeForm
            : todo.content
        )
      );
      list.appendChild(item);
    }
    details.appendChild(list);
    this.todos.appendChild(details);
  }

  private renderMeter(usage: UsageMeter): void {
    const priced =
      usage.costUsd === null ? 'cost unknown' : `$${usage.costUsd.toFixed(4)}`;
    const onlyDemo = usage.demoCalls > 0 && usage.costUsd === 0;
    const cost = onlyDemo
      ? 'offline demo · no cost'
      : usage.demoCalls > 0
        ? `${priced} (+ offline demo, no cost)`
        : priced;
    const context =
      usage.contextLeftPercent === null
        ? ''
        : ` · ${usage.contextLeftPercent}% context left`;
    this.meter.textContent = `${formatTokens(usage.inputTokens)} in · ${formatTokens(usage.outputTokens)} out · ${cost}${context}`;
    this.meter.title =
      `Tokens this session: ${usage.inputTokens} input (${usage.cacheReadTokens} from cache), ` +
      `${usage.outputTokens} output` +
      (usage.model ? ` on ${usage.model}` : '');
  }

  private setStatus(
    text: string,
    level: 'info' | 'warning' | 'error',
    run?: { source: string } | undefined
  ): void {
    this.statusLine.textContent = text;
    this.statusLine.dataset.level = level;
    const kernel = this._connection?.kernel;
    if (text !== '' && run?.source === 'magic' && kernel) {
      // A blocking %%codelia run stops through the kernel interrupt.
      this.statusLine.appendChild(
        button(
          'Interrupt the kernel',
          'jp-codelia-interrupt',
          () => void kernel.interrupt(),
          'Stop the running %%codelia cell'
        )
      );
    }
  }

  private detach(): void {
    const context = this.notebook?.sessionContext;
    if (context) {
      context.kernelChanged.disconnect(this.onKernelChanged, this);
      context.statusChanged.disconnect(this.onKernelStatus, this);
      context.propertyChanged.disconnect(this.renderHeader, this);
    }
    this.notebook?.disposed.disconnect(this.onNotebookDisposed, this);
    this._connection?.dispose();
    this._connection = null;
    this.liveness.reset();
  }

  private onNotebookDisposed(): void {
    this.follow(null);
  }

  private onKernelChanged(context: ISessionContext): void {
    this.applyChanges(this.transcript.reset());
    void this.connect(context);
  }

  private onKernelStatus(context: ISessionContext, status: string): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this.restarting = true;
      this.renderHeader();
    } else if (this.restarting && status === 'idle') {
      this.restarting = false;
      this.applyChanges(this.transcript.reset());
      void this.connect(context);
    }
  }

  private notebook: NotebookPanel | null = null;
  private _connection: CodeliaConnection | null = null;
  private readonly replayGate = new ReplayGate<KernelMessage>(message =>
    this.onKernelMessage(message)
  );
  private releaseHeld: () => void = () => undefined;
  /** Half-typed messages of the notebooks the panel followed before. */
  private readonly drafts = new WeakMap<NotebookPanel, string>();
  /** The kernel's latest state.get answer (provider, key), newer than its hello. */
  private providerState: KernelState | null = null;
  private readonly keyNotice = el('div');
  private resumeSessionId: string | null = null;
  private startNewSession = false;
  private restarting = false;
  private stopPendingFor: string | null = null;
  private readonly cache: CacheBrowser;
  private readonly history: SessionHistory;
  private readonly liveness: KernelLiveness;
  private readonly kernelLabel = el('span');
  private readonly sessionsDrawer = el('div');
  private readonly cacheDrawer = el('div');
  private readonly todos = el('div');
  private readonly resumeBanner = el('div');
  private readonly input = el('textarea');
  private readonly meter = el('span');
  private readonly budgetLine = el('div');
  private readonly statusLine = el('div');
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function formatWhen(iso: string | null): string {
  if (!iso) {
    return 'unknown time';
  }
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}
