import { describe, expect, it } from 'vitest';

import { argBlocks, editDiff, fencedCode } from '../src/args';

describe('tool arguments as a person reads them', () => {
  it('shows python code as a python block, not an escaped JSON string', () => {
    const code = 'import pandas as pd\nprint("hi")';
    expect(argBlocks({ code, timeout: 30 })).toEqual([
      { kind: 'code', language: 'python', code },
      { kind: 'field', label: 'timeout', value: '30' }
    ]);
  });

  it('shows a shell command with its prompt', () => {
    expect(argBlocks({ command: 'ls -la' })).toEqual([
      { kind: 'code', language: 'bash', code: '$ ls -la' }
    ]);
  });

  it('shows an edit as its path and a diff', () => {
    const blocks = argBlocks({
      file_path: 'a.py',
      old_string: 'x = 1',
      new_string: 'x = 2'
    });
    expect(blocks).toEqual([
      { kind: 'field', label: 'file', value: 'a.py' },
      { kind: 'diff', diff: editDiff('a.py', 'x = 1', 'x = 2') }
    ]);
    expect(editDiff('a.py', 'x = 1', 'x = 2').split('\n')).toEqual([
      '--- a.py',
      '+++ a.py',
      '@@ edit @@',
      '-x = 1',
      '+x = 2'
    ]);
  });

  it('does not repeat a change the card already shows as a diff', () => {
    const edit = { file_path: 'a.py', old_string: 'x = 1', new_string: 'x = 2' };
    expect(argBlocks(edit, true)).toEqual([
      { kind: 'field', label: 'file', value: 'a.py' }
    ]);
    expect(argBlocks({ file_path: 'a.py', content: 'x' }, true)).toEqual([
      { kind: 'field', label: 'file', value: 'a.py' }
    ]);
  });

  it('colours written content by the file type and shows URLs whole', () => {
    expect(argBlocks({ file_path: 'q.sql', content: 'select 1' })).toEqual([
      { kind: 'field', label: 'file', value: 'q.sql' },
      { kind: 'code', language: 'sql', code: 'select 1' }
    ]);
    expect(argBlocks({ url: 'https://example.org/?a=1&b=2' })).toEqual([
      { kind: 'field', label: 'url', value: 'https://example.org/?a=1&b=2' }
    ]);
  });

  it('fences code so backticks inside cannot close the block', () => {
    expect(fencedCode('a ```` b', 'python')).toBe('`````python\na ```` b\n`````');
    expect(fencedCode('plain', '')).toBe('```\nplain\n```');
  });
});
