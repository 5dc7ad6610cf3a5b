/**
 * The notebook side of the agent's cell tools (docs/comm-protocol.md "Notebook tools").
 *
 * For every open notebook this registers the `codelia.notebook` comm target on its kernel. The
 * kernel opens that comm when a tool needs the notebook and sends `notebook.request`s on it; the
 * answers go back as `notebook.reply` through `bridge.control()` on a kernel subshell (so they
 * arrive while a blocking `%%codelia` cell holds the main shell) or on the comm when the kernel
 * has no subshells. Edits go to the live shared model, so they show at once, join the notebook's
 * undo history and are saved by the normal save; every agent-made cell carries
 * `metadata.codelia` and shows a badge whose popover has the diff and Revert.
 */

import * as nbformat from '@jupyterlab/nbformat';
import {
  Cell,
  CodeCell,
  ICellModel,
  ICodeCellModel,
  MarkdownCell
} from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { UUID } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';

import { lineDiff } from './celldiff';
import { executeControl, openControlSubshell } from './connection';
import { JSONObject } from './protocol';
import {
  Parked,
  parkWidgetOutputs,
  replaceWidgetOutputs,
  restoreOutputs
} from './staticoutputs';
import { NotebookKernelMessage, NotebookRequest } from './wire';

export const NOTEBOOK_TARGET = 'codelia.notebook';
export const BADGE_CLASS = 'jp-codelia-cell-badge';
export const AGENT_CELL_CLASS = 'jp-codelia-agent-cell';
const FRONTEND_MODULE = 'jupyter_codelia.notebook.frontend';
// Tells the kernel a tab that can answer the cell tools is attached (a reloaded page is greeted
// on a new comm); does nothing in a kernel without jupyter-codelia installed.
const TAB_OPENED =
  `__import__('${FRONTEND_MODULE}', fromlist=['x']).tab_opened() ` +
  "if __import__('importlib.util', fromlist=['x']).find_spec('jupyter_codelia') else None";

/** What the kernel stores in `metadata.codelia` of a cell the agent made or changed. */
export interface Provenance {
  session_id?: string | null;
  run_id?: string | null;
  tool_call_id?: string | null;
  model?: string | null;
  action?: string;
  at?: string;
  prompt?: string;
}

/** One applied agent edit, kept so the person can review and revert it. */
export interface EditRecord {
  edit_id: string;
  op: 'insert' | 'replace' | 'delete' | 'move';
  cell_id: string;
  index: number;
  before: nbformat.ICell | null;
  after_source: string | null;
  from_index?: number;
  provenance: Provenance | null;
  reverted: boolean;
  /** Kept by the person: no longer offered for revert. */
  accepted: boolean;
}

interface RunJob {
  cellId: string;
  done: Promise<void>;
  finished: boolean;
  status: 'running' | 'done' | 'error' | 'skipped' | 'interrupted';
  reported: boolean;
}

class RequestFailed extends Error {}

/** Every open notebook's handler, so the side panel's edit cards can revert an edit. */
const handlers = new Set<NotebookToolsHandler>();

/**
 * A Revert button for a `notebook_edit` tool card (side panel), or null when the result names
 * no edit of a notebook open in this page.
 */
export function revertButton(tool: string, result: string | null): HTMLElement | null {
  if (tool !== 'notebook_edit' || !result || !result.startsWith('{')) {
    return null;
  }
  let editId: unknown;
  try {
    editId = (JSON.parse(result) as JSONObject).edit_id;
  } catch {
    return null;
  }
  const owner = [...handlers].find(h => h.edits.some(e => e.edit_id === editId));
  if (!owner || typeof editId !== 'string') {
    return null;
  }
  const row = document.createElement('div');
  row.className = 'jp-codelia-edit-actions';
  const button = document.createElement('button');
  button.className = 'jp-codelia-edit-revert';
  button.textContent = 'Revert';
  const status = document.createElement('span');
  const reverted = () => owner.edits.find(e => e.edit_id === editId)?.reverted === true;
  button.disabled = reverted();
  status.textContent = reverted() ? 'Reverted.' : '';
  button.addEventListener('click', () => {
    const problem = owner.revert(editId);
    status.textContent = problem ?? 'Reverted.';
    button.disabled = reverted();
  });
  row.append(button, status);
  return row;
}

