/**
 * The notebook's kernel as its main shell has it: the status, and each cell's In [n].
 *
 * A kernel with subshells (JEP 91) reports busy and idle for every request run on a subshell or
 * the control channel: the side panel's requests, a cell panel's buttons and widget comms all
 * run there while a blocking `%%codelia` cell holds the main shell. JupyterLab takes each
 * `status` as the kernel's, so the first of their `idle`s made the status bar, the toolbar's
 * indicator and the tab's icon say Idle for the rest of the run. Cells the agent runs on a
 * subshell meanwhile also count executions, and ipykernel's reply to the blocking cell gives the
 * latest count, so the `%%codelia` cell got the In [n] of the last cell it ran. Its own
 * `execute_input` has the number the kernel's history keeps for it.
 *
 * This module keeps the connection's status at busy until the main shell's own execute request
 * reports idle, and gives a cell that ran on the main shell the number of its `execute_input`.
 */

import type { Cell, CodeCell } from '@jupyterlab/cells';
import type { Notebook, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import type { ISignal } from '@lumino/signaling';

/** `NotebookActions.executed`: a cell's run ended, its In [n] set from the reply. */
export type Executed = ISignal<unknown, { notebook: Notebook; cell: Cell }>;

/** What one iopub message says, as far as this module reads it. */
export interface IopubView {
  type: string;
  state: string;
  count: number | null;
  parentId: string | null;
  parentType: string | null;
  subshell: boolean;
}

export function iopubView(msg: KernelMessage.IMessage): IopubView {
  const parent = (msg.parent_header ?? {}) as {
    msg_id?: string;
    msg_type?: string;
    subshell_id?: string | null;
  };
  const content = msg.content as { execution_state?: string; execution_count?: number };
  return {
    type: msg.header.msg_type,
    state: content.execution_state ?? '',
    count: typeof content.execution_count === 'number' ? content.execution_count : null,
    parentId: parent.msg_id ?? null,
    parentType: parent.msg_type ?? null,
    subshell: typeof parent.subshell_id === 'string' && parent.subshell_id !== ''
  };
}

/** How many main-shell In [n] numbers are kept for cells still to finish. */
const KEPT_COUNTS = 64;

/** Follows the main shell's execute requests. */
export class MainShell {
  /** The main shell's running execute request, if a status said it started. */
  running: string | null = null;

  /** Read one iopub message; `true` when the connection should show busy again after it. */
  observe(view: IopubView): boolean {
    if (view.type === 'execute_input') {
      if (!view.subshell && view.parentId !== null && view.count !== null) {
        this._counts.set(view.parentId, view.count);
        if (this._counts.size > KEPT_COUNTS) {
          this._counts.delete(this._counts.keys().next().value as string);
        }
      }
      return false;
    }
    if (view.type !== 'status') {
      return false;
    }
    if (view.state === 'busy') {
      if (!view.subshell && view.parentType === 'execute_request') {
        this.running = view.parentId;
      }
      return false;
    }
    if (view.state !== 'idle') {
      this.running = null; // starting, restarting, dead: nothing runs any more
      return false;
    }
    if (this.running === null || view.parentId === this.running) {
      this.running = null;
      return false;
    }
    return true;
  }

  /** The In [n] the main shell gave request `msgId` (once; null when it was not seen). */
  takeCount(msgId: string): number | null {
    const count = this._counts.get(msgId) ?? null;
    this._counts.delete(msgId);
    return count;
  }

  private _counts = new Map<string, number>();
}

/** The connection's status setter (not in its public interface; every JupyterLab 4 has it). */
interface StatusSetter {
  _updateStatus?: (status: Kernel.Status) => void;
}

/** Keeps one notebook's kernel status and In [n] numbers honest while a cell runs. */
export class MainShellWatch implements IDisposable {
  constructor(
    private readonly notebook: NotebookPanel,
    private readonly executed: Executed
  ) {
    notebook.sessionContext.kernelChanged.connect(this.follow, this);
    executed.connect(this.onExecuted, this);
    this.follow();
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.notebook.sessionContext.kernelChanged.disconnect(this.follow, this);
    this.executed.disconnect(this.onExecuted, this);
    this._kernel?.iopubMessage.disconnect(this.onIopub, this);
    this._kernel?.connectionStatusChanged.disconnect(this.onConnection, this);
    this._kernel = null;
  }

  private follow(): void {
    const kernel = this.notebook.sessionContext.session?.kernel ?? null;
    if (kernel === this._kernel) {
      return;
    }
    this._kernel?.iopubMessage.disconnect(this.onIopub, this);
    this._kernel?.connectionStatusChanged.disconnect(this.onConnection, this);
    this._kernel = kernel;
    this._shell = new MainShell();
    kernel?.iopubMessage.connect(this.onIopub, this);
    kernel?.connectionStatusChanged.connect(this.onConnection, this);
  }

  /** A new connection may have missed the running request's idle: never hold busy on a guess. */
  private onConnection(): void {
    this._shell.running = null;
  }

  private onIopub(
    kernel: Kernel.IKernelConnection,
    msg: KernelMessage.IIOPubMessage
  ): void {
    if (this._shell.observe(iopubView(msg)) && kernel.status === 'idle') {
      (kernel as unknown as StatusSetter)._updateStatus?.('busy');
    }
  }

  private onExecuted(_: unknown, args: { notebook: Notebook; cell: Cell }): void {
    if (args.notebook !== this.notebook.content || args.cell.model.type !== 'code') {
      return;
    }
    const cell = args.cell as CodeCell;
    const msgId = cell.outputArea.future?.msg.header.msg_id;
    const count = msgId ? this._shell.takeCount(msgId) : null;
    const model = cell.model;
    if (
      count !== null &&
      model.executionCount !== null &&
      model.executionCount !== count
    ) {
      model.executionCount = count;
    }
  }

  private _disposed = false;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _shell = new MainShell();
}
