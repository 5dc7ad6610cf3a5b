/**
 * The transcript view: turns `Change`s from the transcript model into DOM, one node per item.
 * Adding an item appends one node and updating an item touches only that item's node, so the
 * cost of an event does not grow with the length of the conversation. Markdown goes through
 * JupyterLab's own rendermime markdown renderer (untrusted, so it is sanitised).
 */

import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { argBlocks, fencedCode } from './args';
import { button, Disclosure, el, formatDuration, renderDiff } from './dom';
import { Citation, JSONObject, PermissionDecision } from './protocol';
import { revertButton } from './review';
import {
  Change,
  JobItem,
  NoticeItem,
  PermissionItem,
  TextItem,
  ToolItem,
  ToolStatus,
  TranscriptItem,
  UserItem
} from './transcript';

/** What the view asks its owner to do (answers reach the kernel through the connection). */
export interface TranscriptActions {
  respond(
    item: PermissionItem,
    decision: PermissionDecision,
    reason: string,
    content?: JSONObject
  ): void;
  openCacheEntry(refId: string): void;
  stopJob(jobId: string): void;
}

/** Streaming markdown is re-rendered at most this often per item. */
const MARKDOWN_THROTTLE_MS = 80;
/** Longer results are cut in the card (the whole output stays in the cache browser). */
const RESULT_DISPLAY_CHARS = 20_000;
/**
 * Items are appended into blocks of this many. The browser then lays out and checks visibility
 * of a few dozen blocks rather than every item, so one append costs the same at 100 and at
 * 10,000 items (see bench/sidepanel.py).
 */
const ITEMS_PER_BLOCK = 40;
/** Blocks are grouped into sections of this many (1,000 items), for the same reason. */
const BLOCKS_PER_SECTION = 25;
/** Keep following the bottom when the reader is this close to it. */
const STICK_TO_BOTTOM_PX = 48;

const STATUS_LABELS: { [status in ToolStatus]: string } = {
  running: 'running',
  awaiting_approval: 'waiting for approval',
  completed: 'done',
  error: 'error',
  denied: 'denied',
  cancelled: 'stopped'
};

interface ItemView {
  readonly node: HTMLElement;
  update(item: TranscriptItem): void;
  dispose(): void;
}

class UserView implements ItemView {
  readonly node: HTMLElement;
  constructor(item: UserItem) {
    this.node = el('div', 'jp-codelia-item jp-codelia-user');
    if (item.source === 'magic') {
      this.node.appendChild(el('span', 'jp-codelia-badge', '%%codelia'));
    }
    this.node.appendChild(el('div', 'jp-codelia-user-text', item.text));
  }
  update(): void {
    // prompts never change
  }
  dispose(): void {}
}

class MarkdownView implements ItemView {
  readonly node: HTMLElement;
  private renderer: IRenderMime.IRenderer;
  private timer: number | null = null;
  private rendered = '';
  private latest: TextItem;
  private sources: HTMLElement | null = null;

  constructor(item: TextItem, rendermime: IRenderMimeRegistry) {
    this.latest = item;
    const classes =
      item.kind === 'reasoning'
        ? 'jp-codelia-item jp-codelia-reasoning'
        : 'jp-codelia-item jp-codelia-assistant';
    this.node = el('div', classes);
    this.renderer = rendermime.createRenderer('text/markdown');
    if (item.kind === 'reasoning') {
      const thinking = new Disclosure('jp-codelia-thinking');
      thinking.header.textContent = 'Thinking';
      thinking.body.appendChild(this.renderer.node);
      this.node.appendChild(thinking.node);
    } else {
      this.node.appendChild(this.renderer.node);
    }
    this.update(item);
  }

  update(item: TranscriptItem): void {
    this.latest = item as TextItem;
    this.node.classList.toggle('jp-codelia-streaming', this.latest.streaming);
    this.node.classList.toggle('jp-codelia-final', this.latest.final);
    this.showCitations(this.latest.citations);
    if (!this.latest.streaming) {
      this.flush();
    } else if (this.timer === null) {
      this.timer = window.setTimeout(() => this.flush(), MARKDOWN_THROTTLE_MS);
    }
  }

