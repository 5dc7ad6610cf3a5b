import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { describe, expect, it } from 'vitest';

import { NotebookComm, NotebookReply } from '../src/notebookcomm';
import { RequestFailed } from '../src/notebookactions';
import { JSONObject } from '../src/protocol';
import { NotebookRequest } from '../src/wire';

/** The notebook's answers: what was asked, and a failure for `edit`. */
function requests(asked: [string, JSONObject][]) {
  return {
    path: () => 'work/n.ipynb',
    serve: async (action: string, params: JSONObject) => {
      asked.push([action, params]);
      if (action === 'edit') {
        throw new RequestFailed('cell #2 changed since it was read');
      }
      return { action };
    }
  };
}

/** A kernel without subshells: replies travel on the comm, as they do there. */
const noSubshells = { supportsSubshells: false } as unknown as Kernel.IKernelConnection;

function comm(sent: unknown[]): Kernel.IComm {
  return {
    isDisposed: false,
    onMsg: undefined,
    send: (data: unknown) => {
      sent.push(data);
      return undefined;
    }
  } as unknown as Kernel.IComm;
}

function request(
  comm: NotebookComm,
  action: NotebookRequest['action'],
  params: JSONObject = {},
  clientId?: string
): NotebookRequest {
  return {
    type: 'notebook.request',
    request_id: `r-${action}`,
    client_id: clientId ?? comm.clientId,
    action,
    params
  };
}

describe('the codelia.notebook comm', () => {
  it('answers each request once, with the result or the failure as its error', async () => {
    const asked: [string, JSONObject][] = [];
    const notebook = new NotebookComm(requests(asked));
    const snapshot = await notebook.answer(
      request(notebook, 'snapshot', { outputs_for: [] })
    );
    expect(snapshot).toEqual<NotebookReply>({
      type: 'notebook.reply',
      reply_to: 'r-snapshot',
      ok: true,
      result: { action: 'snapshot' }
    });
    const edit = await notebook.answer(request(notebook, 'edit'));
    expect(edit).toEqual({
      type: 'notebook.reply',
      reply_to: 'r-edit',
      ok: false,
      error: 'cell #2 changed since it was read'
    });
    expect(await notebook.answer(request(notebook, 'ping'))).toMatchObject({
      ok: true,
      result: {}
    });
    expect(asked.map(([action]) => action)).toEqual(['snapshot', 'edit']);
  });

  it('leaves requests for another tab of the same kernel alone', async () => {
    const asked: [string, JSONObject][] = [];
    const notebook = new NotebookComm(requests(asked));
    expect(
      await notebook.answer(request(notebook, 'snapshot', {}, 'other-tab'))
    ).toBeNull();
    expect(asked).toEqual([]);
  });

  it('greets the kernel with its client id and serves requests arriving on the comm', async () => {
    const sent: unknown[] = [];
    const asked: [string, JSONObject][] = [];
    const notebook = new NotebookComm(requests(asked));
    const opened = comm(sent);
    notebook.onOpen(noSubshells, opened, {
      content: { data: { type: 'hello', request_id: 'h1', protocol: 1 } }
    } as unknown as KernelMessage.ICommOpenMsg);
    await Promise.resolve();
    expect(sent).toEqual([
      {
        type: 'notebook.reply',
        reply_to: 'h1',
        ok: true,
        result: {
          client_id: notebook.clientId,
          client: 'jupyterlab',
          path: 'work/n.ipynb',
          subshells: false
        }
      }
    ]);
    const onMsg = opened.onMsg as (msg: KernelMessage.ICommMsgMsg) => void;
    onMsg({
      content: { data: request(notebook, 'run', { cell_ids: [] }) }
    } as unknown as KernelMessage.ICommMsgMsg);
    // The benchmark's baseline: a ping answered straight on the comm.
    onMsg({
      content: { data: request(notebook, 'ping', { via: 'comm' }) }
    } as unknown as KernelMessage.ICommMsgMsg);
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(sent.slice(1)).toEqual([
      { type: 'notebook.reply', reply_to: 'r-ping', ok: true, result: {} },
      { type: 'notebook.reply', reply_to: 'r-run', ok: true, result: { action: 'run' } }
    ]);
  });
});
