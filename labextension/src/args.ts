/**
 * Tool-call arguments as a person reads them (approval cards and tool cards): code as code,
 * the shell command, the file path with the edit as a diff, the URL whole, other arguments as
 * `name: value` with their text as written, never one escaped JSON string.
 */

/** One piece of a call's arguments, in display order. */
export type ArgBlock =
  | { kind: 'field'; label: string; value: string }
  | { kind: 'code'; language: string; code: string }
  | { kind: 'diff'; diff: string };

/** Argument names whose value is code, with the language that colours it. */
const CODE_ARGS: { [name: string]: string } = {
  code: 'python',
  command: 'bash'
};

/** Languages of written files, by extension (the rest shows as plain text). */
const LANGUAGES: { [extension: string]: string } = {
  py: 'python',
  js: 'javascript',
  ts: 'typescript',
  json: 'json',
  md: 'markdown',
  sh: 'bash',
  sql: 'sql',
  yaml: 'yaml',
  yml: 'yaml',
  toml: 'toml',
  css: 'css',
  html: 'html',
  r: 'r'
};

function languageOf(path: string): string {
  const extension = path.split('.').pop()?.toLowerCase() ?? '';
  return LANGUAGES[extension] ?? '';
}

function asText(value: unknown): string {
  if (typeof value === 'string') {
    return value;
  }
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** An edit's old and new text as a small unified diff (whole strings, no context search). */
export function editDiff(path: string, oldText: string, newText: string): string {
  const lines = [`--- ${path}`, `+++ ${path}`, '@@ edit @@'];
  for (const line of oldText.split('\n')) {
    lines.push(`-${line}`);
  }
  for (const line of newText.split('\n')) {
    lines.push(`+${line}`);
  }
  return lines.join('\n');
}

/**
 * `diffShown`: the card already shows the change as a diff (a preview or the tool's result),
 * so an edit's old and new text and a written file's content are not repeated.
 */
export function argBlocks(
  args: { [name: string]: unknown },
  diffShown = false
): ArgBlock[] {
  const blocks: ArgBlock[] = [];
  const rest: { [name: string]: unknown } = { ...args };
  const take = (name: string): unknown => {
    const value = rest[name];
    delete rest[name];
    return value;
  };
  const path = take('file_path');
  if (typeof path === 'string') {
    blocks.push({ kind: 'field', label: 'file', value: path });
  }
  const url = take('url');
  if (typeof url === 'string') {
    blocks.push({ kind: 'field', label: 'url', value: url });
  }
  if (typeof rest.old_string === 'string' && typeof rest.new_string === 'string') {
    const diff = editDiff(
      String(path ?? 'file'),
      String(take('old_string')),
      String(take('new_string'))
    );
    if (!diffShown) {
      blocks.push({ kind: 'diff', diff });
    }
  }
  // A file's whole new content (a write), coloured by the file's type.
  if (typeof path === 'string' && typeof rest.content === 'string') {
    const code = String(take('content'));
    if (!diffShown) {
      blocks.push({ kind: 'code', language: languageOf(String(path ?? '')), code });
    }
  }
  if (typeof rest.patch === 'string') {
    blocks.push({ kind: 'diff', diff: String(take('patch')) });
  }
  for (const [name, language] of Object.entries(CODE_ARGS)) {
    if (typeof rest[name] === 'string') {
      const code = String(take(name));
      blocks.push({
        kind: 'code',
        language,
        code: name === 'command' ? `$ ${code}` : code
      });
    }
  }
  for (const [name, value] of Object.entries(rest)) {
    blocks.push({ kind: 'field', label: name, value: asText(value) });
  }
  return blocks;
}

/** Markdown for a code block whose fence no backtick run inside the code can close. */
export function fencedCode(code: string, language: string): string {
  const longest = Math.max(2, ...(code.match(/`+/g) ?? []).map(run => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${language}\n${code}\n${fence}`;
}