  /** Numbered links under the text; only http(s) URLs become links. */
  private showCitations(citations: Citation[]): void {
    this.sources?.remove();
    this.sources = null;
    if (citations.length === 0) {
      return;
    }
    const list = el('div', 'jp-codelia-citations');
    citations.forEach((citation, index) => {
      const row = el('div', undefined, `[${index + 1}] `);
      const url = citation.url ?? '';
      const label = citation.title || url || 'source';
      const safe = url.startsWith('https://') || url.startsWith('http://');
      const link = safe ? el('a', undefined, label) : el('span', undefined, label);
      if (link instanceof HTMLAnchorElement) {
        link.href = url;
        link.target = '_blank';
        link.rel = 'noopener noreferrer';
      }
      if (citation.cited_text) {
        link.title = citation.cited_text;
      }
      row.appendChild(link);
      list.appendChild(row);
    });
    this.sources = list;
    this.node.appendChild(list);
  }

  private flush(): void {
    if (this.timer !== null) {
      window.clearTimeout(this.timer);
      this.timer = null;
    }
    const text = this.latest.text;
    if (text === this.rendered) {
      return;
    }
    this.rendered = text;
    const model = new MimeModel({ data: { 'text/markdown': text }, trusted: false });
    void this.renderer.renderModel(model);
  }

  dispose(): void {
    if (this.timer !== null) {
      window.clearTimeout(this.timer);
    }
    this.renderer.dispose();
  }
}

/**
 * A call's arguments, readable: code blocks go through the markdown renderer, which colours
 * them like notebook code. The renderers made are pushed to `renderers` for disposal.
 */
function renderArgs(
  args: { [name: string]: unknown },
  rendermime: IRenderMimeRegistry,
  renderers: IRenderMime.IRenderer[],
  diffShown = false
): HTMLElement {
  const node = el('div', 'jp-codelia-args');
  for (const block of argBlocks(args, diffShown)) {
    if (block.kind === 'field') {
      const row = el('div', 'jp-codelia-arg');
      row.appendChild(el('span', 'jp-codelia-arg-name', block.label));
      row.appendChild(
        block.value.includes('\n')
          ? el('pre', 'jp-codelia-arg-value', block.value)
          : el('code', 'jp-codelia-arg-value', block.value)
      );
      node.appendChild(row);
    } else if (block.kind === 'diff') {
      node.appendChild(renderDiff(block.diff));
    } else {
      const renderer = rendermime.createRenderer('text/markdown');
      renderer.addClass('jp-codelia-code');
      renderers.push(renderer);
      void renderer.renderModel(
        new MimeModel({
          data: { 'text/markdown': fencedCode(block.code, block.language) },
          trusted: false
        })
      );
      node.appendChild(renderer.node);
    }
  }
  return node;
}

function disposeAll(renderers: IRenderMime.IRenderer[]): void {
  for (const renderer of renderers.splice(0)) {
    renderer.dispose();
  }
}

class ToolView implements ItemView {
  readonly node: HTMLElement;
  private readonly card: Disclosure;
  private readonly status: HTMLElement;
  private readonly duration: HTMLElement;
  private readonly name: HTMLElement;
  private readonly body: HTMLElement;
  private item: ToolItem;
  /** Whether the body shows the latest item (it is built only while the card is open). */
  private bodyCurrent = false;
  private readonly renderers: IRenderMime.IRenderer[] = [];

  constructor(
    item: ToolItem,
    private readonly actions: TranscriptActions,
    private readonly rendermime: IRenderMimeRegistry
  ) {
    this.item = item;
    this.card = new Disclosure('jp-codelia-item jp-codelia-tool', () =>
      this.renderBody()
    );
    this.node = this.card.node;
    this.status = el('span', 'jp-codelia-tool-status');
    this.name = el('span', 'jp-codelia-tool-name');
    this.duration = el('span', 'jp-codelia-tool-duration');
    this.card.header.classList.add('jp-codelia-tool-header');
    this.card.header.append(this.status, this.name, this.duration);
    this.body = this.card.body;
    this.body.classList.add('jp-codelia-tool-body');
    this.update(item);
  }

