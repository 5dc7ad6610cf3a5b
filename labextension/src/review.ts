/**
 * Reviewing the agent's cell edits in the notebook: every cell whose `metadata.codelia` awaits
 * review shows a "codelia" badge; the badge opens a card with who changed the cell (run, model,
 * prompt), the diff of the agent's edits, and Accept / Revert for the cell and for its whole run.
 * Everything the card shows comes from the cell's metadata, so it is the same after a reload.
 * Accepting keeps the agent's version: the badge goes and the metadata says so. The side panel's
 * edit cards get a Revert button from `revertButton`.
 */

import { Cell } from '@jupyterlab/cells';

import { DiffLine, lineDiff } from './celldiff';
import { button, el } from './dom';
import {
  awaitsReview,
  NotebookActions,
  notebookWithEdit,
  Provenance,
  sourceHash
} from './notebookactions';

const BADGE_CLASS = 'jp-codelia-cell-badge';
const AGENT_CELL_CLASS = 'jp-codelia-agent-cell';
const CARD_CLASS = 'jp-codelia-edit-card';
/** Prompts longer than this are cut in the card (the whole prompt is its tooltip). */
const PROMPT_CHARS = 280;

/** What the review card says about a cell, from its provenance (pure, unit-tested). */
export interface ReviewView {
  /** "Inserted by Codelia" / "Changed by Codelia", with when. */
  heading: string;
  /** Label and value rows: prompt, model, run. */
  rows: { label: string; value: string; title: string }[];
  /** The agent's edits since the person's version; null when the earlier source is unknown. */
  diff: DiffLine[] | null;
  /** Why there is no diff, when there is none. */
  note: string | null;
  /** Whether the cell still holds what the agent wrote (else Revert is refused). */
  unchanged: boolean;
}

