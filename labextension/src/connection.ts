/**
 * The panel's link to one kernel: opens the `codelia` comm (loading the kernel extension when it
 * is missing), matches requests to responses, and sends control requests (Stop, approval answers)
 * as `execute_request`s on a kernel subshell so they run even while a user cell is busy
 * (docs/comm-protocol.md "Control while a cell is busy"). A kernel takes no `comm_open` while a
 * cell runs, so when the comm does not open at once the panel asks the kernel, through a
 * subshell, to open a `codelia.panel` comm itself (`panel.attach`): a page reloaded during a
 * blocking `%%codelia` run is connected while the cell still runs.
 */

import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage as JupyterMessage } from '@jupyterlab/services';
import { JSONObject as JSONMessage, PromiseDelegate, UUID } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { controlReply } from './liveness';
import {
  HelloMessage,
  JSONObject,
  KernelMessage,
  RequestArgs,
  RequestResult,
  RequestType
} from './protocol';

export const COMM_TARGET = 'codelia';
/** The target of the comm a kernel opens for a panel that asked with `panel.attach`. */
export const PANEL_TARGET = 'codelia.panel';
export const HELLO_TIMEOUT_MS = 5000;
/**
 * An idle kernel answers kernel_info and a comm_open within milliseconds; one that has not
 * after this long is running a cell (it answers them when the cell ends), so the panel attaches
 * through a subshell instead of waiting for the cell.
 */
export const ATTACH_AFTER_MS = 1500;
// Not `%load_ext`: that would mark the extension loaded, and the person's own
// `%load_ext jupyter_codelia` cell would then print "already loaded" into their notebook.
const LOAD_EXTENSION_CODE =
  '__import__("jupyter_codelia").load_ipython_extension(get_ipython())';

export type ConnectionState =
  'no-kernel' | 'connecting' | 'loading-extension' | 'ready' | 'failed' | 'closed';

/** Where a control request went: a subshell (immediate) or the comm (waits for a busy cell). */
export type ControlRoute = 'subshell' | 'comm';

export class CodeliaRequestError extends Error {}

/** The Python source that runs one control request on a subshell. */
export function controlCode(payload: JSONObject): string {
  // JSON string literals are valid Python string literals (same escapes, \uXXXX included).
  return (
    '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control(' +
    JSON.stringify(JSON.stringify(payload)) +
    ')'
  );
}

/** Decode a Python `repr()` of a str (single or double quoted) into its value. */
export function decodePythonString(repr: string): string | null {
  const quote = repr[0];
  if ((quote !== "'" && quote !== '"') || repr[repr.length - 1] !== quote) {
    return null;
  }
  const body = repr.slice(1, -1);
  const simple: { [escape: string]: string } = {
    '\\': '\\',
    "'": "'",
    '"': '"',
    n: '\n',
    r: '\r',
    t: '\t',
    b: '\b',
    f: '\f',
    v: '\v',
    a: '\x07',
    '0': '\0'
  };
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const next = body[i + 1];
    const width = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    if (width > 0) {
      out += String.fromCodePoint(parseInt(body.slice(i + 2, i + 2 + width), 16));
      i += 1 + width;
    } else if (next in simple) {
      out += simple[next];
      i += 1;
    } else {
      out += ch;
    }
  }
  return out;
}

/** The response object carried by a control execute result (JSON, or a Python str repr of it). */
export function parseControlResult(data: JSONObject): KernelMessage | null {
  const json = data['application/json'];
  if (json !== null && typeof json === 'object') {
    return json as KernelMessage;
  }
  const text = data['text/plain'];
  if (typeof text !== 'string') {
    return null;
  }
  for (const candidate of [text, decodePythonString(text.trim())]) {
    if (candidate === null) {
      continue;
    }
    try {
      const value: unknown = JSON.parse(candidate);
      if (value !== null && typeof value === 'object') {
        return value as KernelMessage;
      }
    } catch {
      // not JSON; try the next reading
    }
  }
  return null;
}

/** What `promise` settles to within `ms`, or null when it has not by then. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>(resolve => {
    timer = setTimeout(() => resolve(null), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The panels of this page waiting for a `codelia.panel` comm, by their client id. */
const attachWaiters = new Map<
  string,
  (comm: Kernel.IComm, hello: HelloMessage) => void
>();
const acceptingKernels = new WeakSet<Kernel.IKernelConnection>();

/**
 * Accept `codelia.panel` comms on `kernel` (every notebook of the page does, see index.ts): a
 * kernel opens them for one panel, named by `client_id`; a page whose panel did not ask leaves
 * the comm alone, since closing it would close it for the page that did.
 */