  update(value: TranscriptItem): void {
    const item = value as ToolItem;
    this.item = item;
    this.bodyCurrent = false;
    this.node.dataset.status = item.status;
    this.status.textContent = STATUS_LABELS[item.status];
    this.name.textContent = item.displayName ?? item.tool;
    this.name.title = this.name.textContent; // the header cuts long names
    if (item.jobId) {
      // The call returned but its work goes on: the job's own card follows it.
      this.name.textContent += ` → background job ${item.jobId}`;
    }
    // While it runs, the latest progress or log line the call reported stands in the header.
    this.duration.textContent =
      item.durationMs !== null ? formatDuration(item.durationMs) : (item.progress ?? '');
    // Cards that need attention open themselves; finished ones stay as the reader left them.
    if (
      item.status === 'awaiting_approval' ||
      item.status === 'error' ||
      item.diff ||
      item.images.length > 0
    ) {
      this.card.open = true;
    }
    this.renderBody();
  }

  /**
   * Build the body (arguments, diff, images, result) only while the card is open: a long
   * conversation holds hundreds of closed cards, and their DOM would cost memory and GC time.
   */
  private renderBody(): void {
    if (!this.card.open || this.bodyCurrent) {
      return;
    }
    this.bodyCurrent = true;
    const item = this.item;
    const body = this.body;
    body.textContent = '';
    disposeAll(this.renderers);
    if (Object.keys(item.args).length > 0) {
      body.appendChild(el('div', 'jp-codelia-label', 'Arguments'));
      body.appendChild(
        renderArgs(item.args, this.rendermime, this.renderers, item.diff !== null)
      );
    }
    if (item.summary) {
      body.appendChild(el('div', 'jp-codelia-tool-summary', item.summary));
    }
    if (item.diff) {
      body.appendChild(renderDiff(item.diff));
      const revert = revertButton(item.editId);
      if (revert) {
        body.appendChild(revert);
      }
    }
    for (const image of item.images) {
      const img = el('img', 'jp-codelia-image');
      img.src = image.url;
      img.alt = `image returned by ${item.tool}`;
      body.appendChild(img);
    }
    if (item.result !== null && !item.diff) {
      const result = new Disclosure('jp-codelia-result');
      result.open = item.isError;
      const clipped = item.result.length > RESULT_DISPLAY_CHARS;
      result.header.textContent = `${item.isError ? 'Error' : 'Result'} (${item.result.length.toLocaleString()} chars)`;
      result.body.appendChild(
        el(
          'pre',
          item.isError ? 'jp-codelia-result-text jp-mod-error' : 'jp-codelia-result-text',
          clipped ? item.result.slice(0, RESULT_DISPLAY_CHARS) + '\n…' : item.result
        )
      );
      body.appendChild(result.node);
    }
    if (item.outputRef) {
      const ref = item.outputRef;
      body.appendChild(
        button(
          `Open ${ref} in the cache browser`,
          'jp-codelia-link',
          () => this.actions.openCacheEntry(ref),
          'Browse the full output of this tool call'
        )
      );
    }
  }

  dispose(): void {
    disposeAll(this.renderers);
  }
}

const DECISION_LABELS: { [decision: string]: string } = {
  allow: 'Allowed',
  allow_remember: 'Always allowed',
  deny: 'Denied',
  expired: 'Not answered (the run ended)'
};

class PermissionView implements ItemView {
  readonly node: HTMLElement;
  private readonly controls: HTMLElement;
  private readonly outcome: HTMLElement;
  /** What the request showed (message, code, diff): folded away once it is answered. */
  private readonly details: HTMLElement[] = [];
  private readonly reason: HTMLTextAreaElement;
  private readonly inputs = new Map<string, HTMLInputElement>();
  private item: PermissionItem;
  private readonly renderers: IRenderMime.IRenderer[] = [];

