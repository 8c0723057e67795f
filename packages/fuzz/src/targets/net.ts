/**
 * @parley/net: frame bodies (decodeFrameBody), the stream reassembler
 * (FrameReader) and gossip envelopes (decodeGossip), all in frame.ts.
 */
import { DecodeError, ERROR_STATUS, type ErrorCode, SeededRandom } from '@parley/interface';
import {
  decodeFrameBody,
  decodeGossip,
  encodeFrame,
  encodeGossip,
  FRAME_HEADER_BYTES,
  type Frame,
  FrameReader,
  type GossipEnvelope,
  MAX_ERROR_DETAILS_BYTES,
  maxFrameBodyBytes,
} from '@parley/net/codec';
import { bytesEqual } from '../equal.js';
import type { Gen } from '../gen.js';
import { InvariantError, type Target } from '../target.js';

const CODES = Object.keys(ERROR_STATUS) as ErrorCode[];
/** The FrameReader's limit in this target: small enough that mutated length headers often cross it. */
const MAX_BODY_BYTES = maxFrameBodyBytes(1 << 16);

const utf8 = new TextEncoder();

/** `text` cut at a code point boundary to at most `maxBytes` of UTF-8. */
function fitUtf8(text: string, maxBytes: number): string {
  let points = [...text];
  while (utf8.encode(points.join('')).length > maxBytes) points = points.slice(0, points.length >> 1);
  return points.join('');
}

function frame(g: Gen): Frame {
  switch (g.int(4)) {
    case 0: {
      return { type: 'hello', version: g.int(256), protocol: fitUtf8(g.string(g.bool(0.1) ? 256 : 40), 256) };
    }
    case 1:
    case 2:
      return {
        type: g.bool() ? 'request' : 'response',
        id: g.rng.nextU32(),
        payload: g.bool(0.005) ? g.bytes(g.int(1 << 16)) : g.blob(1024),
      };
    default: {
      const details: Record<string, unknown> = {};
      for (let i = g.size(8); i > 0; i--) {
        // defineProperty: a '__proto__' key must be an own key (as JSON.parse makes it), not the prototype.
        Object.defineProperty(details, g.string(8), {
          value: g.json(g.bool(0.1) ? 500 : 4, 50),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      // Larger details are dropped by the encoder (a documented limit), so a valid frame's stay within it.
      for (const key of Object.keys(details)) {
        if (utf8.encode(JSON.stringify(details)).length <= MAX_ERROR_DETAILS_BYTES) break;
        delete details[key];
      }
      return { type: 'error', id: g.rng.nextU32(), code: g.pick(CODES), message: g.string(1000), details };
    }
  }
}

function body(f: Frame): Uint8Array {
  return encodeFrame(f).subarray(FRAME_HEADER_BYTES);
}

function withHeader(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, FRAME_HEADER_BYTES);
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** What a FrameReader made of a stream: the complete bodies and the bytes still buffered. */
export interface Stream {
  bodies: Uint8Array[];
  tail: Uint8Array;
}

function feed(chunks: readonly Uint8Array[]): { bodies: Uint8Array[]; buffered: number } {
  const reader = new FrameReader(MAX_BODY_BYTES);
  const bodies: Uint8Array[] = [];
  for (const chunk of chunks) {
    for (const b of reader.push(chunk)) bodies.push(b);
    if (reader.bufferedBytes >= FRAME_HEADER_BYTES + MAX_BODY_BYTES) {
      throw new InvariantError(`FrameReader holds ${reader.bufferedBytes} bytes, over its bound`);
    }
  }
  return { bodies, buffered: reader.bufferedBytes };
}

function attempt<T>(fn: () => T): { ok: T } | { err: unknown } {
  try {
    return { ok: fn() };
  } catch (err) {
    return { err };
  }
}

/**
 * Feeds the stream whole and in small random chunks (chosen from the bytes themselves, so
 * decoding is a function of the input). Both must agree, and the bodies with their headers
 * must be exactly the consumed prefix of the stream.
 */
function readStream(bytes: Uint8Array): Stream {
  const rng = new SeededRandom(bytes.length * 31 + (bytes[0] ?? 0) + (bytes[bytes.length - 1] ?? 0) * 257);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = 1 + rng.int(rng.int(2) === 0 ? 8 : 4096);
    chunks.push(bytes.subarray(at, at + n));
    at += n;
  }
  const whole = attempt(() => feed([bytes]));
  const pieces = attempt(() => feed(chunks));
  if ('err' in whole || 'err' in pieces) {
    const a = 'err' in whole ? whole.err : undefined;
    const b = 'err' in pieces ? pieces.err : undefined;
    if (!(a instanceof DecodeError && b instanceof DecodeError)) {
      if (a !== undefined && !(a instanceof DecodeError)) throw a;
      if (b !== undefined && !(b instanceof DecodeError)) throw b;
      throw new InvariantError('FrameReader rejects a stream in one chunking and accepts it in another');
    }
    throw a;
  }
  const { bodies, buffered } = whole.ok;
  const other = pieces.ok;
  if (other.buffered !== buffered || other.bodies.length !== bodies.length) {
    throw new InvariantError('FrameReader output depends on how the stream is chunked');
  }
  let at = 0;
  for (let i = 0; i < bodies.length; i++) {
    const b = bodies[i] as Uint8Array;
    if (!bytesEqual(b, other.bodies[i] as Uint8Array)) throw new InvariantError('chunking changed a frame body');
    const header = new DataView(bytes.buffer, bytes.byteOffset + at, FRAME_HEADER_BYTES).getUint32(0);
    if (
      header !== b.length ||
      !bytesEqual(b, bytes.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + header))
    ) {
      throw new InvariantError(`frame ${i} is not the stream's bytes at ${at}`);
    }
    at += FRAME_HEADER_BYTES + b.length;
  }
  if (at + buffered !== bytes.length) throw new InvariantError('FrameReader lost or invented bytes');
  return { bodies, tail: bytes.slice(at) };
}

function stream(g: Gen): Stream {
  const bodies = Array.from({ length: g.size(32) }, () => body(frame(g)));
  let tail = new Uint8Array(0);
  if (g.bool(0.5)) {
    const next = withHeader(body(frame(g)));
    tail = next.slice(0, g.int(next.length));
  }
  return { bodies, tail };
}

export const netTargets: Target[] = [
  {
    name: 'net.decodeFrameBody',
    codes: ['decode_error'],
    generate: frame,
    encode: body,
    decode: decodeFrameBody,
  } satisfies Target<Frame>,
  {
    name: 'net.FrameReader',
    codes: ['decode_error'],
    generate: stream,
    encode: (s: Stream) => concat([...s.bodies.map(withHeader), s.tail]),
    decode: readStream,
  } satisfies Target<Stream>,
  {
    name: 'net.decodeGossip',
    codes: ['decode_error'],
    generate: (g: Gen): GossipEnvelope => {
      const origin = fitUtf8(g.string(g.bool(0.1) ? 255 : 60), 255);
      return { id: g.bytes(16), origin, payload: g.bool(0.002) ? g.bytes(g.int(1 << 20)) : g.blob(1024) };
    },
    encode: (e: GossipEnvelope) => encodeGossip(e),
    decode: decodeGossip,
  } satisfies Target<GossipEnvelope>,
];
