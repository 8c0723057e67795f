/** Settings of the y-websocket door, with their defaults and bounds. */
import { InvalidArgumentError, isNamespaceName } from '@parley/interface';

/** Settings of the y-websocket door (`createServer({ yjs })`); every bound has a default. */
export interface YjsDoorOptions {
  /** URL path the provider's server URL ends with. Default '/yjs'. */
  path?: string;
  /** Namespace of a room name without a '/' (room 'notes' is 'yjs/notes'). Default 'yjs'. */
  defaultNamespace?: string;
  /** Open WebSocket connections on this node. Default 1024. */
  maxConnections?: number;
  /** Rooms (documents) with at least one connection on this node. Default 1024. */
  maxRooms?: number;
  /** Largest WebSocket message from a client; the node's value limit by default (1 MiB). */
  maxMessageBytes?: number;
  /** Present awareness clients per room. Default 256. */
  maxAwarenessStates?: number;
  /** Largest awareness state (JSON text). Default 16 KiB. */
  maxAwarenessStateBytes?: number;
  /** A client's awareness state not renewed for this long is removed (y-protocols' outdatedTimeout). Default 30,000 ms. */
  awarenessTimeoutMs?: number;
  /** A connection sent nothing for this long gets an empty awareness message (the provider closes after 30 s of silence). Default 15,000 ms. */
  keepAliveMs?: number;
  /** A connection that has not answered the previous ping when the next one is due is dropped. Default 30,000 ms. */
  pingIntervalMs?: number;
  /** A connection whose unsent bytes exceed this is dropped (its provider reconnects and resyncs). Default 16 MiB. */
  maxBufferedBytes?: number;
  /** Messages a connection may send before its room is open. Default 64. */
  maxPendingMessages?: number;
}

export type ResolvedYjsDoorOptions = Required<YjsDoorOptions>;

function int(name: string, v: number | undefined, dflt: number, min: number, max: number): number {
  const x = v ?? dflt;
  if (!Number.isSafeInteger(x) || x < min || x > max) {
    throw new InvalidArgumentError(`yjs.${name} must be an integer in ${min}..${max}, got ${v}`);
  }
  return x;
}

export function resolveYjsDoorOptions(o: YjsDoorOptions = {}): ResolvedYjsDoorOptions {
  const path = o.path ?? '/yjs';
  if (typeof path !== 'string' || !/^(\/[A-Za-z0-9._~-]+)+$/.test(path)) {
    throw new InvalidArgumentError("yjs.path must look like '/yjs' (no trailing slash)", { path: String(path) });
  }
  const defaultNamespace = o.defaultNamespace ?? 'yjs';
  if (typeof defaultNamespace !== 'string' || !isNamespaceName(defaultNamespace)) {
    throw new InvalidArgumentError('yjs.defaultNamespace must be a namespace name');
  }
  return {
    path,
    defaultNamespace,
    maxConnections: int('maxConnections', o.maxConnections, 1024, 1, 1_000_000),
    maxRooms: int('maxRooms', o.maxRooms, 1024, 1, 1_000_000),
    maxMessageBytes: int('maxMessageBytes', o.maxMessageBytes, 1_048_576, 1024, 64 * 1_048_576),
    maxAwarenessStates: int('maxAwarenessStates', o.maxAwarenessStates, 256, 1, 100_000),
    maxAwarenessStateBytes: int('maxAwarenessStateBytes', o.maxAwarenessStateBytes, 16 * 1024, 16, 48 * 1024),
    awarenessTimeoutMs: int('awarenessTimeoutMs', o.awarenessTimeoutMs, 30_000, 100, 3_600_000),
    keepAliveMs: int('keepAliveMs', o.keepAliveMs, 15_000, 100, 3_600_000),
    pingIntervalMs: int('pingIntervalMs', o.pingIntervalMs, 30_000, 100, 3_600_000),
    maxBufferedBytes: int('maxBufferedBytes', o.maxBufferedBytes, 16 * 1_048_576, 1024, 1024 * 1_048_576),
    maxPendingMessages: int('maxPendingMessages', o.maxPendingMessages, 64, 1, 10_000),
  };
}
