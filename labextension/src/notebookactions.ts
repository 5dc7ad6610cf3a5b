/**
 * What the agent's cell tools do to a live notebook (docs/comm-protocol.md "Notebook tools"):
 * read a snapshot, edit cells (insert, replace, delete, move) and undo or keep those edits.
 *
 * Everything works on the notebook's shared model (`ISharedNotebook`), so edits show at once,
 * join the notebook's undo history, are saved by the normal save, and the module is unit-tested
 * on a plain `YNotebook`. Every cell the agent inserts or replaces carries `metadata.codelia`:
 * the kernel's provenance (run, model, prompt) and a `review` part written here, which keeps
 * what the review card needs after a reload: the source before the agent's edits (bounded), a
 * hash of the agent's version (to tell whether the person changed the cell since) and, once the
 * person accepted the edit, when.
 */

import type { ISharedCell, ISharedNotebook } from '@jupyter/ydoc';
import type * as nbformat from '@jupyterlab/nbformat';

import type { JSONObject } from './protocol';

/** The longest source kept in `metadata.codelia.review.before` (the file stays small). */
export const REVIEW_SOURCE_LIMIT = 10_000;

/** What the front end keeps in `metadata.codelia.review` for the review card. */
export interface ReviewRecord {
  /** The source before the agent's first unaccepted edit; null: the agent made the cell. */
  before?: string | null;
  /** The earlier source was longer than `REVIEW_SOURCE_LIMIT`, so it was not kept. */
  before_omitted?: boolean;
  /** `sourceHash` of the source the agent left. */
  after_hash?: string;
  /** When the person kept the agent's version (ISO time). */
  accepted_at?: string;
}

/** What the kernel stores in `metadata.codelia` of a cell the agent made or changed. */
export interface Provenance {
  session_id?: string | null;
  run_id?: string | null;
  tool_call_id?: string | null;
  model?: string | null;
  action?: string;
  at?: string;
  prompt?: string;
  review?: ReviewRecord;
}

/** One applied agent edit, kept so the kernel's `revert` and the side panel can undo it. */
export interface EditRecord {
  edit_id: string;
  op: 'insert' | 'replace' | 'delete' | 'move';
  cell_id: string;
  index: number;
  before: nbformat.ICell | null;
  after_source: string | null;
  from_index?: number;
  provenance: Provenance | null;
  reverted: boolean;
  /** Kept by the person: no longer offered for revert. */
  accepted: boolean;
}

/** A request the notebook cannot serve; its message goes back to the kernel as the error. */
export class RequestFailed extends Error {}

/** FNV-1a over the UTF-16 units of `source`, as hex: tells "still the agent's version". */
export function sourceHash(source: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < source.length; i++) {
    hash ^= source.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

function nbSource(source: nbformat.MultilineString): string {
  return Array.isArray(source) ? source.join('') : source;
}

/** The provenance of a cell the agent made or changed (undefined for others). */
export function provenanceOf(cell: ISharedCell): Provenance | undefined {
  const value = cell.getMetadata('codelia');
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Provenance)
    : undefined;
}

/** Whether the cell carries agent work the person has not accepted yet (it shows a badge). */
export function awaitsReview(provenance: Provenance | undefined): boolean {
  return !!provenance && !provenance.review?.accepted_at;
}

/** What the person sees of the page the notebook is in (for a snapshot). */
export interface PageState {
  path: string;
  activeCellId: string | null;
  editingCellId: string | null;
  dirty: boolean;
}

/** Every open notebook's actions, so the side panel's edit cards can revert an edit. */
const openNotebooks = new Set<NotebookActions>();

/** The notebook of this page holding edit `editId`, if any. */
export function notebookWithEdit(editId: string): NotebookActions | null {
  return [...openNotebooks].find(n => n.edits.some(e => e.edit_id === editId)) ?? null;
}

export class NotebookActions {
  /**
   * @param notebook - the shared model, or null while the notebook loads.
   * @param newId - ids for edits (injected so tests are deterministic).
   * @param now - ISO time now (injected likewise).
   */
  constructor(
    private readonly notebook: () => ISharedNotebook | null,
    private readonly newId: () => string,
    private readonly now: () => string = () => new Date().toISOString()
  ) {
    openNotebooks.add(this);
  }

  readonly edits: EditRecord[] = [];

  dispose(): void {
    openNotebooks.delete(this);
  }

  get shared(): ISharedNotebook {
    const shared = this.notebook();
    if (!shared) {
      throw new RequestFailed('the notebook is not loaded yet');
    }
    return shared;
  }

  indexOf(cellId: string): number {
    const cells = this.notebook()?.cells ?? [];
    return cells.findIndex(cell => cell.getId() === cellId);
  }