export class NotebookToolsHandler implements IDisposable {
  constructor(readonly panel: NotebookPanel) {
    handlers.add(this);
    panel.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    panel.context.ready.then(() => this.watchModel()).catch(() => undefined);
    void panel.sessionContext.ready.then(() => this.register(this.kernel));
  }

  readonly clientId = UUID.uuid4();
  readonly edits: EditRecord[] = [];

  get isDisposed(): boolean {
    return this._disposed;
  }

  get kernel(): Kernel.IKernelConnection | null {
    return this.panel.sessionContext.session?.kernel ?? null;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    handlers.delete(this);
    this.panel.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
    void this._subshell?.then(kernel => kernel?.dispose());
  }

  /** Undo one agent edit (no-op when the person changed the cell since). */
  revert(editId: string): string | null {
    const record = this.edits.find(e => e.edit_id === editId);
    if (!record || record.reverted) {
      return 'this edit is unknown or already reverted';
    }
    if (record.accepted) {
      return 'this edit was accepted';
    }
    const shared = this.sharedModel;
    const index = this.indexOf(record.cell_id);
    if (record.op === 'insert') {
      if (index < 0) {
        return 'the inserted cell no longer exists';
      }
      shared.deleteCell(index);
    } else if (record.op === 'replace' && record.before) {
      if (index < 0) {
        return 'the edited cell no longer exists';
      }
      const cell = this.panel.model!.cells.get(index);
      if (cell.sharedModel.getSource() !== record.after_source) {
        return 'the cell changed after the agent edited it; undo by hand';
      }
      shared.transact(() => {
        cell.sharedModel.setSource(nbSource(record.before!.source));
        const old = record.before!.metadata?.codelia;
        if (old) {
          cell.setMetadata('codelia', old);
        } else {
          cell.deleteMetadata('codelia');
        }
      });
    } else if (record.op === 'delete' && record.before) {
      shared.insertCell(
        Math.min(record.index, shared.cells.length),
        record.before as never
      );
    } else if (record.op === 'move' && record.from_index !== undefined && index >= 0) {
      shared.moveCell(index, record.from_index);
    }
    record.reverted = true;
    this.refreshBadges();
    return null;
  }

  /** Revert every edit of one run, newest first; returns how many were undone. */
  revertRun(runId: string): number {
    let count = 0;
    for (const record of [...this.edits].reverse()) {
      if (!record.reverted && !record.accepted && record.provenance?.run_id === runId) {
        if (this.revert(record.edit_id) === null) {
          count++;
        }
      }
    }
    return count;
  }

  /** Keep every edit of one run (no longer offered for revert); returns how many. */
  acceptRun(runId: string): number {
    const open = this.edits.filter(
      e => !e.reverted && !e.accepted && e.provenance?.run_id === runId
    );
    open.forEach(e => (e.accepted = true));
    return open.length;
  }

  // ---------------------------------------------------------------- comm

  private onKernelChanged(): void {
    this._subshell = null;
    this.register(this.kernel);
  }

  private register(kernel: Kernel.IKernelConnection | null): void {
    if (!kernel || this._disposed) {
      return;
    }
    kernel.registerCommTarget(NOTEBOOK_TARGET, (comm, msg) =>
      this.onOpen(kernel, comm, msg)
    );
    void this.announce(kernel);
    // Codelia widget outputs this notebook was saved with: finished or gone ones turn static.
    void this.panel.context.ready
      .then(() => this.panel.sessionContext.ready)
      .then(async () => {
        const model = this.panel.model;
        if (!model) {
          return;
        }
        const parked = this._parked;
        this._parked = new Map();
        const differ = await restoreOutputs(kernel, model.cells, parked);
        if (differ === 0 && parked.size > 0 && !this._dirtyWhenParked) {
          model.dirty = false; // every parked widget came back as it was loaded
        }
      })
      .catch(() => undefined);
  }

  private async announce(kernel: Kernel.IKernelConnection): Promise<void> {
    try {
      const info = await kernel.info;
      if (info.language_info.name !== 'python') {
        return;
      }
      await kernel.requestExecute(
        {
          code: '',
          silent: true,
          store_history: false,
          allow_stdin: false,
          user_expressions: { codelia: TAB_OPENED }
        },
        true
      ).done;
    } catch {
      // the kernel went away meanwhile; the next kernel is announced on its own
    }
  }