export function acceptPanelComms(kernel: Kernel.IKernelConnection): void {
  if (acceptingKernels.has(kernel)) {
    return;
  }
  acceptingKernels.add(kernel);
  kernel.registerCommTarget(PANEL_TARGET, (comm, msg) => {
    const hello = msg.content.data as unknown as HelloMessage;
    const waiter = attachWaiters.get(hello?.client_id ?? '');
    if (waiter && hello.type === 'hello') {
      waiter(comm, hello);
    }
  });
}

interface Pending {
  resolve: (result: JSONObject) => void;
  reject: (error: Error) => void;
}

export class CodeliaConnection implements IDisposable {
  constructor(readonly sessionContext: ISessionContext) {}

  /** Names this panel when it asks the kernel for a comm (`panel.attach`). */
  readonly clientId = UUID.uuid4();

  get messageReceived(): ISignal<this, KernelMessage> {
    return this._messageReceived;
  }

  get stateChanged(): ISignal<this, ConnectionState> {
    return this._stateChanged;
  }

  get state(): ConnectionState {
    return this._state;
  }

  /** Why the last connection attempt failed, for the panel's status line. */
  get failure(): string | null {
    return this._failure;
  }

  get hello(): HelloMessage | null {
    return this._hello;
  }

  get kernel(): Kernel.IKernelConnection | null {
    return this.sessionContext.session?.kernel ?? null;
  }

