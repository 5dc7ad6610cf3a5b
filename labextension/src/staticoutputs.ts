/**
 * Codelia's live outputs become static for good (jupyter_codelia/notebook/_static.py).
 *
 * Every live widget codelia shows (a run's panel, job cards, the cache browser) carries its
 * static form beside the widget view in the same output, marked `metadata.jupyter_codelia`.
 * A widget that finishes after its cell (a background run, job cards) cannot be replaced by
 * display id: the kernel announces its final form (`output.finished`, see wire.ts) and this
 * module swaps it into every output showing that widget, so the saved notebook, nbconvert and
 * GitHub keep readable output. When a notebook is opened, its codelia widget outputs show their
 * static fallback at once (before the widget manager would draw "Error displaying widget: model
 * not found") and are checked with the kernel: a live one gets its widget back, a finished one
 * its final form, and one the kernel no longer knows (a restart, a tab closed mid-run) keeps
 * the fallback.
 */

import type * as nbformat from '@jupyterlab/nbformat';
import type { ICodeCellModel, ICellModel } from '@jupyterlab/cells';
import type { Kernel } from '@jupyterlab/services';

import { decodePythonString } from './connection';
import { JSONObject } from './protocol';

export const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';
export const OUTPUT_METADATA = 'jupyter_codelia';
const STATIC_MODULE = 'jupyter_codelia.notebook.ui._finals';

/** The cells of a notebook model, as far as this module needs them. */
export interface CellList {
  readonly length: number;
  get(index: number): ICellModel;
}

/** What the kernel knows of one widget output: still live, or its final data. */
export interface OutputState {
  live?: boolean;
  data?: JSONObject;
}

function widgetId(output: nbformat.IOutput): string | null {
  const data = (output as nbformat.IDisplayData).data;
  const view = data?.[WIDGET_VIEW] as { model_id?: unknown } | undefined;
  return typeof view?.model_id === 'string' && view.model_id ? view.model_id : null;
}

function hasFallback(output: nbformat.IOutput): boolean {
  const meta = (output.metadata ?? {}) as JSONObject;
  const ours = meta[OUTPUT_METADATA] as JSONObject | undefined;
  return ours?.fallback === true;
}

function codeCells(cells: CellList): ICodeCellModel[] {
  const found: ICodeCellModel[] = [];
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type === 'code') {
      found.push(cell as ICodeCellModel);
    }
  }
  return found;
}

/** Rewrite the outputs for which `change` returns a replacement; how many changed. */
function rewrite(
  cells: CellList,
  change: (output: nbformat.IOutput) => nbformat.IOutput | null
): number {
  let changed = 0;
  for (const cell of codeCells(cells)) {
    for (let i = 0; i < cell.outputs.length; i++) {
      const output = cell.outputs.get(i).toJSON();
      const replacement = change(output);
      if (replacement !== null) {
        cell.outputs.set(i, replacement);
        changed++;
      }
    }
  }
  return changed;
}

/** Every output showing widget `modelId` shows `data` instead (static, for good). */
export function replaceWidgetOutputs(
  cells: CellList,
  modelId: string,
  data: JSONObject
): number {
  return rewrite(cells, output =>
    widgetId(output) === modelId
      ? ({
          output_type: 'display_data',
          data: data as nbformat.IMimeBundle,
          metadata: {}
        } as nbformat.IDisplayData)
      : null
  );
}

/** The widget ids of the codelia outputs that carry a static fallback, parked or not. */
export function fallbackWidgetIds(cells: CellList): string[] {
  const ids: string[] = [];
  for (const cell of codeCells(cells)) {
    for (let i = 0; i < cell.outputs.length; i++) {
      const output = cell.outputs.get(i).toJSON();
      const id = parkedId(output) ?? (hasFallback(output) ? widgetId(output) : null);
      if (id) {
        ids.push(id);
      }
    }
  }
  return ids;
}

