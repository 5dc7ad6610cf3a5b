import { describe, expect, it } from 'vitest';

import { lineDiff } from '../src/celldiff';

describe('the diff card of an agent cell edit', () => {
  it('shows the changed lines with one line of context', () => {
    expect(lineDiff('a = 1\nb = 2\nc = 3', 'a = 1\nb = 20\nc = 3')).toEqual([
      { sign: ' ', text: 'a = 1' },
      { sign: '-', text: 'b = 2' },
      { sign: '+', text: 'b = 20' }
    ]);
  });

  it('shows an inserted cell as added lines only', () => {
    expect(lineDiff('', 'x = 1\nx')).toEqual([
      { sign: '+', text: 'x = 1' },
      { sign: '+', text: 'x' }
    ]);
  });

  it('shows a deleted cell as removed lines and no change as nothing', () => {
    expect(lineDiff('gone', '')).toEqual([{ sign: '-', text: 'gone' }]);
    expect(lineDiff('same\nlines', 'same\nlines')).toEqual([]);
  });
});
