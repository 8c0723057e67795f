/**
 * The sync door: WebSocket upgrades of `<path>/{namespace}`, each a client
 * replica (a browser tab running @parley/browser) syncing one eventual
 * namespace through this node (docs/browser.md).
 *
 * Admission, in order (2–4 are the WebSocket doors' one rule, ws-admission.ts):
 * 1. The path: `<path>/{namespace}` (percent-decoded). Anything else under
 *    no path of ours: 404 before the upgrade.
 * 2. The HTTP server's Host/Origin rules (a server without a token answers
 *    only loopback or allowed Host and Origin values): 403 before the upgrade.
 * 3. maxConnections: 503 before the upgrade (the client retries with backoff).
 * 4. After the upgrade, the bearer token (server with a token): the
 *    Authorization header, a `parley.bearer.<base64url(token)>` subprotocol,
 *    or the `token` query parameter. Missing or wrong: an ERROR frame
 *    `unauthorized`, then close 4401 (the client stops). Never logged.
 * 5. A namespace name the node refuses: ERROR `invalid_argument`, close 4400.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { encodeError } from '@parley/browser/wire';
import { clientReplication } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import { addUpgradeHandler } from '../upgrade.js';
import { WsAdmission } from '../ws-admission.js';
import { CLOSE, Connection } from '../ws-connection.js';
import { closeDoorSockets, doorSocketServer, type WsDoorDeps } from '../ws-door.js';
import { syncMetrics } from './metrics.js';
import { type ResolvedSyncDoorOptions, resolveSyncDoorOptions, type SyncDoorOptions } from './options.js';
import { SyncSession } from './session.js';

/** What the sync door needs from the server that hosts it (every WebSocket door's: ws-door.ts). */
export type SyncDoorDeps = WsDoorDeps;

/** A snapshot of the sync door's load and of what it refused. */
export interface SyncDoorStats {
  connections: number;
  /** Refusals and drops since start, by reason. */
  counts: Record<string, number>;
}

/** The sync door of one HTTP server (`createServer` makes one unless `sync: false`). */
export class SyncDoor {
  readonly options: ResolvedSyncDoorOptions;
  private readonly wss: WebSocketServer;
  private readonly sockets = new Map<WebSocket, Connection>();
  private readonly counts: Record<string, number> = {};
  private readonly admission: WsAdmission;
  private readonly timer: NodeJS.Timeout;
  private readonly countMetric: ((reason: string) => void) | undefined;
  private closing = false;

  constructor(
    private readonly deps: SyncDoorDeps,
    options: SyncDoorOptions = {},
  ) {
    this.options = resolveSyncDoorOptions(options);
    this.admission = new WsAdmission({
      path: this.options.path,
      token: deps.token,
      allowedHosts: deps.allowedHosts,
      maxConnections: this.options.maxConnections,
      kind: 'sync',
      count: (reason) => this.count(reason),
    });
    this.wss = doorSocketServer(this.options.maxFrameBytes);
    this.countMetric = deps.registry && syncMetrics(deps.registry, () => this.sockets.size);
    this.timer = setInterval(() => this.tick(), Math.max(50, Math.floor(this.options.pingIntervalMs / 10)));
    this.timer.unref();
  }

  stats(): SyncDoorStats {
    return { connections: this.sockets.size, counts: { ...this.counts } };
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const load = { connections: this.sockets.size, closing: this.closing };
    return this.admission.upgrade(request, socket, head, load, this.wss, (ws, { rest, query }) =>
      this.admit(ws, request, rest, query),
    );
  }

  private admit(ws: WebSocket, request: IncomingMessage, rest: string, query: URLSearchParams): void {
    const conn = new Connection(ws, this.options.maxBufferedBytes, Date.now(), (why) => this.count(`dropped_${why}`));
    this.sockets.set(ws, conn);
    let session: SyncSession | undefined;
    ws.on('error', () => conn.terminate());
    ws.on('close', () => {
      this.sockets.delete(ws);
      conn.closed = true;
      session?.end();
    });
    const refuse = (code: string, closeCode: number, message: string) => {
      conn.send(encodeError(code, message), Date.now());
      conn.close(closeCode, message);
    };
    const refused = this.admission.tokenRefusal(request, query);
    if (refused !== undefined) {
      refuse('unauthorized', CLOSE.unauthorized, refused);
      return;
    }
    let port: ReturnType<typeof clientReplication>;
    try {
      const namespace = decodeURIComponent(rest);
      port = clientReplication(this.deps.node, namespace);
    } catch (err) {
      this.count('bad_namespace');
      refuse('invalid_argument', CLOSE.badRequest, `bad namespace: ${(err as Error).message}`);
      return;
    }
    const current = new SyncSession(conn, port, {
      nodeId: this.deps.node.peerId,
      options: this.options,
      count: (reason) => this.count(reason),
      onUnexpectedError: this.deps.onUnexpectedError,
    });
    session = current;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) {
        this.count('decode_error');
        refuse('decode_error', CLOSE.badRequest, 'sync frames are binary');
        current.end();
        return;
      }
      current.receive(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    });
  }

  private tick(): void {
    const now = Date.now();
    for (const c of this.sockets.values()) {
      c.tick(now, Number.POSITIVE_INFINITY, this.options.pingIntervalMs, new Uint8Array(0));
    }
  }

  private count(reason: string): void {
    this.counts[reason] = (this.counts[reason] ?? 0) + 1;
    this.countMetric?.(reason);
  }

  /** Closes every connection (1001: clients reconnect to wherever the server comes back). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    await closeDoorSockets(() => this.sockets.keys());
    this.wss.close();
  }
}

/** Hooks the sync door into a Fastify server's upgrade requests, closing before the server stops. */
export function attachSyncDoor(app: FastifyInstance, deps: SyncDoorDeps, options?: SyncDoorOptions): SyncDoor {
  const door = new SyncDoor(deps, options);
  addUpgradeHandler(app, (request, socket, head) => door.handleUpgrade(request, socket, head));
  app.addHook('preClose', async () => door.close());
  return door;
}
