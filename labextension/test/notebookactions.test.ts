import { YNotebook } from '@jupyter/ydoc';
import { describe, expect, it } from 'vitest';

import {
  CellExecutor,
  CellRunner,
  NotebookActions,
  notebookWithEdit,
  PageState,
  provenanceOf,
  REVIEW_SOURCE_LIMIT,
  RunStatus,
  sourceHash
} from '../src/notebookactions';
import { JSONObject } from '../src/protocol';

const PAGE: PageState = {
  path: 'n.ipynb',
  activeCellId: null,
  editingCellId: null,
  dirty: false
};
const RUN = { run_id: 'run-1', session_id: 's-1', model: 'claude-x', prompt: 'tidy up' };

function notebook(sources: string[]): { shared: YNotebook; actions: NotebookActions } {
  const shared = YNotebook.create();
  sources.forEach((source, index) =>
    shared.insertCell(index, { cell_type: 'code', source, metadata: {} })
  );
  let counter = 0;
  const actions = new NotebookActions(
    () => shared,
    () => `edit-${++counter}`,
    () => '2026-01-02T03:04:05Z'
  );
  return { shared, actions };
}

const never = () => false;

describe('agent edits on the shared notebook', () => {
  it('inserts with provenance and a review record, and reverts by edit id', () => {
    const { shared, actions } = notebook(['a = 1']);
    const result = actions.edit(
      {
        op: 'insert',
        index: 1,
        cell_type: 'code',
        source: 'b = 2',
        provenance: { ...RUN, action: 'insert' }
      },
      never
    );
    expect(result).toEqual({
      edit_id: 'edit-1',
      cell_id: shared.cells[1].getId(),
      index: 1
    });
    const provenance = provenanceOf(shared.cells[1])!;
    expect(provenance.prompt).toBe('tidy up');
    expect(provenance.review).toEqual({ before: null, after_hash: sourceHash('b = 2') });
    expect(notebookWithEdit('edit-1')).toBe(actions);
    expect(actions.revert('edit-1')).toBeNull();
    expect(shared.cells.map(c => c.getSource())).toEqual(['a = 1']);
    expect(actions.revert('edit-1')).toBe('this edit is unknown or already reverted');
    actions.dispose();
    expect(notebookWithEdit('edit-1')).toBeNull();
  });

  it('refuses a replace when the cell changed since it was read or is being typed in', () => {
    const { shared, actions } = notebook(['a = 1']);
    const id = shared.cells[0].getId();
    expect(() =>
      actions.edit(
        { op: 'replace', cell_id: id, expected_source: 'a = 0', source: 'x' },
        never
      )
    ).toThrow('cell #0 changed since it was read (the user edited it)');
    expect(() =>
      actions.edit(
        { op: 'replace', cell_id: id, expected_source: 'a = 1', source: 'x' },
        cellId => cellId === id
      )
    ).toThrow('the user is typing in cell #0 right now; it was not changed');
    expect(() => actions.edit({ op: 'delete', cell_id: 'gone' }, never)).toThrow(
      'no cell with id gone (it was deleted meanwhile)'
    );
    expect(shared.cells[0].getSource()).toBe('a = 1');
  });

  it('keeps the source before the first unaccepted edit, so the card shows them all', () => {
    const { shared, actions } = notebook(['a = 1']);
    const id = shared.cells[0].getId();
    const replace = (from: string, to: string) =>
      actions.edit(
        {
          op: 'replace',
          cell_id: id,
          expected_source: from,
          source: to,
          provenance: { ...RUN, action: 'replace' }
        },
        never
      );
    replace('a = 1', 'a = 2');
    replace('a = 2', 'a = 3');
    expect(provenanceOf(shared.cells[0])!.review).toEqual({
      before: 'a = 1',
      after_hash: sourceHash('a = 3')
    });
    // Reverting the cell (as after a reload: from its metadata) goes back to the person's.
    expect(actions.revertCell(id)).toBeNull();
    expect(shared.cells[0].getSource()).toBe('a = 1');
    expect(provenanceOf(shared.cells[0])).toBeUndefined();
  });

  it('does not keep a very long earlier source, and says why it cannot revert', () => {
    const long = 'x'.repeat(REVIEW_SOURCE_LIMIT + 1);
    const { shared, actions } = notebook([long]);
    const id = shared.cells[0].getId();
    actions.edit(
      { op: 'replace', cell_id: id, expected_source: long, source: 'y', provenance: RUN },
      never
    );
    expect(provenanceOf(shared.cells[0])!.review).toEqual({
      before_omitted: true,
      after_hash: sourceHash('y')
    });
    expect(actions.revertCell(id)).toBe(
      'the source before the edit was too long to keep; undo by hand (Ctrl+Z)'
    );
  });

  it('will not revert a cell the person changed since the agent edited it', () => {
    const { shared, actions } = notebook(['a = 1']);
    const id = shared.cells[0].getId();
    actions.edit(
      {
        op: 'replace',
        cell_id: id,
        expected_source: 'a = 1',
        source: 'a = 2',
        provenance: RUN
      },
      never
    );
    shared.cells[0].setSource('a = 2  # mine');
    expect(actions.revertCell(id)).toBe(
      'you changed the cell after the agent edited it; undo by hand'
    );
    expect(actions.revert('edit-1')).toBe(
      'the cell changed after the agent edited it; undo by hand'
    );
  });

  it('accepts a run: the cells keep the agent version and say so in their metadata', () => {
    const { shared, actions } = notebook(['a = 1', 'b = 1']);
    const [first, second] = shared.cells.map(c => c.getId());
    for (const [id, from] of [
      [first, 'a = 1'],
      [second, 'b = 1']
    ]) {
      actions.edit(
        {
          op: 'replace',
          cell_id: id,
          expected_source: from,
          source: 'z',
          provenance: RUN
        },
        never
      );
    }
    expect(actions.cellsOfRun('run-1')).toEqual([first, second]);
    expect(actions.acceptRun('run-1')).toBe(2);
    const review = provenanceOf(shared.cells[0])!.review;
    expect(review).toEqual({
      after_hash: sourceHash('z'),
      accepted_at: '2026-01-02T03:04:05Z'
    });
    expect(actions.cellsOfRun('run-1')).toEqual([]);
    expect(actions.revert('edit-1')).toBe('this edit was accepted');
    expect(actions.revertCell(first)).toBe('this cell has no agent edit to revert');
    // A later agent edit of an accepted cell starts a new review from the accepted version.
    actions.edit(
      {
        op: 'replace',
        cell_id: first,
        expected_source: 'z',
        source: 'zz',
        provenance: RUN
      },
      never
    );
    expect(provenanceOf(shared.cells[0])!.review?.before).toBe('z');
  });

  it('reverts a whole run, deletions and moves included', () => {
    const { shared, actions } = notebook(['a', 'b', 'c']);
    const [a, b, c] = shared.cells.map(cell => cell.getId());
    actions.edit(
      { op: 'delete', cell_id: b, expected_source: 'b', provenance: RUN },
      never
    );
    actions.edit({ op: 'move', cell_id: c, index: 0, provenance: RUN }, never);
    actions.edit(
      { op: 'insert', index: 2, cell_type: 'code', source: 'new', provenance: RUN },
      never
    );
    expect(shared.cells.map(cell => cell.getSource())).toEqual(['c', 'a', 'new']);
    const { reverted, problems } = actions.revertRun('run-1');
    expect(problems).toEqual([]);
    expect(reverted).toBe(3);
    expect(shared.cells.map(cell => cell.getId())).toEqual([a, b, c]);
  });

  it('snapshots the cells without the review record', () => {
    const { shared, actions } = notebook(['print(1)']);
    actions.edit(
      { op: 'insert', index: 1, cell_type: 'markdown', source: '# T', provenance: RUN },
      never
    );
    const snapshot = actions.snapshot({ outputs_for: [shared.cells[0].getId()] }, PAGE);
    const cells = snapshot.cells as JSONObject[];
    expect(snapshot.path).toBe('n.ipynb');
    expect(cells[0]).toMatchObject({
      cell_type: 'code',
      source: 'print(1)',
      execution_count: null,
      running: false,
      output_types: [],
      outputs: [],
      metadata: {}
    });
    expect(cells[1].metadata).toEqual({ codelia: RUN });
    expect(cells[1].outputs).toBeUndefined();
  });
});

