/**
 * The `codelia.notebook` comm of one notebook (docs/comm-protocol.md "Notebook tools").
 *
 * It registers the comm target on the notebook's kernel and tells the kernel a tab is attached
 * (`tab_opened`). The kernel opens the comm when a tool needs the notebook and sends
 * `notebook.request`s on it; each is answered with one `notebook.reply`, sent through
 * `bridge.control()` on a kernel subshell (so it arrives while a blocking `%%codelia` cell holds
 * the main shell) or on the comm when the kernel has no subshells. What a request does is the
 * owner's business (`NotebookRequests`); this module only routes and answers.
 */

import { Kernel, KernelMessage } from '@jupyterlab/services';
import { UUID } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';

import { executeControl, openControlSubshell } from './connection';
import { JSONObject } from './protocol';
import { NotebookKernelMessage, NotebookReplyRequest, NotebookRequest } from './wire';

export const NOTEBOOK_TARGET = 'codelia.notebook';
const FRONTEND_MODULE = 'jupyter_codelia.notebook.frontend';
// Tells the kernel a tab that can answer the cell tools is attached (a reloaded page is greeted
// on a new comm); does nothing in a kernel without jupyter-codelia installed.
const TAB_OPENED =
  `__import__('${FRONTEND_MODULE}', fromlist=['x']).tab_opened() ` +
  "if __import__('importlib.util', fromlist=['x']).find_spec('jupyter_codelia') else None";

/** What the notebook answers; the actions the kernel may ask for besides `ping`. */
export interface NotebookRequests {
  /** The notebook's path, for the hello. */
  path(): string;
  serve(
    action: Exclude<NotebookRequest['action'], 'ping'>,
    params: JSONObject
  ): JSONObject | Promise<JSONObject>;
  /** A codelia widget output of this notebook finished: its final static bundle. */
  outputFinished(modelId: string, data: JSONObject): void;
}

/** A `notebook.reply` before it is sent (`control()` adds the `request_id`). */
export type NotebookReply = JSONObject & Omit<NotebookReplyRequest, 'request_id'>;

export class NotebookComm implements IDisposable {
  constructor(private readonly requests: NotebookRequests) {}

  /** Names this tab: the kernel addresses its requests to one tab of the notebook. */
  readonly clientId = UUID.uuid4();

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Answer the cell tools on `kernel` (the notebook's kernel, after every change). */
  attach(kernel: Kernel.IKernelConnection | null): void {
    this._subshell = null;
    if (!kernel || this._disposed) {
      return;
    }
    kernel.registerCommTarget(NOTEBOOK_TARGET, (comm, msg) =>
      this.onOpen(kernel, comm, msg)
    );
    void this.announce(kernel);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    void this._subshell?.then(kernel => kernel?.dispose());
  }

  /**
   * The reply to one request, or null when it is meant for another tab. Never throws: a
   * failure is an `ok: false` reply with its message.
   */
  async answer(data: NotebookRequest): Promise<NotebookReply | null> {
    if (data.client_id && data.client_id !== this.clientId) {
      return null;
    }
    const reply: NotebookReply = {
      type: 'notebook.reply',
      reply_to: data.request_id,
      ok: true
    };
    try {
      reply.result =
        data.action === 'ping' ? {} : await this.requests.serve(data.action, data.params);
    } catch (error) {
      reply.ok = false;
      reply.error = error instanceof Error ? error.message : String(error);
    }
    return reply;
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

  /** The kernel opened the comm: answer its hello, then serve its requests. */
  onOpen(
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
      this.requests.outputFinished(hello.model_id, hello.data as JSONObject);
      return;
    }
    if (hello && hello.type === 'hello') {
      void this.deliver(kernel, comm, {
        type: 'notebook.reply',
        reply_to: hello.request_id,
        ok: true,
        result: {
          client_id: this.clientId,
          client: 'jupyterlab',
          path: this.requests.path(),
          subshells: kernel.supportsSubshells
        }
      });
    }
  }

  private async onRequest(
    kernel: Kernel.IKernelConnection,
    comm: Kernel.IComm,
    data: NotebookRequest
  ): Promise<void> {
    if (data.action === 'ping' && data.params.via === 'comm') {
      // A plain comm echo: the baseline bench/notebook_tools.py compares requests against.
      comm.send({
        type: 'notebook.reply',
        reply_to: data.request_id,
        ok: true,
        result: {}
      });
      return;
    }
    const reply = await this.answer(data);
    if (reply) {
      await this.deliver(kernel, comm, reply);
    }
  }

  private async deliver(
    kernel: Kernel.IKernelConnection,
    comm: Kernel.IComm,
    reply: NotebookReply
  ): Promise<void> {
    const subshell = kernel.supportsSubshells ? await this.subshell(kernel) : null;
    try {
      if (subshell) {
        await executeControl(subshell, { ...reply, request_id: UUID.uuid4() });
      } else if (!comm.isDisposed) {
        comm.send(reply as never);
      }
    } catch (failure) {
      // The kernel stopped waiting (timeout, restart): nothing left to answer.
      console.warn('codelia: notebook reply not delivered', failure);
    }
  }

  /** A subshell of the kernel for replies and for cells run beside a busy cell. */
  subshell(kernel: Kernel.IKernelConnection): Promise<Kernel.IKernelConnection | null> {
    if (this._subshell === null || this._subshellFor !== kernel) {
      this._subshellFor = kernel;
      this._subshell = openControlSubshell(kernel);
    }
    return this._subshell;
  }

  private _disposed = false;
  private _subshell: Promise<Kernel.IKernelConnection | null> | null = null;
  private _subshellFor: Kernel.IKernelConnection | null = null;
}