  /**
   * Whether control requests can bypass a busy main shell: the kernel said so in its
   * kernel_info, or on the control channel while its shell was busy.
   */
  get supportsSubshells(): boolean {
    const kernel = this.kernel;
    return !!kernel && (kernel.supportsSubshells || this._subshellsFor === kernel);
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Open the comm; safe to call again after a kernel change or restart. */
  async connect(): Promise<void> {
    this.closeComm();
    const kernel = this.kernel;
    if (!kernel) {
      this.setState('no-kernel');
      return;
    }
    this.setState('connecting');
    try {
      if (await this.openOrAttach(kernel)) {
        return;
      }
      this.setState('loading-extension');
      const reply = await kernel.requestExecute(
        { code: LOAD_EXTENSION_CODE, silent: true, store_history: false },
        true
      ).done;
      if (reply.content.status !== 'ok') {
        const error = reply.content as JupyterMessage.IReplyErrorContent;
        throw new Error(
          `%load_ext jupyter_codelia failed in the kernel (${error.ename}: ${error.evalue}); ` +
            'install jupyter-codelia in the kernel environment'
        );
      }
      if (!(await this.tryOpen(kernel, 2 * HELLO_TIMEOUT_MS))) {
        throw new Error(
          'the kernel did not answer on the codelia comm after %load_ext jupyter_codelia'
        );
      }
    } catch (error) {
      if (this._disposed) {
        return;
      }
      this._failure = error instanceof Error ? error.message : String(error);
      this.setState('failed');
    }
  }

  /**
   * Open the comm, or have the kernel open one when a running cell holds the shell (it then
   * answers neither kernel_info nor comm_open). False when neither worked: the kernel extension
   * is probably not loaded.
   */
  private async openOrAttach(kernel: Kernel.IKernelConnection): Promise<boolean> {
    if ((await within(kernel.info, ATTACH_AFTER_MS)) === null) {
      // A page loaded while a cell runs: the shell answers kernel_info when the cell ends.
      if (await this.attach(kernel)) {
        return true;
      }
      await kernel.info;
      return this.tryOpen(kernel, HELLO_TIMEOUT_MS);
    }
    const opened = this.tryOpen(kernel, HELLO_TIMEOUT_MS);
    const early = await within(opened, ATTACH_AFTER_MS);
    if (early !== null) {
      return early;
    }
    if (kernel.supportsSubshells && (await this.attach(kernel))) {
      return true;
    }
    return opened;
  }

  /**
   * Ask the kernel through a subshell (`panel.attach`) to open a `codelia.panel` comm to this
   * panel; true once it is open with its hello. False for a kernel without subshells or
   * without the extension loaded (control() then answers an error).
   */
  private async attach(kernel: Kernel.IKernelConnection): Promise<boolean> {
    if (!kernel.supportsSubshells) {
      const info = await controlReply(kernel, 'kernel_info_request', HELLO_TIMEOUT_MS);
      const features = (info?.content as { supported_features?: string[] } | undefined)
        ?.supported_features;
      if (!features?.includes('kernel subshells')) {
        return false;
      }
      this._subshellsFor = kernel;
    }
    acceptPanelComms(kernel);
    const arrived = new PromiseDelegate<{ comm: Kernel.IComm; hello: HelloMessage }>();
    attachWaiters.set(this.clientId, (comm, hello) => arrived.resolve({ comm, hello }));
    try {
      const { result } = await this.control('panel.attach', { client_id: this.clientId });
      await result;
      const attached = await within(arrived.promise, HELLO_TIMEOUT_MS);
      if (!attached || this._disposed) {
        return false;
      }
      this.adopt(attached.comm);
      this.welcome(attached.hello);
      return true;
    } catch {
      return false;
    } finally {
      attachWaiters.delete(this.clientId);
    }
  }

  /** Send a request on the comm and wait for its response's result. */
  request<K extends RequestType>(
    type: K,
    ...[fields]: RequestArgs<K>
  ): Promise<RequestResult<K>> {
    const comm = this._comm;
    if (!comm || this._state !== 'ready') {
      return Promise.reject(
        new CodeliaRequestError('not connected to a kernel with jupyter_codelia')
      );
    }
    const requestId = UUID.uuid4();
    const delegate = new PromiseDelegate<JSONObject>();
    this._pending.set(requestId, delegate);
    // Requests are plain JSON (strings, numbers, booleans): the cast only narrows `unknown`.
    comm.send({ type, request_id: requestId, ...fields } as JSONMessage);
    // The kernel answers a request of type K with its result model (jupyter_codelia/wire.py).
    return delegate.promise as Promise<RequestResult<K>>;
  }

  /**
   * Send a control request (`run.cancel`, `permission.respond`): on a subshell when the kernel
   * has them, so it runs at once even while a cell is busy; else on the comm.
   */
  async control<K extends RequestType>(
    type: K,
    ...[fields]: RequestArgs<K>
  ): Promise<{ route: ControlRoute; result: Promise<RequestResult<K>> }> {
    const subshell = await this.controlKernel();
    if (!subshell) {
      return {
        route: 'comm',
        result: this.request(type, ...([fields] as RequestArgs<K>))
      };
    }
    const payload = { type, request_id: UUID.uuid4(), ...fields };
    const result = executeControl(subshell, payload) as Promise<RequestResult<K>>;
    return { route: 'subshell', result };
  }

  /**
   * A read of the kernel's store (`sessions.list`, `session.transcript`, `cache.*`): on a
   * subshell when the kernel has them, so history shows while a cell is busy; else the comm.
   */
  async read<K extends RequestType>(
    type: K,
    ...args: RequestArgs<K>
  ): Promise<RequestResult<K>> {
    // Kernels list what control() serves; older ones served only Stop and approvals there.
    if (!(this._hello?.control_requests ?? []).includes(type)) {
      return this.request(type, ...args);
    }
    const { result } = await this.control(type, ...args);
    return result;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.closeComm();
    this._controlKernel?.then(kernel => kernel?.dispose()).catch(() => undefined);
    this._controlKernel = null;
    Signal.clearData(this);
  }

  private setState(state: ConnectionState): void {
    if (state !== 'failed') {
      this._failure = null;
    }
    this._state = state;
    this._stateChanged.emit(state);
  }

  private tryOpen(kernel: Kernel.IKernelConnection, timeoutMs: number): Promise<boolean> {
    const comm = kernel.createComm(COMM_TARGET);
    this._comm = comm;
    const opened = new PromiseDelegate<boolean>();
    const timer = window.setTimeout(() => opened.resolve(false), timeoutMs);
    this.adopt(comm, () => {
      window.clearTimeout(timer);
      opened.resolve(false);
    });
    const handle = comm.onMsg;
    comm.onMsg = msg => {
      const data = msg.content.data as unknown as KernelMessage;
      if (this._comm !== comm) {
        // Answered after the panel attached another way (a busy cell held this open).
        if (!comm.isDisposed) {
          comm.close();
        }
        return;
      }
      if (data && data.type === 'hello') {
        window.clearTimeout(timer);
        this.welcome(data);
        opened.resolve(true);
        return;
      }
      return handle(msg);
    };
    comm.open({ client: 'jupyterlab-sidepanel' });
    return opened.promise.then(ok => {
      if (!ok && this._comm === comm) {
        this._comm = null;
        if (!comm.isDisposed) {
          comm.dispose();
        }
      }
      return ok;
    });
  }

  /** Serve `comm` as this panel's comm: its messages, and its closing. */
  private adopt(comm: Kernel.IComm, onClose?: () => void): void {
    this._comm = comm;
    comm.onMsg = msg => {
      this.handle(msg.content.data as unknown as KernelMessage);
    };
    comm.onClose = () => {
      onClose?.();
      if (this._comm === comm) {
        this._comm = null;
        this.rejectPending(
          'the codelia comm closed (kernel restarted or extension unloaded)'
        );
        if (this._state === 'ready') {
          this.setState('closed');
        }
      }
    };
  }

  /** The kernel's hello arrived on the comm: the connection is ready. */
  private welcome(hello: HelloMessage): void {
    this._hello = hello;
    this.setState('ready');
    this.handle(hello);
  }

  private handle(message: KernelMessage): void {
    if (!message || typeof message !== 'object') {
      return;
    }
    if (message.type === 'response') {
      const pending = this._pending.get(message.request_id ?? '');
      if (pending) {
        this._pending.delete(message.request_id ?? '');
        if (message.ok) {
          pending.resolve(message.result ?? {});
        } else {
          pending.reject(new CodeliaRequestError(message.error ?? 'request failed'));
        }
      }
      return;
    }
    if (message.type === 'store.changed' && this._hello) {
      // `%config Codelia.home` moved the kernel's store (history.ts reads hello.store).
      this._hello = { ...this._hello, store: message.store };
    }
    this._messageReceived.emit(message);
  }

  private rejectPending(reason: string): void {
    for (const pending of this._pending.values()) {
      pending.reject(new CodeliaRequestError(reason));
    }
    this._pending.clear();
  }

  private closeComm(): void {
    const comm = this._comm;
    this._comm = null;
    this.rejectPending('the panel reconnected');
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is already gone
      }
    }
    this._hello = null;
  }

  /** A clone of the kernel connection bound to a subshell made for control requests. */
  private controlKernel(): Promise<Kernel.IKernelConnection | null> {
    const kernel = this.kernel;
    if (!kernel || !this.supportsSubshells) {
      return Promise.resolve(null);
    }
    if (this._controlKernel === null || this._controlKernelFor !== kernel) {
      this._controlKernelFor = kernel;
      this._controlKernel = openControlSubshell(kernel);
    }
    return this._controlKernel;
  }

  private _comm: Kernel.IComm | null = null;
  private _hello: HelloMessage | null = null;
  private _state: ConnectionState = 'no-kernel';
  private _failure: string | null = null;
  private _disposed = false;
  private _pending = new Map<string, Pending>();
  private _controlKernel: Promise<Kernel.IKernelConnection | null> | null = null;
  private _controlKernelFor: Kernel.IKernelConnection | null = null;
  /** The kernel whose control channel said it has subshells before its shell could. */
  private _subshellsFor: Kernel.IKernelConnection | null = null;
  private _messageReceived = new Signal<this, KernelMessage>(this);
  private _stateChanged = new Signal<this, ConnectionState>(this);
}