function when(iso: string | undefined): string {
  if (!iso) {
    return '';
  }
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function reviewView(provenance: Provenance, source: string): ReviewView {
  const review = provenance.review ?? {};
  const inserted = review.before === null || provenance.action === 'insert';
  const at = when(provenance.at);
  const heading = `${inserted ? 'Inserted' : 'Changed'} by Codelia${at ? ` · ${at}` : ''}`;
  const rows: ReviewView['rows'] = [];
  const prompt = provenance.prompt ?? '';
  if (prompt) {
    const cut =
      prompt.length > PROMPT_CHARS ? `${prompt.slice(0, PROMPT_CHARS)}…` : prompt;
    rows.push({ label: 'Prompt', value: cut, title: prompt });
  }
  if (provenance.model) {
    rows.push({ label: 'Model', value: provenance.model, title: provenance.model });
  }
  if (provenance.run_id) {
    const session = provenance.session_id ? ` of session ${provenance.session_id}` : '';
    rows.push({
      label: 'Run',
      value: provenance.run_id.slice(0, 8),
      title: `run ${provenance.run_id}${session}`
    });
  }
  const unchanged = review.after_hash === sourceHash(source);
  let diff: DiffLine[] | null = null;
  let note: string | null = null;
  if (review.before_omitted) {
    note = 'The source before the edit was too long to keep, so there is no diff.';
  } else if (review.before === undefined) {
    note = 'This notebook has no record of the source before the edit.';
  } else {
    diff = lineDiff(review.before ?? '', source);
    if (!unchanged) {
      note = 'You changed the cell since: the diff includes your changes.';
    }
  }
  return { heading, rows, diff, note, unchanged };
}

/**
 * A Revert button for a tool card whose result's data names a notebook edit (side panel), or
 * null when it names none of a notebook open in this page.
 */
export function revertButton(editId: string | null): HTMLElement | null {
  const owner = editId !== null ? notebookWithEdit(editId) : null;
  if (!owner || editId === null) {
    return null;
  }
  const row = el('div', 'jp-codelia-edit-actions');
  const status = el('span');
  const reverted = () => owner.edits.find(e => e.edit_id === editId)?.reverted === true;
  const revert = button('Revert', 'jp-mod-warn jp-codelia-edit-revert', () => {
    const problem = owner.revert(editId);
    status.textContent = problem ?? 'Reverted.';
    revert.disabled = reverted();
  });
  revert.disabled = reverted();
  status.textContent = reverted() ? 'Reverted.' : '';
  row.append(revert, status);
  return row;
}

/** The badges and review cards of one notebook's cells. */
export class ReviewBadges {
  constructor(
    private readonly cells: () => readonly Cell[],
    private readonly actions: NotebookActions
  ) {}

  /** Mark every cell whose metadata says the agent made or changed it and awaits review. */
  refresh(): void {
    for (const widget of this.cells()) {
      const provenance = widget.model.getMetadata('codelia') as Provenance | undefined;
      const pending = awaitsReview(provenance);
      const existing = widget.node.querySelector(`:scope > .${BADGE_CLASS}`);
      widget.toggleClass(AGENT_CELL_CLASS, pending);
      if (!pending || !provenance) {
        existing?.remove();
        widget.node.querySelector(`:scope > .${CARD_CLASS}`)?.remove();
        continue;
      }
      const badge = (existing as HTMLElement | null) ?? this.makeBadge(widget);
      badge.title = `${reviewView(provenance, widget.model.sharedModel.getSource()).heading}: open the review`;
    }
  }

  private makeBadge(widget: Cell): HTMLElement {
    const badge = button('codelia', BADGE_CLASS, () => this.toggleCard(widget));
    badge.setAttribute('aria-haspopup', 'dialog');
    badge.addEventListener('click', event => event.stopPropagation());
    widget.node.appendChild(badge);
    return badge;
  }

  /** Open (or close) the review card of a cell. */
  toggleCard(widget: Cell): void {
    const open = widget.node.querySelector(`:scope > .${CARD_CLASS}`);
    if (open) {
      open.remove();
      return;
    }
    const cellId = widget.model.id;
    const provenance = widget.model.getMetadata('codelia') as Provenance | undefined;
    if (!provenance) {
      return;
    }
    const view = reviewView(provenance, widget.model.sharedModel.getSource());
    const card = el('div', CARD_CLASS);
    card.setAttribute('role', 'dialog');
    card.setAttribute('aria-label', view.heading);
    card.addEventListener('click', event => event.stopPropagation());
    card.appendChild(el('div', 'jp-codelia-edit-heading', view.heading));
    const facts = el('dl', 'jp-codelia-edit-facts');
    for (const row of view.rows) {
      const value = el('dd', `jp-codelia-edit-${row.label.toLowerCase()}`, row.value);
      value.title = row.title;
      facts.append(el('dt', undefined, row.label), value);
    }
    card.appendChild(facts);
    if (view.diff) {
      // Styled like the side panel's diffs (base.css).
      const diff = el('pre', 'jp-codelia-diff jp-codelia-edit-diff');
      for (const line of view.diff) {
        const kind = line.sign === '+' ? 'add' : line.sign === '-' ? 'del' : 'ctx';
        diff.appendChild(
          el('div', `jp-codelia-diff-${kind}`, `${line.sign} ${line.text}`)
        );
      }
      card.appendChild(diff);
    }
    if (view.note) {
      card.appendChild(el('div', 'jp-codelia-edit-note', view.note));
    }
    const status = el('div', 'jp-codelia-edit-status');
    status.setAttribute('role', 'status');
    const actions = el('div', 'jp-codelia-edit-buttons');
    const done = (problem: string | null) => {
      if (problem) {
        status.textContent = problem;
      } else {
        card.remove();
        this.refresh();
      }
    };
    actions.append(
      button(
        'Accept',
        'jp-mod-accept jp-codelia-edit-accept',
        () => done(this.actions.acceptCell(cellId) ? null : 'nothing to accept here'),
        'Keep the agent’s version of this cell'
      ),
      button(
        'Revert',
        'jp-mod-warn jp-codelia-edit-revert',
        () => done(this.actions.revertCell(cellId)),
        'Put the cell back as it was before the agent'
      )
    );
    const runId = provenance.run_id;
    if (runId) {
      const others = this.actions.cellsOfRun(runId).length;
      actions.append(
        button(
          `Accept run (${others})`,
          'jp-codelia-edit-accept-run',
          () => done(this.actions.acceptRun(runId) > 0 ? null : 'nothing left to accept'),
          'Keep every cell this run made or changed'
        ),
        button(
          'Revert run',
          'jp-codelia-edit-revert-run',
          () => {
            const { reverted, problems } = this.actions.revertRun(runId);
            done(
              problems[0] ?? (reverted > 0 ? null : 'nothing left to revert in this run')
            );
          },
          'Undo everything this run did to the notebook'
        )
      );
    }
    card.append(actions, status);
    widget.node.appendChild(card);
    (actions.firstElementChild as HTMLElement | null)?.focus();
  }
}