  private onOpen(
    kernel: Kernel.IKernelConnection,
    comm: Kernel.IComm,
    msg: KernelMessage.ICommOpenMsg
  ): void {
    comm.onMsg = message => {
      const data = message.content.data as unknown as NotebookKernelMessage;
      if (data && data.type === 'notebook.request') {
        void this.onRequest(kernel, comm, data);
      }
    };
    const hello = msg.content.data as unknown as NotebookKernelMessage;
    if (hello && hello.type === 'output.finished') {
      const cells = this.panel.model?.cells;
      if (cells) {
        replaceWidgetOutputs(cells, hello.model_id, hello.data as JSONObject);
      }
      return;
    }
    if (hello && hello.type === 'hello') {
      void this.reply(kernel, comm, hello.request_id, {
        client_id: this.clientId,
        client: 'jupyterlab',
        path: this.panel.context.path,
        subshells: kernel.supportsSubshells
      });
    }
  }

  private async onRequest(
    kernel: Kernel.IKernelConnection,
    comm: Kernel.IComm,
    data: NotebookRequest
  ): Promise<void> {
    const requestId = data.request_id;
    if (data.client_id && data.client_id !== this.clientId) {
      return; // meant for another tab on the same kernel
    }
    const params = data.params;
    if (data.action === 'ping' && params.via === 'comm') {
      // A plain comm echo: the baseline bench/notebook_tools.py compares requests against.
      comm.send({ type: 'notebook.reply', reply_to: requestId, ok: true, result: {} });
      return;
    }
    try {
      let result: JSONObject;
      if (data.action === 'ping') {
        result = {};
      } else if (data.action === 'revert') {
        const problem = this.revert(String(params.edit_id ?? ''));
        if (problem) {
          throw new RequestFailed(problem);
        }
        result = {};
      } else if (data.action === 'snapshot') {
        result = this.snapshot(params);
      } else if (data.action === 'edit') {
        result = this.edit(params);
      } else if (data.action === 'run') {
        result = await this.run(params);
      } else {
        throw new RequestFailed(`unknown notebook request ${data.action}`);
      }
      await this.reply(kernel, comm, requestId, result);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await this.reply(kernel, comm, requestId, null, message);
    }
  }

  private async reply(
    kernel: Kernel.IKernelConnection,
    comm: Kernel.IComm,
    replyTo: string,
    result: JSONObject | null,
    error?: string
  ): Promise<void> {
    const payload: JSONObject = { type: 'notebook.reply', reply_to: replyTo, ok: !error };
    if (error) {
      payload.error = error;
    } else {
      payload.result = result;
    }
    const subshell = kernel.supportsSubshells ? await this.subshell(kernel) : null;
    try {
      if (subshell) {
        await executeControl(subshell, { ...payload, request_id: UUID.uuid4() });
      } else if (!comm.isDisposed) {
        comm.send(payload as never);
      }
    } catch (failure) {
      // The kernel stopped waiting (timeout, restart): nothing left to answer.
      console.warn('codelia: notebook reply not delivered', failure);
    }
  }

  private subshell(
    kernel: Kernel.IKernelConnection
  ): Promise<Kernel.IKernelConnection | null> {
    if (this._subshell === null || this._subshellFor !== kernel) {
      this._subshellFor = kernel;
      this._subshell = openControlSubshell(kernel);
    }
    return this._subshell;
  }

  // ---------------------------------------------------------------- snapshot

  private get sharedModel() {
    const model = this.panel.model;
    if (!model) {
      throw new RequestFailed('the notebook is not loaded yet');
    }
    return model.sharedModel;
  }

  private indexOf(cellId: string): number {
    const cells = this.panel.model?.cells;
    if (!cells) {
      return -1;
    }
    for (let i = 0; i < cells.length; i++) {
      if (cells.get(i).id === cellId) {
        return i;
      }
    }
    return -1;
  }

  private cellWidget(cellId: string): Cell | null {
    return this.panel.content.widgets.find(w => w.model.id === cellId) ?? null;
  }

