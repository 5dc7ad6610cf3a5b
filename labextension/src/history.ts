/**
 * Past sessions and their transcripts for the panel's picker, from the store of the kernel the
 * panel follows. That kernel may run on another host (behind a kernel gateway, on a cluster), so
 * its store is the truth and is read through the kernel. The Jupyter server's REST endpoints are
 * a fast path taken only when the server sees that very store: both report the same store id.
 * Without a kernel the server's own store is all there is.
 */

import { CodeliaConnection } from './connection';
import { KernelMessage, SessionSummary, StoreInfo } from './protocol';
import { listSessions, serverStore, sessionTranscript } from './rest';

/** Where a read goes: the server's REST endpoints or the kernel (`CodeliaConnection.read`). */
export type HistoryRoute = 'server' | 'kernel';

/** The route for a kernel reporting `kernelStore`, given what the server sees. */
export function chooseRoute(
  kernelStore: StoreInfo | null | undefined,
  server: StoreInfo | null
): HistoryRoute {
  if (!kernelStore || !kernelStore.store_id) {
    // An older kernel without a store id: the kernel still answers for its own store.
    return 'kernel';
  }
  return server !== null && server.store_id === kernelStore.store_id
    ? 'server'
    : 'kernel';
}

export class SessionHistory {
  constructor(private readonly connection: () => CodeliaConnection | null) {}

  /** Which way the next read goes (the server's answer is asked once per connection). */
  async route(): Promise<HistoryRoute> {
    const connection = this.readyConnection();
    if (!connection) {
      return 'server';
    }
    if (this.serverStoreFor !== connection) {
      this.serverStoreFor = connection;
      this.serverStore = serverStore().catch(() => null);
    }
    return chooseRoute(connection.hello?.store, await this.serverStore);
  }

  async list(limit = 50): Promise<SessionSummary[]> {
    return this.read(
      () => listSessions(limit),
      async connection => {
        const result = await connection.read('sessions.list');
        return result.sessions.slice(0, limit);
      }
    );
  }

  async transcript(sessionId: string): Promise<KernelMessage[]> {
    return this.read(
      () => sessionTranscript(sessionId),
      async connection => {
        const result = await connection.read('session.transcript', {
          session_id: sessionId
        });
        return result.events;
      }
    );
  }

  private async read<T>(
    fromServer: () => Promise<T>,
    fromKernel: (connection: CodeliaConnection) => Promise<T>
  ): Promise<T> {
    const connection = this.readyConnection();
    if (connection && (await this.route()) === 'kernel') {
      return fromKernel(connection);
    }
    try {
      return await fromServer();
    } catch (error) {
      // The server extension may be disabled; the kernel knows the same sessions.
      if (connection) {
        return fromKernel(connection);
      }
      throw error;
    }
  }

  private readyConnection(): CodeliaConnection | null {
    const connection = this.connection();
    return connection && connection.state === 'ready' ? connection : null;
  }

  private serverStoreFor: CodeliaConnection | null = null;
  private serverStore: Promise<StoreInfo | null> = Promise.resolve(null);
}
