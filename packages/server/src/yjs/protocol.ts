/**
 * The y-websocket wire format (y-protocols 1.x), as the stock `WebsocketProvider`
 * speaks it: every WebSocket message is a varuint message type and its body.
 *
 *   0 sync       varuint 0 step 1 + varbytes state vector
 *                varuint 1 step 2 + varbytes update (v1)
 *                varuint 2 update + varbytes update (v1)
 *   1 awareness  varbytes awareness update:
 *                varuint n, then n × (varuint clientID, varuint clock, varstring JSON state)
 *   2 auth       varuint 0 permission denied + varstring reason (server → client)
 *   3 query awareness (no body): answered with every known awareness state
 *
 * The provider sends one message per WebSocket message and only v1 updates
 * (y-protocols' sync module reads and writes v1); several messages back to back
 * in one WebSocket message are accepted too. Anything else is a DecodeError.
 */
import { DecodeError } from '@parley/interface';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';

export const MESSAGE_SYNC = 0;
export const MESSAGE_AWARENESS = 1;
export const MESSAGE_AUTH = 2;
export const MESSAGE_QUERY_AWARENESS = 3;

export const SYNC_STEP1 = 0;
export const SYNC_STEP2 = 1;
export const SYNC_UPDATE = 2;

const AUTH_PERMISSION_DENIED = 0;

export type ClientMessage =
  | { type: 'sync-step1'; stateVector: Uint8Array }
  | { type: 'sync-step2' | 'sync-update'; update: Uint8Array }
  | { type: 'awareness'; update: Uint8Array }
  | { type: 'query-awareness' }
  | { type: 'auth' };

/** One client's awareness entry; `state` is its JSON text, 'null' for a client that left. */
export interface AwarenessEntry {
  clientID: number;
  clock: number;
  state: string;
}

/** Decodes every message of one WebSocket message; throws DecodeError on anything malformed. */
export function decodeClientMessages(bytes: Uint8Array): ClientMessage[] {
  const out: ClientMessage[] = [];
  const d = decoding.createDecoder(bytes);
  try {
    do {
      const type = decoding.readVarUint(d);
      if (type === MESSAGE_SYNC) {
        const step = decoding.readVarUint(d);
        const body = decoding.readVarUint8Array(d);
        if (step === SYNC_STEP1) out.push({ type: 'sync-step1', stateVector: body });
        else if (step === SYNC_STEP2) out.push({ type: 'sync-step2', update: body });
        else if (step === SYNC_UPDATE) out.push({ type: 'sync-update', update: body });
        else throw new DecodeError(`unknown sync message type ${step}`);
      } else if (type === MESSAGE_AWARENESS) {
        out.push({ type: 'awareness', update: decoding.readVarUint8Array(d) });
      } else if (type === MESSAGE_QUERY_AWARENESS) {
        out.push({ type: 'query-awareness' });
      } else if (type === MESSAGE_AUTH) {
        // A client has nothing to say here; read it whole so what follows stays aligned.
        decoding.readVarUint(d);
        decoding.readVarString(d);
        out.push({ type: 'auth' });
      } else {
        throw new DecodeError(`unknown y-websocket message type ${type}`);
      }
    } while (decoding.hasContent(d));
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError(`malformed y-websocket message: ${(err as Error)?.message ?? String(err)}`);
  }
  return out;
}

function message(build: (e: encoding.Encoder) => void): Uint8Array {
  const e = encoding.createEncoder();
  build(e);
  return encoding.toUint8Array(e);
}

export function encodeSyncStep1(stateVector: Uint8Array): Uint8Array {
  return message((e) => {
    encoding.writeVarUint(e, MESSAGE_SYNC);
    encoding.writeVarUint(e, SYNC_STEP1);
    encoding.writeVarUint8Array(e, stateVector);
  });
}

export function encodeSyncStep2(update: Uint8Array): Uint8Array {
  return message((e) => {
    encoding.writeVarUint(e, MESSAGE_SYNC);
    encoding.writeVarUint(e, SYNC_STEP2);
    encoding.writeVarUint8Array(e, update);
  });
}

export function encodeSyncUpdate(update: Uint8Array): Uint8Array {
  return message((e) => {
    encoding.writeVarUint(e, MESSAGE_SYNC);
    encoding.writeVarUint(e, SYNC_UPDATE);
    encoding.writeVarUint8Array(e, update);
  });
}

export function encodeAwarenessMessage(entries: readonly AwarenessEntry[]): Uint8Array {
  return message((e) => {
    encoding.writeVarUint(e, MESSAGE_AWARENESS);
    encoding.writeVarUint8Array(e, encodeAwarenessUpdate(entries));
  });
}

/** An awareness message with no entries: the provider reads it as a message (its liveness check) and changes nothing. */
export const KEEPALIVE_MESSAGE: Uint8Array = encodeAwarenessMessage([]);

export function encodePermissionDenied(reason: string): Uint8Array {
  return message((e) => {
    encoding.writeVarUint(e, MESSAGE_AUTH);
    encoding.writeVarUint(e, AUTH_PERMISSION_DENIED);
    encoding.writeVarString(e, reason);
  });
}

export function encodeAwarenessUpdate(entries: readonly AwarenessEntry[]): Uint8Array {
  return message((e) => {
    encoding.writeVarUint(e, entries.length);
    for (const entry of entries) {
      encoding.writeVarUint(e, entry.clientID);
      encoding.writeVarUint(e, entry.clock);
      encoding.writeVarString(e, entry.state);
    }
  });
}

/** Decodes an awareness update; every state must be JSON text (as the provider's JSON.parse will read it). */
export function decodeAwarenessUpdate(bytes: Uint8Array): AwarenessEntry[] {
  const d = decoding.createDecoder(bytes);
  const out: AwarenessEntry[] = [];
  try {
    const n = decoding.readVarUint(d);
    // Every entry takes at least 3 bytes: a count beyond that is a lie, not a reason to allocate.
    if (n > bytes.length) throw new DecodeError(`awareness update claims ${n} entries in ${bytes.length} bytes`);
    for (let i = 0; i < n; i++) {
      const clientID = decoding.readVarUint(d);
      const clock = decoding.readVarUint(d);
      const state = decoding.readVarString(d);
      JSON.parse(state);
      out.push({ clientID, clock, state });
    }
    if (decoding.hasContent(d)) throw new DecodeError('trailing bytes after an awareness update');
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError(`malformed awareness update: ${(err as Error)?.message ?? String(err)}`);
  }
  return out;
}
