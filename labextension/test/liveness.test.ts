import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Kernel } from '@jupyterlab/services';

import {
  KernelLiveness,
  PROBE_INTERVAL_MS,
  PROBE_TIMEOUT_MS,
  kernelAnswers
} from '../src/liveness';

/** A kernel connection whose control-channel replies the test switches on and off. */
function fakeKernel(): {
  kernel: Kernel.IKernelConnection;
  answering: { on: boolean };
  sent: unknown[];
} {
  const answering = { on: true };
  const sent: unknown[] = [];
  const kernel = {
    clientId: 'client',
    username: 'user',
    sendControlMessage: (msg: unknown) => {
      sent.push(msg);
      return { done: answering.on ? Promise.resolve({}) : new Promise(() => undefined) };
    }
  } as unknown as Kernel.IKernelConnection;
  return { kernel, answering, sent };
}

describe('noticing a kernel that stopped answering', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('asks kernel_info on the control channel', async () => {
    const { kernel, sent } = fakeKernel();
    expect(await kernelAnswers(kernel, 1000)).toBe(true);
    const msg = sent[0] as { channel: string; header: { msg_type: string } };
    expect(msg.channel).toBe('control');
    expect(msg.header.msg_type).toBe('kernel_info_request');
  });

  it('reports lost after a silent probe and back after an answer', async () => {
    const { kernel, answering } = fakeKernel();
    const changes: boolean[] = [];
    const liveness = new KernelLiveness(
      () => kernel,
      lost => changes.push(lost)
    );
    liveness.start();
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(changes).toEqual([]);

    answering.on = false;
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS + PROBE_TIMEOUT_MS);
    expect(changes).toEqual([true]);
    expect(liveness.lost).toBe(true);

    answering.on = true;
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 2);
    expect(changes).toEqual([true, false]);

    liveness.stop();
    answering.on = false;
    await vi.advanceTimersByTimeAsync((PROBE_INTERVAL_MS + PROBE_TIMEOUT_MS) * 2);
    expect(changes).toEqual([true, false]);
  });

  it('reset clears a lost kernel', async () => {
    const { kernel, answering } = fakeKernel();
    answering.on = false;
    const changes: boolean[] = [];
    const liveness = new KernelLiveness(
      () => kernel,
      lost => changes.push(lost)
    );
    liveness.start();
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS + PROBE_TIMEOUT_MS);
    liveness.reset();
    expect(changes).toEqual([true, false]);
  });
});