  private cellView(model: ICellModel, withOutputs: boolean, index?: number): JSONObject {
    const view: JSONObject = {
      id: model.id,
      cell_type: model.type,
      source: model.sharedModel.getSource()
    };
    if (index !== undefined) {
      view.index = index;
    }
    const provenance = model.getMetadata('codelia');
    view.metadata = provenance ? { codelia: provenance } : {};
    if (model.type === 'code') {
      const code = model as ICodeCellModel;
      view.execution_count = code.executionCount;
      view.running = code.executionState === 'running';
      const types: string[] = [];
      for (let i = 0; i < code.outputs.length; i++) {
        types.push(code.outputs.get(i).type);
      }
      view.output_types = types;
      if (withOutputs) {
        view.outputs = code.outputs.toJSON() as unknown as JSONObject[];
      }
    }
    return view;
  }

  private snapshot(params: JSONObject): JSONObject {
    const model = this.panel.model;
    if (!model) {
      throw new RequestFailed('the notebook is not loaded yet');
    }
    const wanted = params.outputs_for;
    const withOutputs = new Set(Array.isArray(wanted) ? (wanted as string[]) : []);
    const cells: JSONObject[] = [];
    for (let i = 0; i < model.cells.length; i++) {
      const cell = model.cells.get(i);
      cells.push(this.cellView(cell, wanted === 'all' || withOutputs.has(cell.id)));
    }
    const notebook = this.panel.content;
    const active = notebook.activeCell;
    const typing =
      active !== null && notebook.mode === 'edit' && active.editor?.hasFocus();
    return {
      path: this.panel.context.path,
      cells,
      active_cell_id: active?.model.id ?? null,
      editing_cell_id: typing ? active.model.id : null,
      dirty: model.dirty
    };
  }

  // ---------------------------------------------------------------- edit

  private edit(params: JSONObject): JSONObject {
    const shared = this.sharedModel;
    const provenance = (params.provenance ?? null) as Provenance | null;
    const op = params.op as EditRecord['op'];
    const editId = UUID.uuid4();
    const cellId = String(params.cell_id ?? '');
    let index = cellId ? this.indexOf(cellId) : -1;
    if (op !== 'insert' && index < 0) {
      throw new RequestFailed(`no cell with id ${cellId} (it was deleted meanwhile)`);
    }
    const record: EditRecord = {
      edit_id: editId,
      op,
      cell_id: cellId,
      index,
      before: null,
      after_source: null,
      provenance,
      reverted: false,
      accepted: false
    };
    if (op === 'insert') {
      index = Math.min(Number(params.index ?? shared.cells.length), shared.cells.length);
      const type = params.cell_type === 'markdown' ? 'markdown' : 'code';
      const metadata = (
        provenance ? { codelia: provenance } : {}
      ) as nbformat.ICellMetadata;
      const source = String(params.source ?? '');
      const created =
        type === 'code'
          ? shared.insertCell(index, {
              cell_type: 'code',
              source,
              metadata,
              outputs: [],
              execution_count: null
            })
          : shared.insertCell(index, { cell_type: 'markdown', source, metadata });
      record.cell_id = created.getId();
      record.index = index;
      record.after_source = source;
    } else {
      const cell = this.panel.model!.cells.get(index);
      const current = cell.sharedModel.getSource();
      if (op !== 'move' && params.expected_source !== current) {
        throw new RequestFailed(
          `cell #${index} changed since it was read (the user edited it); nothing was ` +
            'changed: read it again'
        );
      }
      if (op !== 'move' && this.isTyping(cellId)) {
        throw new RequestFailed(
          `the user is typing in cell #${index} right now; it was not changed`
        );
      }
      record.before = cell.toJSON();
      if (op === 'replace') {
        const source = String(params.source ?? '');
        shared.transact(() => {
          cell.sharedModel.setSource(source);
          if (provenance) {
            cell.setMetadata('codelia', provenance as never);
          }
        });
        record.after_source = source;
      } else if (op === 'delete') {
        shared.deleteCell(index);
      } else if (op === 'move') {
        const target = Math.min(Number(params.index ?? index), shared.cells.length - 1);
        record.from_index = index;
        shared.moveCell(index, target);
        index = target;
        record.index = target;
      }
    }
    this.edits.push(record);
    this.refreshBadges();
    return { edit_id: editId, cell_id: record.cell_id, index };
  }

