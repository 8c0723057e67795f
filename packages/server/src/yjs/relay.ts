/**
 * Awareness between the nodes of a room, on the namespace's ephemeral channel
 * `yjs-aw.<first 32 hex digits of sha256(key)>` (never persisted):
 *
 *   u8 version (1) · u8 op · string key · [bytes awareness update]
 *   op 0 UPDATE  entries this node took from its own clients (set, renewed, removed)
 *   op 1 QUERY   "a client of this room just arrived here": every node answers with
 *                an UPDATE of the present clients its own connections own
 *
 * The key is in the message because the channel name is a digest; a message for
 * another key (a digest collision) is dropped.
 */
import { createHash } from 'node:crypto';
import { ByteReader, ByteWriter, DecodeError } from '@parley/interface';
import { type AwarenessEntry, encodeAwarenessUpdate } from './protocol.js';

const VERSION = 1;
export const RELAY_UPDATE = 0;
export const RELAY_QUERY = 1;
/** Relayed updates are cut to about this size (a state is at most maxStateBytes, far below). */
export const RELAY_CHUNK_BYTES = 64 * 1024;

export type RelayMessage =
  | { op: typeof RELAY_UPDATE; key: string; update: Uint8Array }
  | { op: typeof RELAY_QUERY; key: string };

export function awarenessChannel(key: string): string {
  return `yjs-aw.${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 32)}`;
}

export function encodeRelay(m: RelayMessage): Uint8Array {
  const w = new ByteWriter(16 + m.key.length * 3 + (m.op === RELAY_UPDATE ? m.update.length + 5 : 0));
  w.u8(VERSION);
  w.u8(m.op);
  w.string(m.key);
  if (m.op === RELAY_UPDATE) w.bytes(m.update);
  return w.finish();
}

export function decodeRelay(bytes: Uint8Array): RelayMessage {
  try {
    const r = new ByteReader(bytes);
    const version = r.u8();
    if (version !== VERSION) throw new DecodeError(`unknown awareness relay version ${version}`);
    const op = r.u8();
    const key = r.string();
    let m: RelayMessage;
    if (op === RELAY_UPDATE) m = { op, key, update: r.bytes() };
    else if (op === RELAY_QUERY) m = { op, key };
    else throw new DecodeError(`unknown awareness relay op ${op}`);
    r.end();
    return m;
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError(`undecodable awareness relay message: ${String(err)}`);
  }
}

/** UPDATE messages carrying `entries`, each at most about RELAY_CHUNK_BYTES. */
export function relayUpdates(key: string, entries: readonly AwarenessEntry[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let chunk: AwarenessEntry[] = [];
  let bytes = 0;
  const flush = () => {
    if (chunk.length > 0) out.push(encodeRelay({ op: RELAY_UPDATE, key, update: encodeAwarenessUpdate(chunk) }));
    chunk = [];
    bytes = 0;
  };
  for (const e of entries) {
    const size = e.state.length * 3 + 20;
    if (bytes + size > RELAY_CHUNK_BYTES) flush();
    chunk.push(e);
    bytes += size;
  }
  flush();
  return out;
}
