import { describe, expect, it } from 'vitest';

import { KernelMessage } from '../src/protocol';
import { ReplayGate } from '../src/replay';
import { Transcript } from '../src/transcript';

function event(seq: number, content: string): KernelMessage {
  return {
    type: 'agent.event',
    run_id: 'run-1',
    seq,
    event: { type: 'text', content }
  };
}

const started: KernelMessage = {
  type: 'run.started',
  run_id: 'run-1',
  session_id: 's-1',
  prompt: 'go',
  source: 'panel'
};

function texts(t: Transcript): string[] {
  return t.items.flatMap(item => (item.kind === 'text' ? [item.text] : []));
}

describe('ReplayGate', () => {
  it('delivers live messages at once when no replay is loading', () => {
    const seen: number[] = [];
    const gate = new ReplayGate<number>(m => seen.push(m));
    gate.push(1);
    gate.push(2);
    expect(seen).toEqual([1, 2]);
  });

  it('puts a mid-run replay before the live events that raced it, each event once', async () => {
    const t = new Transcript();
    const gate = new ReplayGate<KernelMessage>(m => t.apply(m));
    let resolve: (events: KernelMessage[]) => void = () => undefined;
    const loading = gate.replay(() => new Promise<KernelMessage[]>(r => (resolve = r)));
    // Live events 2 and 3 arrive while the transcript (events 0-2) is still on its way.
    gate.push(event(2, 'two'));
    gate.push(event(3, 'three'));
    expect(texts(t)).toEqual([]);
    resolve([started, event(0, 'zero'), event(1, 'one'), event(2, 'two')]);
    await loading;
    expect(texts(t)).toEqual(['zero', 'one', 'two', 'three']);
    gate.push(event(4, 'four'));
    expect(texts(t)).toEqual(['zero', 'one', 'two', 'three', 'four']);
  });

  it('still delivers the held live messages when the replay fails', async () => {
    const seen: string[] = [];
    const gate = new ReplayGate<string>(m => seen.push(m));
    const loading = gate.replay(async () => {
      gate.push('live');
      throw new Error('kernel busy');
    });
    await expect(loading).rejects.toThrow('kernel busy');
    expect(seen).toEqual(['live']);
  });

  it('survives a second replay started while the first still loads', async () => {
    const seen: string[] = [];
    const gate = new ReplayGate<string>(m => seen.push(m));
    let finishFirst: (messages: string[]) => void = () => undefined;
    const first = gate.replay(() => new Promise<string[]>(r => (finishFirst = r)));
    gate.push('live-1');
    const second = gate.replay(async () => ['second-replay']);
    await second;
    gate.push('live-2');
    finishFirst(['first-replay']);
    await first;
    expect(seen).toEqual(['second-replay', 'first-replay', 'live-1', 'live-2']);
    gate.push('live-3');
    expect(seen.at(-1)).toBe('live-3');
  });

  it('holds from the start of a connection, so no live event overtakes the replay', async () => {
    const t = new Transcript();
    const gate = new ReplayGate<KernelMessage>(m => t.apply(m));
    const release = gate.hold(); // connecting: the hello and a live delta arrive before the replay starts
    gate.push(started);
    gate.push(delta(9, ' word3'));
    // The replay: the log (no deltas) plus what the kernel kept of the reply so far.
    await gate.replay(async () => [started, delta(7, 'word0 word1 word2')]);
    expect(texts(t)).toEqual(['word0 word1 word2']); // the live delta still waits
    release();
    release(); // once is enough
    expect(texts(t)).toEqual(['word0 word1 word2 word3']);
    gate.push(delta(9, ' word3')); // a duplicate by seq
    gate.push(delta(12, ' word4'));
    expect(texts(t)).toEqual(['word0 word1 word2 word3 word4']);
  });
});

function delta(seq: number, text: string): KernelMessage {
  return {
    type: 'agent.event',
    run_id: 'run-1',
    seq,
    event: { type: 'text_delta', delta: text }
  };
}
