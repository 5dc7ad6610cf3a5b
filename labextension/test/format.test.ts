import { describe, expect, it } from 'vitest';

import { formatBytes, formatDuration, formatTokens } from '../src/dom';

describe('meter and card formatting', () => {
  it('abbreviates token counts', () => {
    expect(formatTokens(0)).toBe('0');
    expect(formatTokens(999)).toBe('999');
    expect(formatTokens(4400)).toBe('4.4k');
    expect(formatTokens(17_250)).toBe('17k');
    expect(formatTokens(2_500_000)).toBe('2.50M');
  });

  it('formats durations from milliseconds to minutes', () => {
    expect(formatDuration(42)).toBe('42 ms');
    expect(formatDuration(1500)).toBe('1.5 s');
    expect(formatDuration(125_000)).toBe('2 min 5 s');
  });

  it('formats sizes', () => {
    expect(formatBytes(29)).toBe('29 B');
    expect(formatBytes(3482)).toBe('3.4 KB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5.0 MB');
  });
});