  constructor(
    item: PermissionItem,
    private readonly actions: TranscriptActions,
    rendermime: IRenderMimeRegistry
  ) {
    this.item = item;
    this.node = el('div', 'jp-codelia-item jp-codelia-permission');
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', item.title);
    this.node.appendChild(el('div', 'jp-codelia-permission-title', item.title));
    const message = el('pre', 'jp-codelia-permission-message', item.message);
    this.node.appendChild(message);
    const question = item.questionKind !== 'tool';
    if (!question) {
      // What will run, readable: the code, the command, the path and its diff, the URL.
      const args = renderArgs(item.args, rendermime, this.renderers);
      this.node.appendChild(args);
      // Answered, the tool card above shows all of it: the card keeps its title and outcome.
      this.details.push(message, args);
    }
    if (item.url) {
      const link = el('a', 'jp-codelia-permission-link', item.url) as HTMLAnchorElement;
      link.href = item.url;
      link.target = '_blank';
      link.rel = 'noopener noreferrer';
      this.node.appendChild(link);
    }
    this.controls = el('div', 'jp-codelia-permission-controls');
    // A form an MCP server asks the person to fill in: one labelled input per field.
    const properties = (item.fields?.properties ?? {}) as JSONObject;
    for (const [name, spec] of Object.entries(properties)) {
      const field = (spec ?? {}) as JSONObject;
      const label = el('label', 'jp-codelia-permission-field');
      label.appendChild(el('span', '', String(field.title ?? name)));
      const input = document.createElement('input');
      input.name = name;
      input.placeholder = String(field.description ?? field.type ?? '');
      if (field.default !== undefined && field.default !== null) {
        input.value = String(field.default);
      }
      this.inputs.set(name, input);
      label.appendChild(input);
      this.controls.appendChild(label);
    }
    this.reason = el('textarea', 'jp-codelia-permission-reason');
    this.reason.rows = 1;
    this.reason.placeholder = question
      ? 'Reason for declining (optional)'
      : 'Reason for denying (optional, the agent sees it)';
    const allow = button(
      question ? 'Accept' : 'Allow',
      'jp-mod-accept jp-codelia-allow',
      () => this.answer('allow')
    );
    const always = button(
      'Always allow',
      'jp-codelia-allow-remember',
      () => this.answer('allow_remember'),
      item.rememberRules.length > 0
        ? `Remember: ${item.rememberRules.join(', ')}`
        : 'Do not ask again for this tool'
    );
    const deny = button(
      question ? 'Decline' : 'Deny',
      'jp-mod-reject jp-codelia-deny',
      () => this.answer('deny')
    );
    if (question) {
      this.controls.append(allow, deny, this.reason);
    } else {
      this.controls.append(allow, always, deny, this.reason);
    }
    this.outcome = el('div', 'jp-codelia-permission-outcome');
    this.node.append(this.controls, this.outcome);
    this.update(item);
  }

  private answer(decision: PermissionDecision): void {
    for (const node of Array.from(this.controls.querySelectorAll('button'))) {
      node.disabled = true;
    }
    this.outcome.textContent = 'Sending…';
    const content: JSONObject = {};
    for (const [name, input] of this.inputs) {
      if (input.value !== '') {
        content[name] = input.value;
      }
    }
    this.actions.respond(
      this.item,
      decision,
      this.reason.value.trim(),
      this.inputs.size > 0 ? content : undefined
    );
  }

  /** Called by the panel when sending the answer failed, so the person can try again. */
  showError(message: string): void {
    for (const node of Array.from(this.controls.querySelectorAll('button'))) {
      node.disabled = false;
    }
    this.outcome.textContent = message;
    this.outcome.classList.add('jp-mod-error');
  }

  update(value: TranscriptItem): void {
    this.item = value as PermissionItem;
    const decided = this.item.decision !== null;
    this.node.dataset.decision = this.item.decision ?? 'pending';
    this.controls.hidden = decided;
    for (const node of this.details) {
      node.hidden = decided;
    }
    if (decided) {
      const label =
        DECISION_LABELS[this.item.decision ?? ''] ?? String(this.item.decision);
      this.outcome.textContent = this.item.reason
        ? `${label}: ${this.item.reason}`
        : label;
      this.outcome.classList.remove('jp-mod-error');
    }
  }