describe('running cells for notebook_run', () => {
  function cells(outcomes: { [id: string]: Exclude<RunStatus, 'running'> }): {
    executor: CellExecutor;
    ran: string[];
    release: (id: string) => void;
  } {
    const ran: string[] = [];
    const finish = new Map<string, () => void>();
    const released = new Set<string>();
    const executor: CellExecutor = {
      exists: id => id in outcomes,
      interrupt: async () => undefined,
      view: id => ({ id }),
      execute: id => {
        ran.push(id);
        return new Promise(resolve => {
          const end = () => resolve(outcomes[id]);
          if (released.has(id)) {
            end();
          } else {
            finish.set(id, end);
          }
        });
      }
    };
    const release = (id: string) => {
      released.add(id);
      finish.get(id)?.();
    };
    return { executor, ran, release };
  }

  it('runs in order, skips the rest after a failure, and awaits a running cell again', async () => {
    const { executor, ran, release } = cells({ a: 'done', b: 'error', c: 'done' });
    const runner = new CellRunner(executor);
    const first = runner.run({ cell_ids: ['a', 'b', 'c'], wait_seconds: 0 });
    const early = await first;
    expect(early.cells).toEqual([
      { id: 'a', status: 'running' },
      { id: 'b', status: 'running' },
      { id: 'c', status: 'running' }
    ]);
    release('a');
    release('b');
    const later = await runner.run({ cell_ids: ['a', 'b', 'c'], wait_seconds: 5 });
    expect(later.cells).toEqual([
      { id: 'a', status: 'done' },
      { id: 'b', status: 'error' },
      { id: 'c', status: 'skipped' }
    ]);
    expect(ran).toEqual(['a', 'b']); // awaited again, never run twice
  });

  it('refuses unknown cells and an interrupt beside a blocking cell', async () => {
    const runner = new CellRunner(cells({ a: 'done' }).executor);
    await expect(runner.run({ cell_ids: ['nope'] })).rejects.toThrow(
      'no cell with id nope; call notebook_read() for the ids'
    );
    await expect(
      runner.run({ cell_ids: ['a'], interrupt: true, channel: 'subshell' })
    ).rejects.toThrow('cannot interrupt: the cells run beside a blocking %%codelia cell');
  });
});
