/** Settings of the client-replica sync door (`createServer({ sync })`), with their defaults and bounds. */
import { DEFAULT_MAX_FRAME_BYTES } from '@parley/browser/wire';
import { InvalidArgumentError } from '@parley/interface';

/** Settings of the sync door (`createServer({ sync })`); every bound has a default. */
export interface SyncDoorOptions {
  /** URL path of the door; a client opens `<path>/{namespace}`. Default '/sync'. */
  path?: string;
  /** Open sync connections on this node. Default 1024. */
  maxConnections?: number;
  /** Largest frame either way: the node's value limit and room for a key (1 MiB + 64 KiB). */
  maxFrameBytes?: number;
  /** Deltas the node sends are split into frames of about this size. Default 256 KiB. */
  chunkBytes?: number;
  /** Frames a connection may send before its namespace is open. Default 64. */
  maxPendingFrames?: number;
  /** A client's deltas not yet durable (awaiting their ACK); one more closes the connection (1013). Default 256. */
  maxUnackedDeltas?: number;
  /** A connection whose unsent bytes exceed this is dropped (the client reconnects and resyncs). Default 16 MiB. */
  maxBufferedBytes?: number;
  /** A connection that has not answered the previous ping when the next is due is dropped. Default 30,000 ms. */
  pingIntervalMs?: number;
}

export type ResolvedSyncDoorOptions = Required<SyncDoorOptions>;

function int(name: string, v: number | undefined, dflt: number, min: number, max: number): number {
  const x = v ?? dflt;
  if (!Number.isSafeInteger(x) || x < min || x > max) {
    throw new InvalidArgumentError(`sync.${name} must be an integer in ${min}..${max}, got ${v}`);
  }
  return x;
}

export function resolveSyncDoorOptions(o: SyncDoorOptions = {}): ResolvedSyncDoorOptions {
  const path = o.path ?? '/sync';
  if (typeof path !== 'string' || !/^(\/[A-Za-z0-9._~-]+)+$/.test(path)) {
    throw new InvalidArgumentError("sync.path must look like '/sync' (no trailing slash)", { path: String(path) });
  }
  const maxFrameBytes = int('maxFrameBytes', o.maxFrameBytes, DEFAULT_MAX_FRAME_BYTES, 4096, 65 * 1_048_576);
  return {
    path,
    maxConnections: int('maxConnections', o.maxConnections, 1024, 1, 1_000_000),
    maxFrameBytes,
    chunkBytes: int('chunkBytes', o.chunkBytes, Math.min(256 * 1024, maxFrameBytes), 1024, maxFrameBytes),
    maxPendingFrames: int('maxPendingFrames', o.maxPendingFrames, 64, 1, 10_000),
    maxUnackedDeltas: int('maxUnackedDeltas', o.maxUnackedDeltas, 256, 1, 100_000),
    maxBufferedBytes: int('maxBufferedBytes', o.maxBufferedBytes, 16 * 1_048_576, 1024, 1024 * 1_048_576),
    pingIntervalMs: int('pingIntervalMs', o.pingIntervalMs, 30_000, 100, 3_600_000),
  };
}
