import { describe, expect, it } from 'vitest';

import { controlCode, decodePythonString, parseControlResult } from '../src/connection';

describe('control requests on a subshell', () => {
  it('embeds the payload as a Python string literal', () => {
    const code = controlCode({
      type: 'run.cancel',
      request_id: 'r1',
      run_id: 'a"b\\c\n'
    });
    expect(code).toBe(
      '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control(' +
        '"{\\"type\\":\\"run.cancel\\",\\"request_id\\":\\"r1\\",\\"run_id\\":\\"a\\\\\\"b\\\\\\\\c\\\\n\\"}")'
    );
  });

  it('decodes Python str reprs', () => {
    expect(decodePythonString(`'{"ok": true}'`)).toBe('{"ok": true}');
    expect(decodePythonString(`"it's"`)).toBe("it's");
    expect(decodePythonString(`'a\\'b\\\\c\\n\\x41\\u00e9'`)).toBe("a'b\\c\nAé");
    expect(decodePythonString('42')).toBeNull();
  });

  it('reads the response from JSON, a JSON text or a str repr', () => {
    const response = { type: 'response', request_id: 'r', ok: true, result: {} };
    expect(parseControlResult({ 'application/json': response })).toEqual(response);
    expect(parseControlResult({ 'text/plain': JSON.stringify(response) })).toEqual(
      response
    );
    expect(parseControlResult({ 'text/plain': `'${JSON.stringify(response)}'` })).toEqual(
      response
    );
    expect(parseControlResult({ 'text/plain': 'None' })).toBeNull();
    expect(parseControlResult({})).toBeNull();
  });
});
