/**
 * The y-websocket door: WebSocket upgrades of `<path>/<room>` on the HTTP
 * server, each a stock `WebsocketProvider` syncing one room (see docs/yjs.md).
 *
 * Admission, in order (2–4 are the WebSocket doors' one rule, ws-admission.ts):
 * 1. The path: `<path>/{namespace}/{key}` (each part percent-decoded; the key
 *    may hold more '/'), or `<path>/{key}` for `defaultNamespace`. Anything
 *    else under no path of ours: 404 before the upgrade.
 * 2. The HTTP server's Host/Origin rules (a server without a token answers
 *    only loopback or allowed Host and Origin values): refused before the
 *    upgrade (403), so a foreign web page never gets a socket.
 * 3. maxConnections: 503 before the upgrade (the provider retries with backoff).
 * 4. After the upgrade, the bearer token (server with a token): from the
 *    Authorization header, else a `parley.bearer.<base64url(token)>`
 *    subprotocol, else the `token` query parameter. Missing or wrong: the
 *    y-protocols "permission denied" message, then close 4401 (the provider
 *    stops reconnecting). The token and the query string are never logged.
 * 5. A room name the node refuses (namespace or key): close 4400. maxRooms
 *    reached, or the node cannot open more documents: close 1013 (retried).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { isParleyError } from '@parley/interface';
import type { FastifyInstance } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import { addUpgradeHandler } from '../upgrade.js';
import { WsAdmission } from '../ws-admission.js';
import { CLOSE, Connection } from '../ws-connection.js';
import { closeDoorSockets, doorSocketServer, type WsDoorDeps } from '../ws-door.js';
import { SUBPROTOCOL } from '../ws-token.js';
import { doorMetrics } from './metrics.js';
import { type ResolvedYjsDoorOptions, resolveYjsDoorOptions, type YjsDoorOptions } from './options.js';
import { encodePermissionDenied, KEEPALIVE_MESSAGE } from './protocol.js';
import { Room, type RoomContext } from './room.js';

/** What the y-websocket door needs from the server that hosts it (every WebSocket door's: ws-door.ts). */
export type YjsDoorDeps = WsDoorDeps;

/** A snapshot of the door's load and of what it refused. */
export interface YjsDoorStats {
  connections: number;
  rooms: number;
  awarenessStates: number;
  /** Refusals and drops since start, by reason. */
  counts: Record<string, number>;
}

const MAX_KEY_LENGTH = 1024;

/** The y-websocket door of one HTTP server (`createServer` makes one unless `yjs: false`). */
export class YjsDoor {
  readonly options: ResolvedYjsDoorOptions;
  private readonly wss: WebSocketServer;
  private readonly rooms = new Map<string, Room>();
  private readonly sockets = new Set<WebSocket>();
  private readonly counts: Record<string, number> = {};
  private readonly admission: WsAdmission;
  private readonly timer: NodeJS.Timeout;
  private readonly ctx: RoomContext;
  private readonly countMetric: ((reason: string) => void) | undefined;
  private closing = false;

  constructor(
    private readonly deps: YjsDoorDeps,
    options: YjsDoorOptions = {},
  ) {
    this.options = resolveYjsDoorOptions(options);
    // The HTTP server's rules: a token, or else only loopback (or allowed) Host and Origin values.
    this.admission = new WsAdmission({
      path: this.options.path,
      token: deps.token,
      allowedHosts: deps.allowedHosts,
      maxConnections: this.options.maxConnections,
      kind: 'y-websocket',
      count: (reason) => this.count(reason),
    });
    this.wss = doorSocketServer(this.options.maxMessageBytes);
    this.countMetric =
      deps.registry &&
      doorMetrics(deps.registry, {
        connections: () => this.sockets.size,
        rooms: () => this.rooms.size,
        awarenessStates: () => this.stats().awarenessStates,
      });
    this.ctx = {
      node: deps.node,
      options: this.options,
      now: () => Date.now(),
      count: (reason) => this.count(reason),
      onUnexpectedError: deps.onUnexpectedError,
    };
    const o = this.options;
    const tickMs = Math.max(
      20,
      Math.min(5_000, Math.floor(Math.min(o.keepAliveMs, o.pingIntervalMs, o.awarenessTimeoutMs) / 10)),
    );
    this.timer = setInterval(() => this.tick(), tickMs);
    this.timer.unref();
  }

  stats(): YjsDoorStats {
    let awarenessStates = 0;
    for (const room of this.rooms.values()) awarenessStates += room.awareness.size;
    return { connections: this.sockets.size, rooms: this.rooms.size, awarenessStates, counts: { ...this.counts } };
  }

