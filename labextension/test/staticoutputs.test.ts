import { describe, expect, it } from 'vitest';

import {
  applyStates,
  CellList,
  fallbackWidgetIds,
  parkWidgetOutputs,
  replaceWidgetOutputs,
  statesCode,
  WIDGET_VIEW
} from '../src/staticoutputs';

type Output = { [key: string]: unknown };

/** A notebook's cells as the functions see them: code cells whose outputs can be replaced. */
function notebook(...given: Output[][]): { cells: CellList; outputs: Output[][] } {
  const outputs = given.map(list => list.map(o => ({ ...o })));
  const models = outputs.map(list => ({
    type: 'code',
    outputs: {
      get length() {
        return list.length;
      },
      get: (i: number) => ({ toJSON: () => list[i] }),
      set: (i: number, value: Output) => {
        list[i] = value;
      }
    }
  }));
  const cells = {
    length: models.length,
    get: (i: number) => models[i]
  } as unknown as CellList;
  return { cells, outputs };
}

function live(modelId: string, html: string, fallback = true): Output {
  return {
    output_type: 'display_data',
    data: {
      [WIDGET_VIEW]: { model_id: modelId, version_major: 2, version_minor: 0 },
      'text/html': html,
      'text/plain': 'codelia run running'
    },
    metadata: fallback ? { jupyter_codelia: { fallback: true } } : {}
  };
}

describe('codelia widget outputs turn static for good', () => {
  it('swaps a finished widget for its final data wherever it is shown', () => {
    const final = {
      'text/html': '<div class="codelia-static">done</div>',
      'text/plain': 'done'
    };
    const { cells, outputs } = notebook(
      [live('frame-1', 'running')],
      [live('other', 'x')]
    );
    expect(replaceWidgetOutputs(cells, 'frame-1', final)).toBe(1);
    expect(outputs[0][0]).toEqual({
      output_type: 'display_data',
      data: final,
      metadata: {}
    });
    expect((outputs[1][0].data as Output)[WIDGET_VIEW]).toBeDefined();
  });

  it('on reopen: widgets show static at once, then live, final or fallback', () => {
    const stranger = live('not-ours', 'someone else', false);
    const { cells, outputs } = notebook(
      [live('done-1', 'old'), live('gone-2', '<b>saved mid-run</b>')],
      [live('live-3', 'running'), stranger]
    );
    const loaded = outputs.map(list => list.map(o => ({ ...o })));
    const parked = parkWidgetOutputs(cells);
    expect([...parked.keys()]).toEqual(['done-1', 'gone-2', 'live-3']);
    // Nothing is left for the widget manager to fail on before the kernel answers.
    for (const output of [outputs[0][0], outputs[0][1], outputs[1][0]]) {
      expect((output.data as Output)[WIDGET_VIEW]).toBeUndefined();
    }
    expect(outputs[1][1]).toEqual(stranger); // not a codelia output: untouched
    expect(fallbackWidgetIds(cells)).toEqual(['done-1', 'gone-2', 'live-3']);
    const differ = applyStates(
      cells,
      { 'done-1': { data: { 'text/plain': 'final' } }, 'live-3': { live: true } },
      parked
    );
    expect(differ).toBe(2);
    expect(outputs[0][0]).toEqual({
      output_type: 'display_data',
      data: { 'text/plain': 'final' },
      metadata: {}
    });
    // Unknown to the kernel: the widget view goes, the static fallback beside it stays.
    expect(outputs[0][1].data).toEqual({
      'text/html': '<b>saved mid-run</b>',
      'text/plain': 'codelia run running'
    });
    expect(outputs[0][1].metadata).toEqual({});
    expect(outputs[1][0]).toEqual(loaded[1][0]); // live: exactly as loaded
  });

  it('puts every parked widget back when the kernel gives no usable answer', () => {
    const { cells, outputs } = notebook([live('a', 'x')]);
    const loaded = { ...outputs[0][0] };
    const parked = parkWidgetOutputs(cells);
    expect(applyStates(cells, { a: { live: true } }, parked)).toBe(0);
    expect(outputs[0][0]).toEqual(loaded);
  });

  it('asks the kernel only when jupyter-codelia is installed there', () => {
    const code = statesCode(['a', 'b']);
    expect(code).toContain('.output_states(["a","b"])');
    expect(code).toContain("find_spec('jupyter_codelia') else '{}'");
  });
});