  cell(cellId: string): ISharedCell | null {
    return this.notebook()?.cells.find(cell => cell.getId() === cellId) ?? null;
  }

  // ------------------------------------------------------------------ snapshot

  /** One cell as the kernel reads it (outputs only when asked: they can be large). */
  cellView(cell: ISharedCell, withOutputs: boolean, index?: number): JSONObject {
    const view: JSONObject = {
      id: cell.getId(),
      cell_type: cell.cell_type,
      source: cell.getSource()
    };
    if (index !== undefined) {
      view.index = index;
    }
    const provenance = provenanceOf(cell);
    if (provenance) {
      // The review part is the card's business: snapshots stay small.
      const { review: _review, ...rest } = provenance;
      void _review;
      view.metadata = { codelia: rest };
    } else {
      view.metadata = {};
    }
    if (cell.cell_type === 'code') {
      const code = cell as unknown as {
        execution_count: number | null;
        executionState: string;
        getOutputs(): nbformat.IOutput[];
      };
      const outputs = code.getOutputs();
      view.execution_count = code.execution_count;
      view.running = code.executionState === 'running';
      view.output_types = outputs.map(output => output.output_type);
      if (withOutputs) {
        view.outputs = outputs as unknown as JSONObject[];
      }
    }
    return view;
  }

  snapshot(params: JSONObject, page: PageState): JSONObject {
    const wanted = params.outputs_for;
    const withOutputs = new Set(Array.isArray(wanted) ? (wanted as string[]) : []);
    const cells = this.shared.cells.map(cell =>
      this.cellView(cell, wanted === 'all' || withOutputs.has(cell.getId()))
    );
    return {
      path: page.path,
      cells,
      active_cell_id: page.activeCellId,
      editing_cell_id: page.editingCellId,
      dirty: page.dirty
    };
  }

  // ------------------------------------------------------------------ edit

  /** Apply one `edit` request; `isTyping(cellId)`: the person is typing in that cell now. */
  edit(params: JSONObject, isTyping: (cellId: string) => boolean): JSONObject {
    const shared = this.shared;
    const provenance = (params.provenance ?? null) as Provenance | null;
    const op = params.op as EditRecord['op'];
    const editId = this.newId();
    const cellId = String(params.cell_id ?? '');
    let index = cellId ? this.indexOf(cellId) : -1;
    if (op !== 'insert' && index < 0) {
      throw new RequestFailed(`no cell with id ${cellId} (it was deleted meanwhile)`);
    }
    const record: EditRecord = {
      edit_id: editId,
      op,
      cell_id: cellId,
      index,
      before: null,
      after_source: null,
      provenance,
      reverted: false,
      accepted: false
    };
    if (op === 'insert') {
      index = Math.min(Number(params.index ?? shared.cells.length), shared.cells.length);
      const source = String(params.source ?? '');
      const metadata = (
        provenance ? { codelia: this.withReview(provenance, null, source) } : {}
      ) as nbformat.ICellMetadata;
      const created =
        params.cell_type === 'markdown'
          ? shared.insertCell(index, { cell_type: 'markdown', source, metadata })
          : shared.insertCell(index, {
              cell_type: 'code',
              source,
              metadata,
              outputs: [],
              execution_count: null
            });
      record.cell_id = created.getId();
      record.index = index;
      record.after_source = source;
    } else {
      const cell = shared.cells[index];
      const current = cell.getSource();
      if (op !== 'move' && params.expected_source !== current) {
        throw new RequestFailed(
          `cell #${index} changed since it was read (the user edited it); nothing was ` +
            'changed: read it again'
        );
      }
      if (op !== 'move' && isTyping(cellId)) {
        throw new RequestFailed(
          `the user is typing in cell #${index} right now; it was not changed`
        );
      }
      record.before = cell.toJSON() as nbformat.ICell;
      if (op === 'replace') {
        const source = String(params.source ?? '');
        shared.transact(() => {
          cell.setSource(source);
          if (provenance) {
            // Edits the person has not accepted yet add up: the card shows them all.
            const pending = awaitsReview(provenanceOf(cell))
              ? provenanceOf(cell)?.review
              : undefined;
            const known = pending !== undefined && 'before' in pending;
            const before = known ? (pending.before ?? null) : current;
            const omitted = !!pending?.before_omitted;
            cell.setMetadata(
              'codelia',
              this.withReview(provenance, before, source, omitted) as never
            );
          }
        });
        record.after_source = source;
      } else if (op === 'delete') {
        shared.deleteCell(index);
      } else if (op === 'move') {
        const target = Math.min(Number(params.index ?? index), shared.cells.length - 1);
        record.from_index = index;
        shared.moveCell(index, target);
        index = target;
        record.index = target;
      }
    }
    this.edits.push(record);
    return { edit_id: editId, cell_id: record.cell_id, index };
  }