  /** Takes an upgrade request if its path is the door's; returns false otherwise. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const load = { connections: this.sockets.size, closing: this.closing };
    return this.admission.upgrade(request, socket, head, load, this.wss, (ws, { rest, query }) =>
      this.admit(ws, request, rest, query),
    );
  }

  private admit(ws: WebSocket, request: IncomingMessage, roomPath: string, query: URLSearchParams): void {
    this.sockets.add(ws);
    let joined: Room | undefined;
    const conn = new Connection(ws, this.options.maxBufferedBytes, Date.now(), (why) => this.count(`dropped_${why}`));
    ws.on('error', () => conn.terminate());
    ws.on('close', () => {
      this.sockets.delete(ws);
      conn.closed = true;
      if (joined) this.leave(joined, conn);
    });
    const refused = this.admission.tokenRefusal(request, query);
    if (refused !== undefined) {
      const reason = `${refused}; a browser passes it as ?token=… or the subprotocol ${SUBPROTOCOL}.bearer.<base64url>`;
      conn.send(encodePermissionDenied(reason), Date.now());
      conn.close(CLOSE.unauthorized, 'unauthorized');
      return;
    }
    const room = this.roomFor(conn, roomPath);
    if (!room) return;
    joined = room;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) {
        this.count('decode_error');
        conn.close(CLOSE.badRequest, 'y-websocket messages are binary');
        return;
      }
      room.receive(conn, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    });
    room.join(conn);
  }

  /** The room a connection names, opened if need be; closes the connection and returns undefined if refused. */
  private roomFor(conn: Connection, roomPath: string): Room | undefined {
    let namespace: string;
    let key: string;
    try {
      const slash = roomPath.indexOf('/');
      namespace = slash < 0 ? this.options.defaultNamespace : decodeURIComponent(roomPath.slice(0, slash));
      key = decodeURIComponent(slash < 0 ? roomPath : roomPath.slice(slash + 1));
      if (key.length === 0 || key.length > MAX_KEY_LENGTH) throw new Error(`a key is 1..${MAX_KEY_LENGTH} characters`);
      this.deps.node.eventual(namespace); // checks the namespace name
    } catch (err) {
      this.count('bad_room');
      conn.close(CLOSE.badRequest, `bad room name: ${(err as Error).message}`);
      return undefined;
    }
    const id = `${namespace}\u0000${key}`;
    let room = this.rooms.get(id);
    if (!room) {
      if (this.rooms.size >= this.options.maxRooms) {
        this.count('too_many_rooms');
        conn.close(CLOSE.tryAgainLater, `this node already holds ${this.options.maxRooms} open rooms`);
        return undefined;
      }
      const fresh = new Room(namespace, key, this.ctx);
      room = fresh;
      this.rooms.set(id, fresh);
      fresh.open().catch((err: unknown) => this.failRoom(id, fresh, err));
    }
    return room;
  }

  private failRoom(id: string, room: Room, err: unknown): void {
    if (this.rooms.get(id) === room) this.rooms.delete(id);
    room.close();
    const known = isParleyError(err);
    if (!known) this.deps.onUnexpectedError(err, 'yjs room open');
    this.count('room_open_failed');
    const code = known ? CLOSE.tryAgainLater : CLOSE.internal;
    for (const c of [...room.conns]) c.close(code, known ? (err as Error).message : 'internal error');
  }

  private leave(room: Room, conn: Connection): void {
    room.leave(conn);
    if (room.conns.size === 0) {
      room.close();
      for (const [id, r] of this.rooms) if (r === room) this.rooms.delete(id);
    }
  }

  private tick(): void {
    const now = Date.now();
    for (const room of this.rooms.values()) {
      room.tick(now);
      for (const c of room.conns) c.tick(now, this.options.keepAliveMs, this.options.pingIntervalMs, KEEPALIVE_MESSAGE);
    }
  }

  private count(reason: string): void {
    this.counts[reason] = (this.counts[reason] ?? 0) + 1;
    this.countMetric?.(reason);
  }

  /** Closes every connection (1001: the provider reconnects to wherever the server comes back). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    await closeDoorSockets(() => this.sockets);
    for (const room of this.rooms.values()) room.close();
    this.rooms.clear();
    this.wss.close();
  }
}

/**
 * Hooks the door into a Fastify server: its HTTP server's upgrade requests
 * (others get 404), and closing before the server stops.
 */
export function attachYjsDoor(app: FastifyInstance, deps: YjsDoorDeps, options?: YjsDoorOptions): YjsDoor {
  const door = new YjsDoor(deps, options);
  addUpgradeHandler(app, (request, socket, head) => door.handleUpgrade(request, socket, head));
  app.addHook('preClose', async () => door.close());
  return door;
}