  private isTyping(cellId: string): boolean {
    const notebook = this.panel.content;
    const active = notebook.activeCell;
    return (
      active !== null &&
      active.model.id === cellId &&
      notebook.mode === 'edit' &&
      !!active.editor?.hasFocus()
    );
  }

  // ---------------------------------------------------------------- run

  private async run(params: JSONObject): Promise<JSONObject> {
    const ids = (params.cell_ids ?? []) as string[];
    const waitMs = Math.max(0, Number(params.wait_seconds ?? 30)) * 1000;
    const channel = params.channel === 'subshell' ? 'subshell' : 'main';
    for (const id of ids) {
      if (!this.cellWidget(id)) {
        throw new RequestFailed(
          `no cell with id ${id}; call notebook_read() for the ids`
        );
      }
    }
    if (params.interrupt) {
      if (channel === 'subshell') {
        throw new RequestFailed(
          'cannot interrupt: the cells run beside a blocking %%codelia cell and an interrupt ' +
            'would stop that run too; ask the user to press the stop button'
        );
      }
      await this.kernel?.interrupt();
    }
    let previous: Promise<boolean> = Promise.resolve(true);
    const jobs: RunJob[] = [];
    for (const id of ids) {
      let job = this._jobs.get(id);
      if (!job || (job.finished && job.reported)) {
        const after = previous;
        job = {
          cellId: id,
          done: Promise.resolve(),
          finished: false,
          status: 'running',
          reported: false
        };
        const current = job;
        const outcome = after.then(ok =>
          ok ? this.execute(current, channel) : this.skip(current)
        );
        job.done = outcome.then(() => undefined);
        previous = outcome;
        this._jobs.set(id, job);
      } else {
        const current = job;
        previous = job.done.then(() => current.status === 'done');
      }
      jobs.push(job);
    }
    let timer = 0;
    await Promise.race([
      Promise.all(jobs.map(j => j.done)),
      new Promise<void>(resolve => {
        timer = window.setTimeout(resolve, waitMs);
      })
    ]);
    window.clearTimeout(timer);
    const cells: JSONObject[] = [];
    for (const job of jobs) {
      const widget = this.cellWidget(job.cellId);
      if (!widget) {
        continue;
      }
      const view = this.cellView(widget.model, true, this.indexOf(job.cellId));
      view.status = job.finished ? job.status : 'running';
      if (job.finished) {
        job.reported = true;
      }
      cells.push(view);
    }
    return { cells };
  }

  private async skip(job: RunJob): Promise<boolean> {
    job.status = 'skipped';
    job.finished = true;
    return false;
  }

  private async execute(job: RunJob, channel: 'main' | 'subshell'): Promise<boolean> {
    const widget = this.cellWidget(job.cellId);
    try {
      if (widget instanceof MarkdownCell) {
        widget.rendered = true;
        job.status = 'done';
      } else if (widget instanceof CodeCell) {
        const reply =
          channel === 'main'
            ? await CodeCell.execute(widget, this.panel.sessionContext)
            : await this.executeOnSubshell(widget);
        const status = reply ? reply.content.status : 'aborted';
        job.status =
          status === 'ok' ? 'done' : status === 'aborted' ? 'interrupted' : 'error';
      } else {
        job.status = 'done';
      }
    } catch {
      job.status = 'error';
    }
    job.finished = true;
    return job.status === 'done';
  }

  private async executeOnSubshell(
    cell: CodeCell
  ): Promise<KernelMessage.IExecuteReplyMsg | void> {
    const kernel = this.kernel;
    const subshell = kernel ? await this.subshell(kernel) : null;
    if (!subshell) {
      throw new RequestFailed(
        'the kernel has no subshell to run cells beside a busy cell'
      );
    }
    const model = cell.model;
    model.executionCount = null;
    model.executionState = 'running';
    const future = subshell.requestExecute(
      {
        code: model.sharedModel.getSource(),
        silent: false,
        store_history: true,
        allow_stdin: false,
        stop_on_error: true
      },
      false
    );
    cell.outputArea.future = future;
    try {
      const reply = await future.done;
      model.executionCount = reply.content.execution_count;
      return reply;
    } finally {
      model.executionState = 'idle';
    }
  }

  // ---------------------------------------------------------------- badges