/** Outputs shown as their static fallback until the kernel says whether their widget lives. */
export type Parked = Map<string, nbformat.IOutput>;

function parkedId(output: nbformat.IOutput): string | null {
  const ours = ((output.metadata ?? {}) as JSONObject)[OUTPUT_METADATA] as
    JSONObject | undefined;
  return typeof ours?.parked === 'string' ? ours.parked : null;
}

/**
 * Right after a notebook loads, before JupyterLab's widget manager has tried (and failed) to
 * draw them: show every codelia widget output as its static fallback, keeping the original.
 */
export function parkWidgetOutputs(cells: CellList): Parked {
  const parked: Parked = new Map();
  rewrite(cells, output => {
    const id = widgetId(output);
    if (!id || !hasFallback(output)) {
      return null;
    }
    parked.set(id, output);
    return {
      output_type: 'display_data',
      data: withoutWidgetView(output),
      metadata: { [OUTPUT_METADATA]: { parked: id } }
    } as nbformat.IDisplayData;
  });
  return parked;
}

/**
 * Apply what the kernel said: a live widget is shown again (a parked one gets its original
 * back), a finished one its final data, and one the kernel does not know keeps only its
 * static fallback (its widget view would read "model not found"). Returns how many outputs
 * now differ from what the notebook was loaded with.
 */
export function applyStates(
  cells: CellList,
  states: { [id: string]: OutputState },
  parked: Parked = new Map()
): number {
  let differ = 0;
  rewrite(cells, output => {
    const parkedAs = parkedId(output);
    const id = parkedAs ?? (hasFallback(output) ? widgetId(output) : null);
    if (!id) {
      return null;
    }
    const state = states[id];
    const original = parkedAs ? parked.get(parkedAs) : undefined;
    if (state?.live) {
      return original ?? null;
    }
    differ++;
    const data = state?.data ?? withoutWidgetView(output);
    return { output_type: 'display_data', data, metadata: {} } as nbformat.IDisplayData;
  });
  return differ;
}

function withoutWidgetView(output: nbformat.IOutput): nbformat.IMimeBundle {
  const data = { ...((output as nbformat.IDisplayData).data ?? {}) };
  delete data[WIDGET_VIEW];
  return data;
}

/** The code of the silent user expression asking the kernel for the states of `ids`. */
export function statesCode(ids: string[]): string {
  return (
    `__import__('${STATIC_MODULE}', fromlist=['x']).output_states(${JSON.stringify(ids)}) ` +
    "if __import__('importlib.util', fromlist=['x']).find_spec('jupyter_codelia') else '{}'"
  );
}

/**
 * Ask the kernel about the codelia widget outputs of `cells` (the `parked` ones too), then
 * apply its answer; how many outputs now differ from the loaded notebook.
 */
export async function restoreOutputs(
  kernel: Kernel.IKernelConnection,
  cells: CellList,
  parked: Parked = new Map()
): Promise<number> {
  const ids = fallbackWidgetIds(cells);
  if (ids.length === 0) {
    return 0;
  }
  const future = kernel.requestExecute(
    {
      code: '',
      silent: true,
      store_history: false,
      allow_stdin: false,
      user_expressions: { states: statesCode(ids) }
    },
    true
  );
  const reply = await future.done;
  const expressions = (reply.content as { user_expressions?: JSONObject })
    .user_expressions;
  const outcome = expressions?.states as
    { status?: string; data?: JSONObject } | undefined;
  const text = outcome?.status === 'ok' ? outcome.data?.['text/plain'] : null;
  const json = typeof text === 'string' ? decodePythonString(text.trim()) : null;
  if (json === null) {
    // An older jupyter-codelia, or a failed request: put back what the notebook had.
    const asLoaded = Object.fromEntries(
      [...parked.keys()].map(id => [id, { live: true }])
    );
    return applyStates(cells, asLoaded, parked);
  }
  return applyStates(cells, JSON.parse(json) as { [id: string]: OutputState }, parked);
}
