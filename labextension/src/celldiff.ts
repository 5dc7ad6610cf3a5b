/**
 * The line diff of an agent's cell edit, for the diff card under the cell's codelia badge.
 * Pure (no JupyterLab imports), so it is unit-tested without a DOM.
 */

export interface DiffLine {
  sign: ' ' | '-' | '+';
  text: string;
}

const lines = (text: string): string[] => (text === '' ? [] : text.split('\n'));

/**
 * The changed block of `before` → `after` with one line of leading context: removed lines,
 * then added ones (a cell is short; a full LCS diff is not worth it here).
 */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = lines(before);
  const b = lines(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) {
    start++;
  }
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  if (endA === start && endB === start) {
    return [];
  }
  return [
    ...a.slice(Math.max(0, start - 1), start).map(text => ({ sign: ' ' as const, text })),
    ...a.slice(start, endA).map(text => ({ sign: '-' as const, text })),
    ...b.slice(start, endB).map(text => ({ sign: '+' as const, text }))
  ];
}
