/**
 * The sync protocol between a browser replica and the node it connects to
 * (`ws://host:port/sync/{namespace}`, docs/browser.md): binary WebSocket
 * messages, one frame each, carrying @parley/crdt's own delta and digest
 * encodings — the same bytes nodes exchange over libp2p.
 *
 * Frame table
 * -----------
 *   byte 0   SYNC_VERSION (1)
 *   byte 1   tag:
 *              0x01 HELLO    client → node: str replicaId, then an encoded digest
 *              0x02 WELCOME  node → client: str nodeId, varint maxFrameBytes, varint maxTtlSeconds,
 *                            varint nowMs (the node's clock: a client behind it moves its own forward)
 *              0x03 DIGEST   either way: an encoded digest; the receiver answers with DELTA
 *                            frames of what it lacks (the node also sends its own DIGEST back)
 *              0x04 DELTA    either way: varint seq (0: no ACK wanted), then an encoded delta
 *              0x05 ACK      node → client: varint seq — that DELTA is merged and durable on the node
 *              0x06 ERROR    node → client: str code, str message; the node closes after it
 *
 * Session: HELLO is answered by WELCOME, the DELTA frames the client lacks and
 * the node's DIGEST; the client answers a DIGEST with the DELTA frames the
 * node lacks. Then both sides send live DELTA frames, and the client sends a
 * DIGEST every sync period (anti-entropy over the one connection).
 *
 * Decoding throws only DecodeError, checks the frame against a size bound
 * first, and allocates in proportion to the input (the embedded deltas and
 * digests are decoded by @parley/crdt's canonical decoders).
 */
import { type Delta, type Digest, decodeDelta, decodeDigest, encodeDelta, encodeDigest } from '@parley/crdt';
import { ByteReader, ByteWriter, DecodeError } from '@parley/interface';

export const SYNC_VERSION = 1;
export const SYNC_PATH = '/sync';
export const TAG_HELLO = 0x01;
export const TAG_WELCOME = 0x02;
export const TAG_DIGEST = 0x03;
export const TAG_DELTA = 0x04;
export const TAG_ACK = 0x05;
export const TAG_ERROR = 0x06;

/** Largest frame either side sends or accepts by default: the node's value limit and room for a key and the header. */
export const DEFAULT_MAX_FRAME_BYTES = 1_048_576 + 64 * 1024;
/** Longest error message and code a frame carries (UTF-16 units): longer ones are cut on sending, refused on receipt. */
const MAX_ERROR_CHARS = 1024;
const MAX_CODE_CHARS = 64;

/** `text` cut to `max` UTF-16 units, never through a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

export type Frame =
  | { tag: typeof TAG_HELLO; replicaId: string; digest: Digest }
  | { tag: typeof TAG_WELCOME; nodeId: string; maxFrameBytes: number; maxTtlSeconds: number; nowMs: number }
  | { tag: typeof TAG_DIGEST; digest: Digest }
  | { tag: typeof TAG_DELTA; seq: number; delta: Delta; bytes: Uint8Array }
  | { tag: typeof TAG_ACK; seq: number }
  | { tag: typeof TAG_ERROR; code: string; message: string };

function head(tag: number, size: number): ByteWriter {
  const w = new ByteWriter(size + 16);
  w.u8(SYNC_VERSION);
  w.u8(tag);
  return w;
}

function withBody(w: ByteWriter, body: Uint8Array): Uint8Array {
  const h = w.finish();
  const out = new Uint8Array(h.length + body.length);
  out.set(h, 0);
  out.set(body, h.length);
  return out;
}

export function encodeHello(replicaId: string, digest: Digest): Uint8Array {
  const w = head(TAG_HELLO, replicaId.length * 3);
  w.string(replicaId);
  return withBody(w, encodeDigest(digest));
}

export function encodeWelcome(nodeId: string, maxFrameBytes: number, maxTtlSeconds: number, nowMs: number): Uint8Array {
  const w = head(TAG_WELCOME, nodeId.length * 3 + 24);
  w.string(nodeId);
  w.uint(maxFrameBytes);
  w.uint(maxTtlSeconds);
  w.uint(nowMs);
  return w.finish();
}

export function encodeDigestFrame(digest: Digest): Uint8Array {
  return withBody(head(TAG_DIGEST, 0), encodeDigest(digest));
}

/** A DELTA frame around an already encoded delta (`encodeDelta`). */
export function encodeDeltaFrame(seq: number, encodedDelta: Uint8Array): Uint8Array {
  const w = head(TAG_DELTA, 8);
  w.uint(seq);
  return withBody(w, encodedDelta);
}

