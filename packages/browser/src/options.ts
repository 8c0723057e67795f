/** Settings of a browser node, with their defaults and checks. */

import { InvalidArgumentError } from '@parley/interface';
import type { AbstractLevel } from 'abstract-level';
import { DEFAULT_MAX_FRAME_BYTES } from './wire.js';

/** The database a browser node keeps its replicas in: string keys, byte values (a browser-level or any abstract-level). */
// biome-ignore lint/suspicious/noExplicitAny: abstract-level's format parameter varies by implementation
export type ReplicaDb = AbstractLevel<any, string, Uint8Array>;

/** A WebSocket constructor: the browser's, or `ws`'s in Node. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocket;

export interface BrowserNodeOptions {
  /** The node's HTTP address (`http://host:port` or `https://…`); its sync door is `ws(s)://host:port/sync`. Default: the page's origin. */
  url?: string;
  /** The node's bearer token (PARLEY_API_TOKEN), sent as a WebSocket subprotocol and an Authorization header. */
  token?: string;
  /** IndexedDB database name (browser-level). Default 'parley'. */
  name?: string;
  /** A database instead of IndexedDB (any abstract-level with utf8 keys and `view` values). */
  db?: ReplicaDb;
  /** The WebSocket constructor. Default globalThis.WebSocket. */
  WebSocket?: WebSocketConstructor;
  /** Wall clock (ms since the epoch). Default Date.now. */
  now?: () => number;
  /** Period of the digest exchange with the node (anti-entropy over the connection). Default 5,000 ms. */
  syncIntervalMs?: number;
  /** Longest wait between reconnection attempts (they back off from 250 ms). Default 10,000 ms. */
  maxReconnectMs?: number;
  /** The bounds of the node's eventual namespaces; they must be the node's (defaults: the node's defaults). */
  eventual?: {
    maxValueBytes?: number;
    maxLiveKeys?: number;
    maxClockDriftMs?: number;
    defaultTtlSeconds?: number;
    maxTtlSeconds?: number;
    tombstoneGraceMs?: number;
  };
  /** Largest sync frame either way. Default 1 MiB + 64 KiB (the node's default). */
  maxFrameBytes?: number;
  /** Namespaces open at once. Default 64. */
  maxNamespaces?: number;
}

export interface ResolvedBrowserOptions {
  httpUrl: string;
  wsUrl: string;
  token: string | undefined;
  name: string;
  db: ReplicaDb | undefined;
  WebSocket: WebSocketConstructor | undefined;
  /** The replica's clock: the wall clock, moved forward to a node's when the node is ahead. */
  now: () => number;
  /** Adopts a node's clock reading (WELCOME) if it is ahead of this one. */
  observeNodeTime(nodeMs: number): void;
  syncIntervalMs: number;
  maxReconnectMs: number;
  eventual: Required<NonNullable<BrowserNodeOptions['eventual']>>;
  maxFrameBytes: number;
  maxNamespaces: number;
}

function int(name: string, v: number | undefined, dflt: number, min: number, max: number): number {
  const x = v ?? dflt;
  if (!Number.isSafeInteger(x) || x < min || x > max) {
    throw new InvalidArgumentError(`${name} must be an integer in ${min}..${max}, got ${v}`);
  }
  return x;
}

const MAX_TTL = 30 * 24 * 3600;
/** Furthest a node's clock may move a browser's forward: one day. */
const MAX_SKEW_MS = 86_400_000;

export function resolveBrowserOptions(o: BrowserNodeOptions = {}): ResolvedBrowserOptions {
  const origin = (globalThis as { location?: { origin?: string } }).location?.origin;
  const base = o.url ?? origin;
  if (typeof base !== 'string')
    throw new InvalidArgumentError('url is needed outside a page (the node, http://host:port)');
  let parsed: URL;
  try {
    parsed = new URL(base);
  } catch {
    throw new InvalidArgumentError(`url is not a URL: ${String(base).slice(0, 100)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidArgumentError("url is the node's http:// or https:// address");
  }
  const httpUrl = `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  const wsUrl = httpUrl.replace(/^http/, 'ws');
  const e = o.eventual ?? {};
  const wall = o.now ?? (() => Date.now());
  let skew = 0;
  const maxTtlSeconds = int('eventual.maxTtlSeconds', e.maxTtlSeconds, MAX_TTL, 1, MAX_TTL);
  if (o.token !== undefined && (typeof o.token !== 'string' || o.token.length === 0)) {
    throw new InvalidArgumentError('token must be a non-empty string');
  }
  return {
    httpUrl,
    wsUrl,
    token: o.token,
    name: o.name ?? 'parley',
    db: o.db,
    WebSocket: o.WebSocket,
    now: () => wall() + skew,
    observeNodeTime(nodeMs: number) {
      // Only forward (stamps never go back), and at most MAX_SKEW_MS: a device clock set
      // behind would otherwise refuse the node's newer writes as drift, until it caught up.
      const ahead = Math.min(MAX_SKEW_MS, nodeMs - wall());
      if (ahead > skew) skew = ahead;
    },
    syncIntervalMs: int('syncIntervalMs', o.syncIntervalMs, 5_000, 50, 3_600_000),
    maxReconnectMs: int('maxReconnectMs', o.maxReconnectMs, 10_000, 250, 3_600_000),
    eventual: {
      maxValueBytes: int('eventual.maxValueBytes', e.maxValueBytes, 1_048_576, 1, 64 * 1_048_576),
      maxLiveKeys: int('eventual.maxLiveKeys', e.maxLiveKeys, 10_000, 1, 100_000_000),
      maxClockDriftMs: int('eventual.maxClockDriftMs', e.maxClockDriftMs, 60_000, 0, 86_400_000),
      defaultTtlSeconds: int(
        'eventual.defaultTtlSeconds',
        e.defaultTtlSeconds,
        Math.min(3600, maxTtlSeconds),
        1,
        maxTtlSeconds,
      ),
      maxTtlSeconds,
      tombstoneGraceMs: int(
        'eventual.tombstoneGraceMs',
        e.tombstoneGraceMs,
        maxTtlSeconds * 1000,
        0,
        Number.MAX_SAFE_INTEGER,
      ),
    },
    maxFrameBytes: int('maxFrameBytes', o.maxFrameBytes, DEFAULT_MAX_FRAME_BYTES, 4096, 65 * 1_048_576),
    maxNamespaces: int('maxNamespaces', o.maxNamespaces, 64, 1, 10_000),
  };
}

/** The subprotocols a socket offers: `parley`, and the token as `parley.bearer.<base64url>` (what the doors read). */
export function subprotocols(token: string | undefined): string[] {
  if (token === undefined) return ['parley'];
  const bytes = new TextEncoder().encode(token);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  const b64 = btoa(bin).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
  return ['parley', `parley.bearer.${b64}`];
}