  private watchModel(): void {
    const model = this.panel.model;
    if (!model) {
      return;
    }
    this._dirtyWhenParked = model.dirty;
    this._parked = parkWidgetOutputs(model.cells);
    model.contentChanged.connect(() => this.scheduleBadges());
    this.panel.content.modelContentChanged.connect(() => this.scheduleBadges());
    this.scheduleBadges();
  }

  private scheduleBadges(): void {
    if (this._badgeFrame) {
      return;
    }
    this._badgeFrame = window.requestAnimationFrame(() => {
      this._badgeFrame = 0;
      this.refreshBadges();
    });
  }

  /** Mark every cell whose metadata says the agent made or changed it. */
  refreshBadges(): void {
    if (this._disposed) {
      return;
    }
    for (const widget of this.panel.content.widgets) {
      const provenance = widget.model.getMetadata('codelia') as Provenance | undefined;
      const existing = widget.node.querySelector(`:scope > .${BADGE_CLASS}`);
      widget.toggleClass(AGENT_CELL_CLASS, !!provenance);
      if (!provenance) {
        existing?.remove();
        continue;
      }
      const badge = (existing as HTMLElement | null) ?? this.makeBadge(widget);
      badge.title =
        `Edited by the codelia agent (${provenance.action ?? 'edit'}, ${provenance.at ?? ''})\n` +
        `run ${provenance.run_id ?? '?'} · ${provenance.model ?? ''}\n` +
        `prompt: ${provenance.prompt ?? ''}`;
    }
  }

  private makeBadge(widget: Cell): HTMLElement {
    const badge = document.createElement('button');
    badge.className = BADGE_CLASS;
    badge.textContent = 'codelia';
    badge.addEventListener('click', event => {
      event.stopPropagation();
      this.toggleReview(widget);
    });
    widget.node.appendChild(badge);
    return badge;
  }

  /** The diff card of the cell's latest agent edit, with Revert (and Revert run). */
  private toggleReview(widget: Cell): void {
    const open = widget.node.querySelector(':scope > .jp-codelia-edit-card');
    if (open) {
      open.remove();
      return;
    }
    const record = [...this.edits]
      .reverse()
      .find(e => e.cell_id === widget.model.id && !e.reverted && !e.accepted);
    const card = document.createElement('div');
    card.className = 'jp-codelia-edit-card';
    if (!record) {
      card.textContent =
        'Edited by the agent earlier (no edit of this session to revert).';
      widget.node.appendChild(card);
      return;
    }
    const before = record.before ? nbSource(record.before.source) : '';
    const diff = document.createElement('pre');
    for (const line of lineDiff(before, record.after_source ?? '')) {
      const row = document.createElement('div');
      row.className = `jp-codelia-diff-${line.sign === '+' ? 'add' : line.sign === '-' ? 'del' : 'ctx'}`;
      row.textContent = `${line.sign} ${line.text}`;
      diff.appendChild(row);
    }
    card.appendChild(diff);
    const status = document.createElement('span');
    const button = (label: string, action: () => string | null) => {
      const element = document.createElement('button');
      element.textContent = label;
      element.className = 'jp-codelia-edit-revert';
      element.addEventListener('click', event => {
        event.stopPropagation();
        const problem = action();
        status.textContent = problem ?? 'Reverted.';
        if (!problem) {
          card.remove();
        }
      });
      card.appendChild(element);
    };
    button('Revert', () => this.revert(record.edit_id));
    const runId = record.provenance?.run_id;
    if (runId) {
      button('Revert whole run', () =>
        this.revertRun(runId) > 0 ? null : 'nothing left to revert in this run'
      );
      button('Accept run', () => {
        this.acceptRun(runId);
        return null;
      });
    }
    card.appendChild(status);
    widget.node.appendChild(card);
  }

  private _disposed = false;
  /** Codelia widget outputs shown static since the notebook loaded, until the kernel says. */
  private _parked: Parked = new Map();
  private _dirtyWhenParked = false;
  private _subshell: Promise<Kernel.IKernelConnection | null> | null = null;
  private _subshellFor: Kernel.IKernelConnection | null = null;
  private _jobs = new Map<string, RunJob>();
  private _badgeFrame = 0;
}

function nbSource(source: nbformat.MultilineString): string {
  return Array.isArray(source) ? source.join('') : source;
}
