/**
 * Calls to the jupyter-server extension (`jupyter_codelia.server`): past sessions and their
 * transcripts, available without a kernel, and which store the server sees (`store`), so the
 * panel uses them only when that is its kernel's store too. Requests go through
 * ServerConnection, which adds the server's authentication (token / XSRF); no API key is
 * involved.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { KernelMessage, SessionSummary, StoreInfo } from './protocol';
import type { SessionsListResult, TranscriptResult } from './wire';

async function getJson<T>(path: string): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'codelia', 'api', path);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  const body: unknown = await response.json().catch(() => null);
  if (!response.ok) {
    const message =
      body !== null && typeof body === 'object' && 'message' in body
        ? String((body as { message: unknown }).message)
        : response.statusText;
    throw new Error(`${response.status} ${message}`);
  }
  return body as T;
}

export async function listSessions(limit = 50): Promise<SessionSummary[]> {
  const body = await getJson<SessionsListResult>(`sessions?limit=${limit}`);
  return body.sessions;
}

export async function sessionTranscript(sessionId: string): Promise<KernelMessage[]> {
  const body = await getJson<TranscriptResult>(
    `sessions/${encodeURIComponent(sessionId)}/transcript`
  );
  return body.events;
}

export async function serverStore(): Promise<StoreInfo> {
  return getJson<StoreInfo>('store');
}
