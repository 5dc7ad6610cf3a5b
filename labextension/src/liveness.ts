/**
 * Notices when the kernel stops answering during a run. Behind a kernel gateway the browser's
 * link to the Jupyter server stays up when the gateway or the kernel's host goes away (the
 * server keeps retrying for a while), so the kernel still looks "idle" and "connected". While a
 * run is active the panel therefore asks the kernel a `kernel_info_request` on the control
 * channel every few seconds, which a live kernel answers even while a cell is busy.
 */

import { Kernel, KernelMessage } from '@jupyterlab/services';

export const PROBE_INTERVAL_MS = 4000;
export const PROBE_TIMEOUT_MS = 8000;

export const LOST_KERNEL_MESSAGE =
  `Lost contact with the kernel: no answer for ${PROBE_TIMEOUT_MS / 1000} s. ` +
  'It may have stopped, or the kernel gateway serving it may be down. ' +
  'What the run did so far is saved in its session.';

/**
 * Send one request on the control channel, which a busy cell does not block; its reply, or
 * null when none came within `timeoutMs`. (The services typings list only a few control
 * message types, and `requestCreateSubshell` refuses until the shell answered kernel_info.)
 */
export async function controlReply(
  kernel: Kernel.IKernelConnection,
  msgType: 'kernel_info_request' | 'create_subshell_request',
  timeoutMs: number
): Promise<KernelMessage.IMessage | null> {
  const request = KernelMessage.createMessage({
    msgType: 'kernel_info_request',
    channel: 'shell',
    session: kernel.clientId,
    username: kernel.username,
    content: {}
  });
  const msg = {
    ...request,
    header: { ...request.header, msg_type: msgType },
    channel: 'control'
  } as unknown as KernelMessage.IControlMessage;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>(resolve => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  try {
    const future = kernel.sendControlMessage(msg, true, true);
    return await Promise.race([future.done, timeout]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a kernel answers a control-channel `kernel_info_request` within `timeoutMs`. */
export async function kernelAnswers(
  kernel: Kernel.IKernelConnection,
  timeoutMs: number
): Promise<boolean> {
  // Kernels answer kernel_info on the control channel too (ipykernel >= 6).
  return (await controlReply(kernel, 'kernel_info_request', timeoutMs)) !== null;
}

/** Probes a kernel while `start()`ed; reports each change between answering and silent. */
export class KernelLiveness {
  constructor(
    private readonly kernel: () => Kernel.IKernelConnection | null,
    private readonly onChange: (lost: boolean) => void
  ) {}

  get lost(): boolean {
    return this._lost;
  }

  start(): void {
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.probe(), PROBE_INTERVAL_MS);
    }
  }

  /** Stop probing; a lost kernel stays reported until a probe or `reset()` says otherwise. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  reset(): void {
    this.stop();
    this.setLost(false);
  }

  private async probe(): Promise<void> {
    const kernel = this.kernel();
    if (!kernel || this.probing) {
      return;
    }
    this.probing = true;
    try {
      this.setLost(!(await kernelAnswers(kernel, PROBE_TIMEOUT_MS)));
    } finally {
      this.probing = false;
    }
  }

  private setLost(lost: boolean): void {
    if (lost !== this._lost) {
      this._lost = lost;
      this.onChange(lost);
    }
  }

  private timer: ReturnType<typeof setInterval> | undefined;
  private probing = false;
  private _lost = false;
}