  dispose(): void {
    disposeAll(this.renderers);
  }
}

class NoticeView implements ItemView {
  readonly node: HTMLElement;
  constructor(item: NoticeItem) {
    this.node = el(
      'div',
      `jp-codelia-item jp-codelia-notice jp-codelia-notice-${item.level}`
    );
    this.node.setAttribute('role', item.level === 'error' ? 'alert' : 'status');
    this.node.textContent = item.text;
  }
  update(): void {}
  dispose(): void {}
}

/** A background job: state, elapsed time (counted on locally), progress, last lines, Stop. */
class JobCardView implements ItemView {
  readonly node: HTMLElement;
  private readonly header: HTMLElement;
  private readonly progress: HTMLProgressElement;
  private readonly lines: HTMLElement;
  private readonly stop: HTMLButtonElement;
  private item: JobItem;
  private timer: number | null = null;

  constructor(item: JobItem, actions: TranscriptActions) {
    this.item = item;
    this.node = el('div', 'jp-codelia-item jp-codelia-job');
    this.header = el('div', 'jp-codelia-job-header');
    this.progress = el('progress', 'jp-codelia-job-progress');
    this.progress.max = 100;
    this.lines = el('pre', 'jp-codelia-job-lines');
    this.stop = button(
      'Stop',
      'jp-codelia-job-stop',
      () => {
        this.stop.disabled = true;
        actions.stopJob(this.item.job.job_id);
      },
      'Stop this background job'
    );
    this.node.append(this.header, this.progress, this.lines, this.stop);
    this.update(item);
  }

  update(item: TranscriptItem): void {
    if (item.kind !== 'job') {
      return;
    }
    this.item = item;
    const job = item.job;
    const running = job.state === 'running';
    this.node.dataset.state = job.state;
    this.renderHeader();
    const progress = job.progress ?? null;
    this.progress.hidden = progress === null;
    if (progress !== null) {
      this.progress.value = progress.percent;
      this.progress.title = `${progress.done}/${progress.total}`;
    }
    this.lines.textContent = job.last_lines.join('\n');
    this.stop.hidden = !running;
    if (running && this.timer === null) {
      this.timer = window.setInterval(() => this.renderHeader(), 1000);
    } else if (!running) {
      this.clearTimer();
    }
  }

  private renderHeader(): void {
    const job = this.item.job;
    const live = job.state === 'running' ? (Date.now() - this.item.receivedAt) / 1000 : 0;
    const elapsed = formatDuration(
      Math.round((job.elapsed_s + Math.max(0, live)) * 1000)
    );
    const summary = job.summary ? ` · ${job.summary}` : '';
    this.header.textContent = `⚙ ${job.job_id} [${job.kind}] ${job.title} · ${job.state} · ${elapsed}${summary}`;
  }

  private clearTimer(): void {
    if (this.timer !== null) {
      window.clearInterval(this.timer);
      this.timer = null;
    }
  }

  dispose(): void {
    this.clearTimer();
  }
}

export class TranscriptView {
  readonly node: HTMLElement;
  private readonly views = new Map<string, ItemView>();
  private readonly blocks: HTMLElement[] = [];
  private readonly sections: HTMLElement[] = [];
  private readonly empty: HTMLElement;
  /** Whether the reader is at the bottom (kept by scroll events, read without layout). */
  private following = true;
  private followFrame: number | null = null;
  /** The next scroll event is ours (a jump to the bottom), not the reader's. */
  private ownScroll = false;
  /**
   * Content that grows after it was added (markdown renders asynchronously, off-screen blocks
   * get their real height when laid out) and a panel that was hidden or resized: while the
   * reader follows, each of these keeps the newest item in view.
   */
  private readonly resizes = new ResizeObserver(() => this.scheduleFollow());

  constructor(
    private readonly rendermime: IRenderMimeRegistry,
    private readonly actions: TranscriptActions
  ) {
    this.node = el('div', 'jp-codelia-transcript');
    this.node.setAttribute('role', 'log');
    this.node.setAttribute('aria-live', 'polite');
    this.node.tabIndex = 0;
    this.empty = el(
      'div',
      'jp-codelia-empty',
      'Ask Codelia about your notebook, data or files. It runs in this notebook’s kernel.'
    );
    this.node.appendChild(this.empty);
    this.node.addEventListener('scroll', () => this.onScroll(), { passive: true });
    this.resizes.observe(this.node);
  }

