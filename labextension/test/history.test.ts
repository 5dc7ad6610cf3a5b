import { describe, expect, it } from 'vitest';

import { chooseRoute } from '../src/history';

describe('where past sessions are read', () => {
  const kernel = { home: '/home/jovyan/.local/share/jupyter/codelia', store_id: 'a' };

  it('uses the server only when it sees the kernel’s very store', () => {
    expect(chooseRoute(kernel, { home: '/elsewhere', store_id: 'a' })).toBe('server');
    // The same path on another host is another store.
    expect(chooseRoute(kernel, { home: kernel.home, store_id: 'b' })).toBe('kernel');
    expect(chooseRoute(kernel, { home: kernel.home, store_id: null })).toBe('kernel');
    expect(chooseRoute(kernel, null)).toBe('kernel');
  });

  it('asks a kernel that reports no store id itself', () => {
    expect(chooseRoute(undefined, { home: '/x', store_id: 'a' })).toBe('kernel');
    expect(
      chooseRoute({ home: '/x', store_id: null }, { home: '/x', store_id: null })
    ).toBe('kernel');
  });
});