  /** The provenance with its review part: the earlier source (bounded) and the agent's hash. */
  private withReview(
    provenance: Provenance,
    before: string | null,
    after: string,
    omitted = false
  ): Provenance {
    const review: ReviewRecord = { after_hash: sourceHash(after) };
    if (omitted || (before !== null && before.length > REVIEW_SOURCE_LIMIT)) {
      review.before_omitted = true;
    } else {
      review.before = before;
    }
    return { ...provenance, review };
  }

  // ------------------------------------------------------------------ revert and accept

  /** Undo one agent edit by its id (refused when the person changed the cell since). */
  revert(editId: string): string | null {
    const record = this.edits.find(e => e.edit_id === editId);
    if (!record || record.reverted) {
      return 'this edit is unknown or already reverted';
    }
    if (record.accepted) {
      return 'this edit was accepted';
    }
    const shared = this.shared;
    const index = this.indexOf(record.cell_id);
    if (record.op === 'insert') {
      if (index < 0) {
        return 'the inserted cell no longer exists';
      }
      shared.deleteCell(index);
    } else if (record.op === 'replace' && record.before) {
      if (index < 0) {
        return 'the edited cell no longer exists';
      }
      const cell = shared.cells[index];
      if (cell.getSource() !== record.after_source) {
        return 'the cell changed after the agent edited it; undo by hand';
      }
      const before = record.before;
      shared.transact(() => {
        cell.setSource(nbSource(before.source));
        const old = before.metadata?.codelia;
        if (old) {
          cell.setMetadata('codelia', old as never);
        } else {
          cell.deleteMetadata('codelia');
        }
      });
    } else if (record.op === 'delete' && record.before) {
      shared.insertCell(
        Math.min(record.index, shared.cells.length),
        record.before as never
      );
    } else if (record.op === 'move' && record.from_index !== undefined && index >= 0) {
      shared.moveCell(index, record.from_index);
    }
    record.reverted = true;
    return null;
  }

  /**
   * Put a cell back as it was before the agent's unaccepted edits, from its metadata (works
   * after a reload): an agent-made cell is deleted, a changed one gets its earlier source.
   */
  revertCell(cellId: string): string | null {
    const index = this.indexOf(cellId);
    const cell = index < 0 ? null : this.shared.cells[index];
    const provenance = cell ? provenanceOf(cell) : undefined;
    if (!cell || !awaitsReview(provenance)) {
      return 'this cell has no agent edit to revert';
    }
    const review = provenance?.review ?? {};
    if (review.after_hash !== sourceHash(cell.getSource())) {
      return 'you changed the cell after the agent edited it; undo by hand';
    }
    if (review.before_omitted || review.before === undefined) {
      return 'the source before the edit was too long to keep; undo by hand (Ctrl+Z)';
    }
    const before = review.before;
    if (before === null) {
      this.shared.deleteCell(index);
    } else {
      this.shared.transact(() => {
        cell.setSource(before);
        cell.deleteMetadata('codelia');
      });
    }
    for (const record of this.edits) {
      if (
        record.cell_id === cellId &&
        (record.op === 'insert' || record.op === 'replace')
      ) {
        record.reverted = true;
      }
    }
    return null;
  }

  /** Keep the agent's version of a cell: no badge, no revert; persisted in its metadata. */
  acceptCell(cellId: string): boolean {
    const cell = this.cell(cellId);
    const provenance = cell ? provenanceOf(cell) : undefined;
    if (!cell || !provenance || !awaitsReview(provenance)) {
      return false;
    }
    // The earlier source is no longer needed once the person kept the edit.
    cell.setMetadata('codelia', {
      ...provenance,
      review: { after_hash: provenance.review?.after_hash, accepted_at: this.now() }
    } as never);
    for (const record of this.edits) {
      if (record.cell_id === cellId) {
        record.accepted = true;
      }
    }
    return true;
  }

  /** The ids of the cells of run `runId` that still await review, in notebook order. */
  cellsOfRun(runId: string): string[] {
    return this.shared.cells
      .filter(cell => {
        const provenance = provenanceOf(cell);
        return awaitsReview(provenance) && provenance?.run_id === runId;
      })
      .map(cell => cell.getId());
  }

  /** Keep every edit of one run; returns how many cells were accepted. */
  acceptRun(runId: string): number {
    let count = 0;
    for (const cellId of this.cellsOfRun(runId)) {
      count += this.acceptCell(cellId) ? 1 : 0;
    }
    for (const record of this.edits) {
      if (record.provenance?.run_id === runId) {
        record.accepted = true;
      }
    }
    return count;
  }

