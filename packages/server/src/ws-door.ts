/**
 * What the HTTP server's WebSocket doors (y-websocket, sync) share besides
 * their one admission rule (ws-admission.ts): what they take from the server
 * that hosts them, the WebSocket server an admitted upgrade is handed to, and
 * closing every socket when the server stops.
 */
import type { ParleyNode } from '@parley/node';
import type { Registry } from 'prom-client';
import { type WebSocket, WebSocketServer } from 'ws';
import { CLOSE } from './ws-connection.js';
import { selectSubprotocol } from './ws-token.js';

/** What a WebSocket door needs from the server that hosts it. */
export interface WsDoorDeps {
  node: ParleyNode;
  /** The server's bearer token; none: no token is asked for, and the Host/Origin rules apply. */
  token?: string;
  /** Without a token, host names accepted besides loopback ones (the HTTP server's `allowedHosts`). */
  allowedHosts?: readonly string[];
  onUnexpectedError(err: unknown, where: string): void;
  /** The server's Prometheus registry, for the door's series (each door's metrics.ts). */
  registry?: Registry;
}

/** How long closing waits for the clients' close frames before it cuts the rest. */
const CLOSE_GRACE_MS = 1_000;

/**
 * A door's WebSocket server: upgrades come from the door (no listener of its
 * own), messages up to `maxPayload` bytes, no compression, the door tracks its
 * sockets, and the `parley` subprotocol answered (ws-token.ts).
 */
export function doorSocketServer(maxPayload: number): WebSocketServer {
  return new WebSocketServer({
    noServer: true,
    maxPayload,
    perMessageDeflate: false,
    clientTracking: false,
    handleProtocols: (offered) => selectSubprotocol(offered),
  });
}

/**
 * Closes every socket with 1001 (clients reconnect to wherever the server
 * comes back), waits up to a second for them, then terminates those `open()`
 * still lists.
 */
export async function closeDoorSockets(open: () => Iterable<WebSocket>): Promise<void> {
  const closing = [...open()];
  const closed = Promise.all(closing.map((ws) => new Promise<void>((done) => ws.once('close', () => done()))));
  for (const ws of closing) ws.close(CLOSE.goingAway, 'server closing');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise<void>((done) => (timer = setTimeout(done, CLOSE_GRACE_MS)))]);
  clearTimeout(timer);
  for (const ws of open()) ws.terminate();
}
