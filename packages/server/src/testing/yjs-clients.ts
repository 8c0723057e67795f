/**
 * Test helpers for the y-websocket door (not exported from the package index):
 * stock `y-websocket` providers in Node (the `ws` client), and waiting for
 * what they see with bounded timeouts.
 */
import { WebSocket } from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';

export interface Client {
  doc: Y.Doc;
  provider: WebsocketProvider;
  text(): string;
  /** Awareness removals this client has seen, by client id. */
  removed: number[];
  destroy(): void;
}

/** A stock WebsocketProvider on `ws://…/yjs` for `room`. BroadcastChannel is off: clients in one process would otherwise sync without the server. */
export function yClient(
  serverUrl: string,
  room: string,
  options: { params?: Record<string, string>; protocols?: string[] } = {},
): Client {
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(serverUrl, room, doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    maxBackoffTime: 200,
    ...options,
  });
  const removed: number[] = [];
  provider.awareness.on('change', (change: { removed: number[] }) => removed.push(...change.removed));
  return {
    doc,
    provider,
    text: () => doc.getText('t').toString(),
    removed,
    destroy() {
      provider.destroy();
      doc.destroy();
    },
  };
}

/** Resolves when `check()` holds, polling every few milliseconds; rejects after `timeoutMs` (real time) with `what`. */
export async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise<void>((r) => setTimeout(r, 5));
  }
}

export function synced(c: Client, timeoutMs = 10_000): Promise<void> {
  return until('provider synced', () => c.provider.synced, timeoutMs);
}

/** The state vector as sorted [client, clock] pairs (comparable with toEqual). */
export function stateVector(doc: Y.Doc): Array<[number, number]> {
  return [...Y.decodeStateVector(Y.encodeStateVector(doc)).entries()].sort((a, b) => a[0] - b[0]);
}

/** The user-visible name another client of the room shows for `clientID`, if any. */
export function awarenessName(of: Client, clientID: number): string | undefined {
  const state = of.provider.awareness.getStates().get(clientID) as { user?: { name?: string } } | undefined;
  return state?.user?.name;
}

export interface RawClient {
  ws: WebSocket;
  /** Every binary message received, in order. */
  received: Uint8Array[];
  opened: Promise<void>;
  /** Resolves with the close code and reason (1006 for a connection cut without a close frame). */
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves with the HTTP status when the server refuses the upgrade. */
  refused: Promise<number>;
}

/** A bare `ws` client, to speak the protocol byte by byte. */
export function rawClient(
  url: string,
  options: { protocols?: string[]; headers?: Record<string, string>; autoPong?: boolean } = {},
): RawClient {
  const ws = new WebSocket(url, options.protocols ?? [], {
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.autoPong === false ? { autoPong: false } : {}),
  });
  const received: Uint8Array[] = [];
  ws.on('message', (data: Buffer) => received.push(new Uint8Array(data)));
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  opened.catch(() => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })),
  );
  const refused = new Promise<number>((resolve) =>
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    }),
  );
  return { ws, received, opened, closed, refused };
}
