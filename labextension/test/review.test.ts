import { describe, expect, it } from 'vitest';

import { sourceHash } from '../src/notebookactions';
import { reviewView } from '../src/review';

const PROVENANCE = {
  session_id: 'session-42',
  run_id: 'a1b2c3d4e5f6',
  model: 'claude-sonnet-4-5',
  action: 'replace',
  at: '2026-01-02T03:04:05Z',
  prompt: 'make the plot readable'
};

describe('the review card of an agent-made cell', () => {
  it('shows prompt, model and run, and the diff from the kept earlier source', () => {
    const view = reviewView(
      {
        ...PROVENANCE,
        review: { before: 'plot(x)', after_hash: sourceHash('plot(x, y)') }
      },
      'plot(x, y)'
    );
    expect(view.heading.startsWith('Changed by Codelia · ')).toBe(true);
    expect(view.rows).toEqual([
      {
        label: 'Prompt',
        value: 'make the plot readable',
        title: 'make the plot readable'
      },
      { label: 'Model', value: 'claude-sonnet-4-5', title: 'claude-sonnet-4-5' },
      { label: 'Run', value: 'a1b2c3d4', title: 'run a1b2c3d4e5f6 of session session-42' }
    ]);
    expect(view.diff).toEqual([
      { sign: '-', text: 'plot(x)' },
      { sign: '+', text: 'plot(x, y)' }
    ]);
    expect(view.unchanged).toBe(true);
    expect(view.note).toBeNull();
  });

  it('says when the person changed the cell since, or the earlier source is unknown', () => {
    const changed = reviewView(
      { ...PROVENANCE, review: { before: 'a', after_hash: sourceHash('b') } },
      'b  # mine'
    );
    expect(changed.unchanged).toBe(false);
    expect(changed.note).toBe(
      'You changed the cell since: the diff includes your changes.'
    );
    const legacy = reviewView(PROVENANCE, 'anything');
    expect(legacy.diff).toBeNull();
    expect(legacy.note).toBe(
      'This notebook has no record of the source before the edit.'
    );
    const long = reviewView(
      { ...PROVENANCE, review: { before_omitted: true, after_hash: sourceHash('x') } },
      'x'
    );
    expect(long.note).toBe(
      'The source before the edit was too long to keep, so there is no diff.'
    );
  });

  it('shows an inserted cell as all added, and cuts a long prompt', () => {
    const prompt = 'p'.repeat(400);
    const view = reviewView(
      {
        ...PROVENANCE,
        action: 'insert',
        prompt,
        review: { before: null, after_hash: sourceHash('x = 1\ny') }
      },
      'x = 1\ny'
    );
    expect(view.heading.startsWith('Inserted by Codelia')).toBe(true);
    expect(view.diff?.map(line => line.sign)).toEqual(['+', '+']);
    expect(view.rows[0].value).toBe(`${'p'.repeat(280)}…`);
    expect(view.rows[0].title).toBe(prompt);
  });
});