  /** Number of items shown. */
  get size(): number {
    return this.views.size;
  }

  permissionView(itemId: string): PermissionView | null {
    const view = this.views.get(itemId);
    return view instanceof PermissionView ? view : null;
  }

  apply(changes: Change[]): void {
    if (changes.length === 0) {
      return;
    }
    for (const change of changes) {
      if (change.op === 'reset') {
        this.clear();
      } else if (change.op === 'add') {
        const view = this.create(change.item);
        this.views.set(change.item.id, view);
        this.block().appendChild(view.node);
        this.empty.hidden = true;
      } else if (change.op === 'update') {
        this.views.get(change.item.id)?.update(change.item);
      } else if (change.op === 'remove') {
        const view = this.views.get(change.item.id);
        if (view) {
          view.node.remove();
          view.dispose();
          this.views.delete(change.item.id);
        }
      }
    }
    this.scheduleFollow();
  }

  /**
   * Keep the newest item in view if the reader was at the bottom. Measured once per frame, not
   * per change: reading scroll sizes forces a layout, which would make every append cost a
   * full layout of the transcript.
   */
  private scheduleFollow(): void {
    if (!this.following || this.followFrame !== null) {
      return;
    }
    this.followFrame = requestAnimationFrame(() => {
      this.followFrame = null;
      if (this.following) {
        const before = this.node.scrollTop;
        this.node.scrollTop = this.node.scrollHeight;
        this.ownScroll = this.node.scrollTop !== before;
      }
    });
  }

  private onScroll(): void {
    if (this.followFrame !== null) {
      return; // our own scroll to the bottom is pending
    }
    if (this.ownScroll) {
      // Our jump: content that grew meanwhile must not read as the reader scrolling up.
      this.ownScroll = false;
      return;
    }
    this.following =
      this.node.scrollHeight - this.node.scrollTop - this.node.clientHeight <
      STICK_TO_BOTTOM_PX;
  }

  clear(): void {
    for (const view of this.views.values()) {
      view.dispose();
    }
    this.views.clear();
    for (const section of this.sections) {
      this.resizes.unobserve(section);
      section.remove();
    }
    this.sections.length = 0;
    this.blocks.length = 0;
    this.empty.hidden = false;
    this.following = true;
  }

  /** The block the next item goes into. */
  private block(): HTMLElement {
    const last = this.blocks[this.blocks.length - 1];
    if (last && last.childElementCount < ITEMS_PER_BLOCK) {
      return last;
    }
    const block = el('div', 'jp-codelia-block');
    this.blocks.push(block);
    this.section().appendChild(block);
    return block;
  }

  /**
   * The section the next block goes into. Blocks are grouped again so that no container holds
   * more than a few dozen children: an append then lays out one block, one section and the few
   * sections of the transcript, whatever its length.
   */
  private section(): HTMLElement {
    const last = this.sections[this.sections.length - 1];
    if (last && last.childElementCount < BLOCKS_PER_SECTION) {
      return last;
    }
    const section = el('div', 'jp-codelia-section');
    this.sections.push(section);
    this.node.appendChild(section);
    this.resizes.observe(section);
    return section;
  }

  dispose(): void {
    if (this.followFrame !== null) {
      cancelAnimationFrame(this.followFrame);
    }
    this.clear();
    this.resizes.disconnect();
  }

  private create(item: TranscriptItem): ItemView {
    switch (item.kind) {
      case 'user':
        return new UserView(item);
      case 'text':
      case 'reasoning':
        return new MarkdownView(item, this.rendermime);
      case 'tool':
        return new ToolView(item, this.actions, this.rendermime);
      case 'permission':
        return new PermissionView(item, this.actions, this.rendermime);
      case 'notice':
        return new NoticeView(item);
      case 'job':
        return new JobCardView(item, this.actions);
    }
  }
}