export function encodeAck(seq: number): Uint8Array {
  const w = head(TAG_ACK, 8);
  w.uint(seq);
  return w.finish();
}

export function encodeError(code: string, message: string): Uint8Array {
  const text = cut(message, MAX_ERROR_CHARS);
  const name = cut(code, MAX_CODE_CHARS);
  const w = head(TAG_ERROR, name.length * 3 + text.length * 3 + 8);
  w.string(name);
  w.string(text);
  return w.finish();
}

/**
 * Splits a delta into deltas whose encodings stay near `maxBytes` (a single
 * state larger than that travels alone), to be sent and merged in order. Only
 * the last part carries the context: merging the parts in order gives what
 * merging the whole would, and merging a prefix of them (a connection lost
 * midway) gives a subset whose gaps the next digest exchange fills. (The
 * context must not arrive first: a receiver skips states whose dots it has.)
 */
export function splitDelta(delta: Delta, maxBytes: number): Uint8Array[] {
  const whole = encodeDelta(delta);
  if (whole.length <= maxBytes || delta.states.length <= 1) return [whole];
  const parts: Uint8Array[] = [];
  let batch: Delta['states'][number][] = [];
  let estimate = 0;
  const flush = (context: Delta['context']) => {
    parts.push(encodeDelta({ namespace: delta.namespace, states: batch, context }));
    batch = [];
    estimate = 0;
  };
  for (const s of delta.states) {
    const size = encodeDelta({ namespace: delta.namespace, states: [s], context: new Map() }).length;
    if (batch.length > 0 && estimate + size > maxBytes) flush(new Map());
    batch.push(s);
    estimate += size;
  }
  flush(delta.context);
  return parts;
}

function rest(bytes: Uint8Array, r: ByteReader): Uint8Array {
  return bytes.subarray(r.pos);
}

/** Decodes one frame of at most `maxBytes`; throws DecodeError on anything else. */
export function decodeFrame(bytes: Uint8Array, maxBytes: number): Frame {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError('a frame is binary');
  if (bytes.length > maxBytes) throw new DecodeError(`frame of ${bytes.length} bytes exceeds ${maxBytes}`);
  try {
    const r = new ByteReader(bytes);
    const version = r.u8();
    if (version !== SYNC_VERSION) throw new DecodeError(`unsupported sync version ${version}`, 0);
    const tag = r.u8();
    switch (tag) {
      case TAG_HELLO: {
        const replicaId = r.string();
        if (replicaId.length === 0 || replicaId.length > 255) throw new DecodeError('bad replica id', r.pos);
        return { tag, replicaId, digest: decodeDigest(rest(bytes, r)) };
      }
      case TAG_WELCOME: {
        const nodeId = r.string();
        const maxFrameBytes = r.uint();
        const maxTtlSeconds = r.uint();
        const nowMs = r.uint();
        r.end();
        return { tag, nodeId, maxFrameBytes, maxTtlSeconds, nowMs };
      }
      case TAG_DIGEST:
        return { tag, digest: decodeDigest(rest(bytes, r)) };
      case TAG_DELTA: {
        const seq = r.uint();
        const body = rest(bytes, r);
        return { tag, seq, delta: decodeDelta(body), bytes: body };
      }
      case TAG_ACK: {
        const seq = r.uint();
        r.end();
        return { tag, seq };
      }
      case TAG_ERROR: {
        const code = r.string();
        if (code.length > MAX_CODE_CHARS) throw new DecodeError('error code too long', r.pos);
        const message = r.string();
        if (message.length > MAX_ERROR_CHARS) throw new DecodeError('error message too long', r.pos);
        r.end();
        return { tag, code, message };
      }
      default:
        throw new DecodeError(`unknown sync frame tag ${tag}`, 1);
    }
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError(`undecodable sync frame: ${String((err as Error)?.message ?? err)}`);
  }
}
