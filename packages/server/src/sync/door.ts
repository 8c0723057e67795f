/**
 * The sync door: WebSocket upgrades of `<path>/{namespace}`, each a client
 * replica (a browser tab running @parley/browser) syncing one eventual
 * namespace through this node (docs/browser.md).
 *
 * Admission, in order (the y-websocket door's rules):
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
import { clientReplication, type ParleyNode } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { type WebSocket, WebSocketServer } from 'ws';
import { bearerChecker, rebindingGuard } from '../auth.js';
import { HttpError } from '../errors.js';
import { addUpgradeHandler, rejectUpgrade } from '../upgrade.js';
import { CLOSE, Connection } from '../yjs/connection.js';
import { bearerHeaderOf, selectSubprotocol } from '../yjs/token.js';
import { syncMetrics } from './metrics.js';
import { type ResolvedSyncDoorOptions, resolveSyncDoorOptions, type SyncDoorOptions } from './options.js';
import { SyncSession } from './session.js';

/** What the sync door needs from the server that hosts it (the y-websocket door's, without metrics). */
export interface SyncDoorDeps {
  node: ParleyNode;
  token?: string;
  allowedHosts?: readonly string[];
  onUnexpectedError(err: unknown, where: string): void;
  /** The server's Prometheus registry, for the door's series (metrics.ts). */
  registry?: Registry;
}

/** A snapshot of the sync door's load and of what it refused. */
export interface SyncDoorStats {
  connections: number;
  /** Refusals and drops since start, by reason. */
  counts: Record<string, number>;
}

const CLOSE_GRACE_MS = 1_000;

/** The sync door of one HTTP server (`createServer` makes one unless `sync: false`). */
export class SyncDoor {
  readonly options: ResolvedSyncDoorOptions;
  private readonly wss: WebSocketServer;
  private readonly sockets = new Map<WebSocket, Connection>();
  private readonly counts: Record<string, number> = {};
  private readonly checkToken: ((header: string | undefined) => void) | undefined;
  private readonly checkHost: ((host: string | undefined, origin: string | undefined) => void) | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly countMetric: ((reason: string) => void) | undefined;
  private closing = false;

  constructor(
    private readonly deps: SyncDoorDeps,
    options: SyncDoorOptions = {},
  ) {
    this.options = resolveSyncDoorOptions(options);
    this.checkToken = deps.token === undefined ? undefined : bearerChecker(deps.token);
    this.checkHost = deps.token === undefined ? rebindingGuard(deps.allowedHosts ?? []) : undefined;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.options.maxFrameBytes,
      perMessageDeflate: false,
      clientTracking: false,
      handleProtocols: (offered) => selectSubprotocol(offered),
    });
    this.countMetric = deps.registry && syncMetrics(deps.registry, () => this.sockets.size);
    this.timer = setInterval(() => this.tick(), Math.max(50, Math.floor(this.options.pingIntervalMs / 10)));
    this.timer.unref();
  }

  stats(): SyncDoorStats {
    return { connections: this.sockets.size, counts: { ...this.counts } };
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = request.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const prefix = `${this.options.path}/`;
    if (!path.startsWith(prefix)) return false;
    try {
      if (this.closing) throw new HttpError('closed', 'the server is shutting down');
      this.checkHost?.(request.headers.host, request.headers.origin);
      if (this.sockets.size >= this.options.maxConnections) {
        this.count('too_many_connections');
        throw new HttpError('unavailable', `this node already holds ${this.options.maxConnections} sync connections`);
      }
    } catch (err) {
      rejectUpgrade(socket, err);
      return true;
    }
    const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    this.wss.handleUpgrade(request, socket, head, (ws) => this.admit(ws, request, path.slice(prefix.length), query));
    return true;
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
    if (this.checkToken) {
      try {
        this.checkToken(bearerHeaderOf(request, query));
      } catch (err) {
        this.count('unauthorized');
        refuse('unauthorized', CLOSE.unauthorized, (err as Error).message);
        return;
      }
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
    const open = [...this.sockets.keys()];
    const closed = Promise.all(open.map((ws) => new Promise<void>((done) => ws.once('close', () => done()))));
    for (const ws of open) ws.close(CLOSE.goingAway, 'server closing');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise<void>((done) => (timer = setTimeout(done, CLOSE_GRACE_MS)))]);
    clearTimeout(timer);
    for (const ws of this.sockets.keys()) ws.terminate();
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
