/**
 * The admission rule of the HTTP server's WebSocket doors (y-websocket at
 * `/yjs`, client replicas at `/sync`), written once for both:
 * 1. The path: a request under `<path>/` is the door's (the rest and the
 *    query are handed back); anything else is left to the other doors.
 * 2. Before the upgrade, answered with the HTTP error envelope: a closing
 *    door is 503 `closed`; the HTTP server's Host/Origin rules (a server
 *    without a token answers only loopback or allowed Host and Origin values)
 *    are 403 `forbidden_host` / `forbidden_origin`, so a foreign web page
 *    never gets a socket; `maxConnections` reached is 503 `unavailable`
 *    (counted `too_many_connections`).
 * 3. After the upgrade, the bearer token (server with a token), from where
 *    ws-token.ts says. Missing or wrong: counted `unauthorized`; the door sends
 *    its protocol's refusal, then closes 4401. The token is never logged.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { bearerChecker, rebindingGuard } from './auth.js';
import { HttpError } from './errors.js';
import { rejectUpgrade } from './upgrade.js';
import { bearerHeaderOf } from './ws-token.js';

/** What one door admits, and where it counts refusals. */
export interface WsAdmissionRules {
  /** The door's path (`/yjs`); it takes the requests under `<path>/`. */
  path: string;
  /** The server's bearer token; none: no token is asked for, and the Host/Origin rules apply. */
  token?: string;
  /** Without a token, host names accepted besides loopback ones (the HTTP server's `allowedHosts`). */
  allowedHosts?: readonly string[];
  maxConnections: number;
  /** What the door's connections are called in the bound's message (`y-websocket`, `sync`). */
  kind: string;
  count(reason: string): void;
}

/** An upgrade request on a door's path: the path after `<path>/`, and the query. */
export interface WsTarget {
  rest: string;
  query: URLSearchParams;
}

/** The door's state the bounds are checked against. */
export interface WsLoad {
  connections: number;
  closing: boolean;
}

export class WsAdmission {
  private readonly checkToken: ((header: string | undefined) => void) | undefined;
  private readonly checkHost: ((host: string | undefined, origin: string | undefined) => void) | undefined;

  constructor(private readonly rules: WsAdmissionRules) {
    this.checkToken = rules.token === undefined ? undefined : bearerChecker(rules.token);
    this.checkHost = rules.token === undefined ? rebindingGuard(rules.allowedHosts ?? []) : undefined;
  }

  /**
   * Takes an upgrade request if its path is the door's (false otherwise):
   * refuses it before the upgrade, or upgrades it on `wss` and hands the socket to `admit`.
   */
  upgrade(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    load: WsLoad,
    wss: Pick<WebSocketServer, 'handleUpgrade'>,
    admit: (ws: WebSocket, target: WsTarget) => void,
  ): boolean {
    const target = this.target(request);
    if (!target) return false;
    if (this.beforeUpgrade(request, socket, load)) wss.handleUpgrade(request, socket, head, (ws) => admit(ws, target));
    return true;
  }

  /** The request's target if its path is the door's, else undefined. */
  private target(request: IncomingMessage): WsTarget | undefined {
    const url = request.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const prefix = `${this.rules.path}/`;
    if (!path.startsWith(prefix)) return undefined;
    return { rest: path.slice(prefix.length), query: new URLSearchParams(q < 0 ? '' : url.slice(q + 1)) };
  }

  /** Checks the rules that come before the upgrade; a refusal is answered on `socket`, and false returned. */
  private beforeUpgrade(request: IncomingMessage, socket: Duplex, load: WsLoad): boolean {
    try {
      if (load.closing) throw new HttpError('closed', 'the server is shutting down');
      this.checkHost?.(request.headers.host, request.headers.origin);
      if (load.connections >= this.rules.maxConnections) {
        this.rules.count('too_many_connections');
        throw new HttpError(
          'unavailable',
          `this node already holds ${this.rules.maxConnections} ${this.rules.kind} connections`,
        );
      }
    } catch (err) {
      rejectUpgrade(socket, err);
      return false;
    }
    return true;
  }

  /** After the upgrade: why the bearer token is refused (counted), or undefined if it is accepted or none is asked for. */
  tokenRefusal(request: IncomingMessage, query: URLSearchParams): string | undefined {
    if (!this.checkToken) return undefined;
    try {
      this.checkToken(bearerHeaderOf(request, query));
      return undefined;
    } catch (err) {
      this.rules.count('unauthorized');
      return (err as Error).message;
    }
  }
}