/**
 * A clone of `kernel` bound to a new subshell (null when the kernel cannot make one). The
 * request goes on the control channel, so it is answered while a cell holds the shell.
 */
export async function openControlSubshell(
  kernel: Kernel.IKernelConnection
): Promise<Kernel.IKernelConnection | null> {
  const reply = await controlReply(kernel, 'create_subshell_request', HELLO_TIMEOUT_MS);
  const subshellId = (reply?.content as { subshell_id?: string } | undefined)
    ?.subshell_id;
  if (!subshellId) {
    return null;
  }
  const control = kernel.clone({ handleComms: false });
  control.subshellId = subshellId;
  return control;
}

/** Run one control request through `bridge.control()` on a subshell kernel; its result. */
export async function executeControl(
  kernel: Kernel.IKernelConnection,
  payload: JSONObject
): Promise<JSONObject> {
  // The call goes in user_expressions, answered in the execute_reply of this very request:
  // an execute_result from a subshell thread is not reliably parented while a cell is busy.
  const future = kernel.requestExecute(
    {
      code: '',
      silent: true,
      store_history: false,
      allow_stdin: false,
      stop_on_error: false,
      user_expressions: { response: controlCode(payload) }
    },
    true
  );
  // The answer is in the reply: do not also wait for the request's idle status, which
  // arrives separately on iopub (and later still when a gateway relays the channels).
  const reply = await new Promise<JupyterMessage.IExecuteReplyMsg>((resolve, reject) => {
    future.onReply = resolve;
    future.done.then(resolve, reject);
  });
  const expressions = (reply.content as { user_expressions?: JSONObject })
    .user_expressions;
  const outcome = expressions?.response as
    { status?: string; data?: JSONObject; ename?: string; evalue?: string } | undefined;
  if (outcome?.status === 'ok' && outcome.data) {
    const answer = parseControlResult(outcome.data);
    if (answer && answer.type === 'response') {
      if (answer.ok) {
        return answer.result ?? {};
      }
      throw new CodeliaRequestError(answer.error ?? 'request failed');
    }
  }
  throw new CodeliaRequestError(
    outcome?.status === 'error'
      ? `the kernel could not run the control request (${outcome.ename}: ${outcome.evalue})`
      : 'the kernel returned no response to the control request'
  );
}