  /**
   * Undo every edit of one run: deletions and moves of this page's session first (newest
   * first; a cell's metadata cannot hold them), then each cell it made or changed. Returns how
   * many were undone and what could not be.
   */
  revertRun(runId: string): { reverted: number; problems: string[] } {
    let reverted = 0;
    const problems: string[] = [];
    for (const record of [...this.edits].reverse()) {
      const open = !record.reverted && !record.accepted;
      if (open && record.provenance?.run_id === runId) {
        if (record.op === 'delete' || record.op === 'move') {
          const problem = this.revert(record.edit_id);
          reverted += problem === null ? 1 : 0;
        }
      }
    }
    for (const cellId of this.cellsOfRun(runId)) {
      const problem = this.revertCell(cellId);
      if (problem === null) {
        reverted += 1;
      } else {
        problems.push(problem);
      }
    }
    return { reverted, problems };
  }
}

// ---------------------------------------------------------------------- run

export type RunStatus = 'running' | 'done' | 'error' | 'skipped' | 'interrupted';
export type RunChannel = 'main' | 'subshell';

interface RunJob {
  cellId: string;
  done: Promise<void>;
  finished: boolean;
  status: RunStatus;
  reported: boolean;
}

/** How the runner reaches the notebook's cells (the page's widgets, or a test's stand-in). */
export interface CellExecutor {
  /** Whether a cell with this id is in the notebook. */
  exists(cellId: string): boolean;
  /** Run one cell to its end; its final status. */
  execute(cellId: string, channel: RunChannel): Promise<Exclude<RunStatus, 'running'>>;
  /** Interrupt the kernel (only on the main channel). */
  interrupt(): Promise<void>;
  /** The cell as the kernel reads it, with its outputs (null when it was deleted). */
  view(cellId: string): JSONObject | null;
}

/**
 * The `run` action: cells run in order, each after the previous one succeeded (a failure skips
 * the rest); a request waits at most `wait_seconds`, and a cell still running then is awaited
 * again, not run again, by the next request that names it.
 */
export class CellRunner {
  constructor(private readonly cells: CellExecutor) {}

  async run(params: JSONObject): Promise<JSONObject> {
    const ids = (params.cell_ids ?? []) as string[];
    const waitMs = Math.max(0, Number(params.wait_seconds ?? 30)) * 1000;
    const channel: RunChannel = params.channel === 'subshell' ? 'subshell' : 'main';
    for (const id of ids) {
      if (!this.cells.exists(id)) {
        throw new RequestFailed(
          `no cell with id ${id}; call notebook_read() for the ids`
        );
      }
    }
    if (params.interrupt) {
      if (channel === 'subshell') {
        throw new RequestFailed(
          'cannot interrupt: the cells run beside a blocking %%codelia cell and an interrupt ' +
            'would stop that run too; ask the user to press the stop button'
        );
      }
      await this.cells.interrupt();
    }
    let previous: Promise<boolean> = Promise.resolve(true);
    const jobs: RunJob[] = [];
    for (const id of ids) {
      let job = this.jobs.get(id);
      if (!job || (job.finished && job.reported)) {
        const after = previous;
        const current: RunJob = {
          cellId: id,
          done: Promise.resolve(),
          finished: false,
          status: 'running',
          reported: false
        };
        const outcome = after.then(ok =>
          ok ? this.execute(current, channel) : this.skip(current)
        );
        current.done = outcome.then(() => undefined);
        previous = outcome;
        this.jobs.set(id, current);
        job = current;
      } else {
        const current = job;
        previous = job.done.then(() => current.status === 'done');
      }
      jobs.push(job);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(jobs.map(j => j.done)),
      new Promise<void>(resolve => {
        timer = setTimeout(resolve, waitMs);
      })
    ]);
    clearTimeout(timer);
    const cells: JSONObject[] = [];
    for (const job of jobs) {
      const view = this.cells.view(job.cellId);
      if (!view) {
        continue;
      }
      view.status = job.finished ? job.status : 'running';
      if (job.finished) {
        job.reported = true;
      }
      cells.push(view);
    }
    return { cells };
  }

  private async skip(job: RunJob): Promise<boolean> {
    job.status = 'skipped';
    job.finished = true;
    return false;
  }

  private async execute(job: RunJob, channel: RunChannel): Promise<boolean> {
    try {
      job.status = await this.cells.execute(job.cellId, channel);
    } catch {
      job.status = 'error';
    }
    job.finished = true;
    return job.status === 'done';
  }

  private readonly jobs = new Map<string, RunJob>();
}
