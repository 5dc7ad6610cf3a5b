/**
 * The notebook side of the agent's cell tools, for one open notebook: the comm the kernel asks
 * on (`notebookcomm.ts`), the edits and runs it asks for (`notebookactions.ts`) and the review
 * of what the agent changed, badges and cards on the cells (`review.ts`). This module joins
 * them to the notebook's panel: its shared model, its cell widgets and its kernel.
 */

import { Cell, CodeCell, MarkdownCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { UUID } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';

import {
  CellExecutor,
  CellRunner,
  NotebookActions,
  RequestFailed,
  RunChannel,
  RunStatus
} from './notebookactions';
import { NotebookComm } from './notebookcomm';
import { JSONObject } from './protocol';
import { ReviewBadges } from './review';
import {
  Parked,
  parkWidgetOutputs,
  replaceWidgetOutputs,
  restoreOutputs
} from './staticoutputs';

export class NotebookToolsHandler implements IDisposable {
  constructor(readonly panel: NotebookPanel) {
    this.actions = new NotebookActions(
      () => panel.model?.sharedModel ?? null,
      () => UUID.uuid4()
    );
    this.runner = new CellRunner(this.executor());
    this.badges = new ReviewBadges(() => panel.content.widgets, this.actions);
    this.comm = new NotebookComm({
      path: () => panel.context.path,
      serve: (action, params) => this.serve(action, params),
      outputFinished: (modelId, data) => {
        const cells = panel.model?.cells;
        if (cells) {
          replaceWidgetOutputs(cells, modelId, data);
        }
      }
    });
    panel.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    panel.context.ready.then(() => this.watchModel()).catch(() => undefined);
    void panel.sessionContext.ready.then(() => this.attach(this.kernel));
  }

  readonly actions: NotebookActions;

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
    this.actions.dispose();
    this.comm.dispose();
    this.panel.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
  }

  private onKernelChanged(): void {
    this.attach(this.kernel);
  }

  private attach(kernel: Kernel.IKernelConnection | null): void {
    this.comm.attach(kernel);
    if (kernel) {
      void this.restoreParked(kernel);
    }
  }

  /** Codelia widget outputs this notebook was saved with: finished or gone ones turn static. */
  private async restoreParked(kernel: Kernel.IKernelConnection): Promise<void> {
    try {
      await this.panel.context.ready;
      await this.panel.sessionContext.ready;
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
    } catch {
      // the kernel or the notebook went away meanwhile
    }
  }

  private async serve(
    action: 'snapshot' | 'edit' | 'run' | 'revert',
    params: JSONObject
  ): Promise<JSONObject> {
    switch (action) {
      case 'snapshot':
        return this.actions.snapshot(params, this.pageState());
      case 'edit': {
        const result = this.actions.edit(params, cellId => this.isTyping(cellId));
        this.badges.refresh();
        return result;
      }
      case 'run':
        return this.runner.run(params);
      case 'revert': {
        const problem = this.actions.revert(String(params.edit_id ?? ''));
        if (problem) {
          throw new RequestFailed(problem);
        }
        this.badges.refresh();
        return {};
      }
    }
  }

  private pageState() {
    const notebook = this.panel.content;
    const active = notebook.activeCell;
    const typing =
      active !== null && notebook.mode === 'edit' && active.editor?.hasFocus();
    return {
      path: this.panel.context.path,
      activeCellId: active?.model.id ?? null,
      editingCellId: typing ? active.model.id : null,
      dirty: this.panel.model?.dirty ?? false
    };
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

  // ---------------------------------------------------------------- running cells

  private cellWidget(cellId: string): Cell | null {
    return this.panel.content.widgets.find(w => w.model.id === cellId) ?? null;
  }

  private executor(): CellExecutor {
    return {
      exists: cellId => this.cellWidget(cellId) !== null,
      interrupt: async () => {
        await this.kernel?.interrupt();
      },
      view: cellId => {
        const cell = this.actions.cell(cellId);
        return cell
          ? this.actions.cellView(cell, true, this.actions.indexOf(cellId))
          : null;
      },
      execute: (cellId, channel) => this.execute(cellId, channel)
    };
  }

  private async execute(
    cellId: string,
    channel: RunChannel
  ): Promise<Exclude<RunStatus, 'running'>> {
    const widget = this.cellWidget(cellId);
    if (widget instanceof MarkdownCell) {
      widget.rendered = true;
      return 'done';
    }
    if (!(widget instanceof CodeCell)) {
      return 'done';
    }
    const reply =
      channel === 'main'
        ? await CodeCell.execute(widget, this.panel.sessionContext)
        : await this.executeOnSubshell(widget);
    const status = reply ? reply.content.status : 'aborted';
    return status === 'ok' ? 'done' : status === 'aborted' ? 'interrupted' : 'error';
  }

  private async executeOnSubshell(
    cell: CodeCell
  ): Promise<KernelMessage.IExecuteReplyMsg | void> {
    const kernel = this.kernel;
    const subshell = kernel ? await this.comm.subshell(kernel) : null;
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
    if (this._badgeFrame || this._disposed) {
      return;
    }
    this._badgeFrame = window.requestAnimationFrame(() => {
      this._badgeFrame = 0;
      if (!this._disposed) {
        this.badges.refresh();
      }
    });
  }

  private readonly runner: CellRunner;
  private readonly badges: ReviewBadges;
  private readonly comm: NotebookComm;
  private _disposed = false;
  private _badgeFrame = 0;
  /** Codelia widget outputs shown static since the notebook loaded, until the kernel says. */
  private _parked: Parked = new Map();
  private _dirtyWhenParked = false;
}
