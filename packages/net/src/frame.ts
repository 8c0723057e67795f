/**
 * Wire format of Parley's request/response streams and gossip envelopes.
 *
 * Every stream carries length-prefixed frames: a 4-byte big-endian body
 * length, then the body. The body's first byte is its tag:
 *
 * | tag | frame    | body after the tag                                              |
 * | --- | -------- | --------------------------------------------------------------- |
 * | 1   | hello    | u8 version (1), u16 protocol length, protocol (UTF-8)           |
 * | 2   | request  | u32 request id, payload                                         |
 * | 3   | response | u32 request id, payload                                         |
 * | 4   | error    | u32 request id, u8 code length, code, u32 message length,       |
 * |     |          | message (UTF-8), details (JSON, rest of the body)               |
 * | 5   | message  | payload (one-way: no id, never answered)                        |
 *
 * The dialer sends `hello` once, naming the application protocol the stream
 * serves; every later frame on that stream is a request or a one-way message
 * (dialer → listener) or a response/error (listener → dialer) carrying the
 * request's id. A message frame obeys the same size bound as a request.
 *
 * Gossip payloads travel in an envelope: u8 version (1), 16-byte unique
 * message id, u8 origin length, origin peer id (UTF-8), payload. The id keeps
 * identical payloads from being deduplicated by the gossip layer.
 *
 * Decoding untrusted bytes throws only DecodeError and never allocates more
 * than the input length (bounded by the maximum frame size) justifies.
 */
import { DecodeError, ERROR_STATUS, type ErrorCode, ParleyError } from '@parley/interface';
import type { RpcStream } from './rpc-stream.js';

export const WIRE_VERSION = 1;
export const FRAME_HEADER_BYTES = 4;
/** Longest application protocol name accepted in a hello frame. */
export const MAX_PROTOCOL_BYTES = 256;
/** Longest error message carried back to a caller; longer ones are cut. */
export const MAX_ERROR_MESSAGE_BYTES = 4096;
/** Longest JSON rendering of an error's details; larger details are dropped. */
export const MAX_ERROR_DETAILS_BYTES = 4096;
/** Bytes a frame adds around its payload (header, tag, id). */
export const FRAME_OVERHEAD_BYTES = FRAME_HEADER_BYTES + 1 + 4;
/** The largest error frame body. */
export const MAX_ERROR_BODY_BYTES = 1 + 4 + 1 + 255 + 4 + MAX_ERROR_MESSAGE_BYTES + MAX_ERROR_DETAILS_BYTES;

export type Frame =
  | { type: 'hello'; version: number; protocol: string }
  | { type: 'request'; id: number; payload: Uint8Array }
  | { type: 'response'; id: number; payload: Uint8Array }
  | { type: 'message'; payload: Uint8Array }
  | { type: 'error'; id: number; code: ErrorCode; message: string; details: Record<string, unknown> };

const TAG = { hello: 1, request: 2, response: 3, error: 4, message: 5 } as const;

const utf8Encoder = new TextEncoder();
// `ignoreBOM`: a protocol name, message or origin that starts with U+FEFF keeps it (the default strips it).
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The largest frame body a peer may send when payloads are at most `maxMessageBytes`. */
export function maxFrameBodyBytes(maxMessageBytes: number): number {
  return Math.max(maxMessageBytes + 1 + 4, MAX_ERROR_BODY_BYTES, 1 + 1 + 2 + MAX_PROTOCOL_BYTES);
}

function cutUtf8(text: string, maxBytes: number): Uint8Array {
  const bytes = utf8Encoder.encode(text);
  if (bytes.length <= maxBytes) return bytes;
  // Back off to a character boundary so the cut text still decodes.
  let end = maxBytes;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

/** Encodes one frame, header included. */
export function encodeFrame(frame: Frame): Uint8Array {
  switch (frame.type) {
    case 'hello': {
      const proto = utf8Encoder.encode(frame.protocol);
      if (proto.length > MAX_PROTOCOL_BYTES) {
        throw new DecodeError(`protocol name is ${proto.length} bytes, over ${MAX_PROTOCOL_BYTES}`);
      }
      const out = new Uint8Array(FRAME_HEADER_BYTES + 4 + proto.length);
      const view = new DataView(out.buffer);
      view.setUint32(0, out.length - FRAME_HEADER_BYTES);
      out[4] = TAG.hello;
      out[5] = frame.version;
      view.setUint16(6, proto.length);
      out.set(proto, 8);
      return out;
    }
    case 'request':
    case 'response': {
      const out = new Uint8Array(FRAME_OVERHEAD_BYTES + frame.payload.length);
      const view = new DataView(out.buffer);
      view.setUint32(0, out.length - FRAME_HEADER_BYTES);
      out[4] = TAG[frame.type];
      view.setUint32(5, frame.id);
      out.set(frame.payload, FRAME_OVERHEAD_BYTES);
      return out;
    }
    case 'message': {
      const out = new Uint8Array(FRAME_HEADER_BYTES + 1 + frame.payload.length);
      new DataView(out.buffer).setUint32(0, out.length - FRAME_HEADER_BYTES);
      out[4] = TAG.message;
      out.set(frame.payload, FRAME_HEADER_BYTES + 1);
      return out;
    }
    case 'error': {
      const code = utf8Encoder.encode(frame.code);
      const message = cutUtf8(frame.message, MAX_ERROR_MESSAGE_BYTES);
      let details = utf8Encoder.encode(safeJson(frame.details));
      if (details.length > MAX_ERROR_DETAILS_BYTES) details = utf8Encoder.encode('{}');
      const out = new Uint8Array(FRAME_OVERHEAD_BYTES + 1 + code.length + 4 + message.length + details.length);
      const view = new DataView(out.buffer);
      view.setUint32(0, out.length - FRAME_HEADER_BYTES);
      out[4] = TAG.error;
      view.setUint32(5, frame.id);
      let at = FRAME_OVERHEAD_BYTES;
      out[at++] = code.length;
      out.set(code, at);
      at += code.length;
      view.setUint32(at, message.length);
      at += 4;
      out.set(message, at);
      at += message.length;
      out.set(details, at);
      return out;
    }
  }
}

function safeJson(details: Record<string, unknown>): string {
  try {
    return JSON.stringify(details) ?? '{}';
  } catch {
    return '{}';
  }
}

function decodeText(bytes: Uint8Array, what: string, offset: number): string {
  try {
    return utf8Decoder.decode(bytes);
  } catch {
    throw new DecodeError(`${what} is not valid UTF-8`, offset);
  }
}

/** Decodes one frame body (the bytes after the length header). */
export function decodeFrameBody(body: Uint8Array): Frame {
  if (body.length < 1) throw new DecodeError('empty frame', 0);
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const tag = body[0];
  if (tag === TAG.hello) {
    if (body.length < 4) throw new DecodeError('truncated hello frame', body.length);
    const version = body[1] as number;
    const length = view.getUint16(2);
    if (length > MAX_PROTOCOL_BYTES) throw new DecodeError(`protocol name of ${length} bytes`, 2);
    if (body.length !== 4 + length) throw new DecodeError('hello frame length mismatch', body.length);
    return { type: 'hello', version, protocol: decodeText(body.subarray(4), 'protocol name', 4) };
  }
  if (tag === TAG.message) return { type: 'message', payload: body.subarray(1) };
  if (tag === TAG.request || tag === TAG.response || tag === TAG.error) {
    if (body.length < 5) throw new DecodeError('truncated frame', body.length);
    const id = view.getUint32(1);
    if (tag === TAG.request) return { type: 'request', id, payload: body.subarray(5) };
    if (tag === TAG.response) return { type: 'response', id, payload: body.subarray(5) };
    let at = 5;
    if (body.length < at + 1) throw new DecodeError('truncated error frame', at);
    const codeLength = body[at++] as number;
    if (body.length < at + codeLength + 4) throw new DecodeError('truncated error frame', at);
    const codeText = decodeText(body.subarray(at, at + codeLength), 'error code', at);
    at += codeLength;
    const messageLength = view.getUint32(at);
    at += 4;
    if (messageLength > MAX_ERROR_MESSAGE_BYTES || body.length < at + messageLength) {
      throw new DecodeError('bad error message length', at - 4);
    }
    const message = decodeText(body.subarray(at, at + messageLength), 'error message', at);
    at += messageLength;
    let details: Record<string, unknown> = {};
    if (at < body.length) {
      if (body.length - at > MAX_ERROR_DETAILS_BYTES) throw new DecodeError('error details too long', at);
      try {
        const parsed: unknown = JSON.parse(decodeText(body.subarray(at), 'error details', at));
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
          // Keep exactly what encodeFrame would send on: its JSON text turns 1e400 into null, and may outgrow
          // the limit (1e21 prints as 22 digits), in which case it sends {}.
          const text = JSON.stringify(parsed);
          if (utf8Encoder.encode(text).length <= MAX_ERROR_DETAILS_BYTES) details = JSON.parse(text);
        }
      } catch (err) {
        if (err instanceof DecodeError) throw err;
        throw new DecodeError('error details are not JSON', at);
      }
    }
    // An unknown code from a newer or hostile peer still reaches the caller as a typed error.
    const code: ErrorCode = Object.hasOwn(ERROR_STATUS, codeText) ? (codeText as ErrorCode) : 'unavailable';
    return { type: 'error', id, code, message, details };
  }
  throw new DecodeError(`unknown frame tag ${tag}`, 0);
}

/** Rebuilds the ParleyError an error frame describes. */
export function errorFromFrame(frame: Extract<Frame, { type: 'error' }>): ParleyError {
  return new ParleyError(frame.code, frame.message, frame.details);
}

/**
 * Reassembles frames from a byte stream that arrives in arbitrary chunks.
 * A length header over `maxBodyBytes` throws DecodeError before any of the
 * announced body is buffered, so a hostile peer cannot make it allocate.
 */
export class FrameReader {
  private chunks: Uint8Array[] = [];
  private buffered = 0;

  constructor(private readonly maxBodyBytes: number) {}

  get bufferedBytes(): number {
    return this.buffered;
  }

  /** Adds bytes and returns every frame body now complete. */
  push(chunk: Uint8Array): Uint8Array[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    const bodies: Uint8Array[] = [];
    for (;;) {
      if (this.buffered < FRAME_HEADER_BYTES) break;
      const header = this.peek(FRAME_HEADER_BYTES);
      const length = new DataView(header.buffer, header.byteOffset, 4).getUint32(0);
      if (length > this.maxBodyBytes) {
        throw new DecodeError(`frame of ${length} bytes exceeds the ${this.maxBodyBytes}-byte limit`, 0);
      }
      if (this.buffered < FRAME_HEADER_BYTES + length) break;
      this.take(FRAME_HEADER_BYTES);
      bodies.push(this.take(length));
    }
    return bodies;
  }

  private peek(n: number): Uint8Array {
    const first = this.chunks[0] as Uint8Array;
    if (first.length >= n) return first.subarray(0, n);
    const out = new Uint8Array(n);
    let at = 0;
    for (const chunk of this.chunks) {
      const part = chunk.subarray(0, n - at);
      out.set(part, at);
      at += part.length;
      if (at === n) break;
    }
    return out;
  }

  private take(n: number): Uint8Array {
    // A zero-length frame (its header just taken) may leave no chunk to take from.
    if (n === 0) return new Uint8Array(0);
    this.buffered -= n;
    const first = this.chunks[0] as Uint8Array;
    if (first.length === n) {
      this.chunks.shift();
      return first;
    }
    if (first.length > n) {
      this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const chunk = this.chunks[0] as Uint8Array;
      const need = n - at;
      if (chunk.length <= need) {
        out.set(chunk, at);
        at += chunk.length;
        this.chunks.shift();
      } else {
        out.set(chunk.subarray(0, need), at);
        this.chunks[0] = chunk.subarray(need);
        at += need;
      }
    }
    return out;
  }
}

/**
 * Reads the frames `stream` carries: its chunks through a FrameReader of
 * `maxBodyBytes`, each complete body decoded and handed to `onFrame`, which
 * returns false once it has closed the stream (the rest of the chunk is not
 * read). A chunk that breaks the framing, or a body that does not decode,
 * goes to `onBad` with the reason to log, and nothing after it is read.
 */
export function readFrames(
  stream: RpcStream,
  maxBodyBytes: number,
  onFrame: (frame: Frame) => boolean,
  onBad: (why: string, err: unknown) => void,
): void {
  const reader = new FrameReader(maxBodyBytes);
  stream.onData((chunk) => {
    let bodies: Uint8Array[];
    try {
      bodies = reader.push(chunk);
    } catch (err) {
      onBad('bad frame from peer; closing the stream', err);
      return;
    }
    for (const body of bodies) {
      let frame: Frame;
      try {
        frame = decodeFrameBody(body);
      } catch (err) {
        onBad('undecodable frame from peer; closing the stream', err);
        return;
      }
      if (!onFrame(frame)) return;
    }
  });
}

export const GOSSIP_ID_BYTES = 16;
const MAX_ORIGIN_BYTES = 255;

export interface GossipEnvelope {
  id: Uint8Array;
  origin: string;
  payload: Uint8Array;
}

export function encodeGossip(envelope: GossipEnvelope): Uint8Array {
  const origin = utf8Encoder.encode(envelope.origin);
  if (origin.length > MAX_ORIGIN_BYTES) throw new DecodeError(`origin of ${origin.length} bytes`);
  if (envelope.id.length !== GOSSIP_ID_BYTES) throw new DecodeError(`gossip id of ${envelope.id.length} bytes`);
  const out = new Uint8Array(1 + GOSSIP_ID_BYTES + 1 + origin.length + envelope.payload.length);
  out[0] = WIRE_VERSION;
  out.set(envelope.id, 1);
  out[1 + GOSSIP_ID_BYTES] = origin.length;
  out.set(origin, 2 + GOSSIP_ID_BYTES);
  out.set(envelope.payload, 2 + GOSSIP_ID_BYTES + origin.length);
  return out;
}

export function decodeGossip(bytes: Uint8Array): GossipEnvelope {
  if (bytes.length < 2 + GOSSIP_ID_BYTES) throw new DecodeError('truncated gossip envelope', bytes.length);
  if (bytes[0] !== WIRE_VERSION) throw new DecodeError(`unknown gossip envelope version ${bytes[0]}`, 0);
  const originLength = bytes[1 + GOSSIP_ID_BYTES] as number;
  const start = 2 + GOSSIP_ID_BYTES;
  if (bytes.length < start + originLength) throw new DecodeError('truncated gossip origin', bytes.length);
  return {
    id: bytes.subarray(1, 1 + GOSSIP_ID_BYTES),
    origin: decodeText(bytes.subarray(start, start + originLength), 'gossip origin', start),
    payload: bytes.subarray(start + originLength),
  };
}

/** Overhead the envelope adds to a gossip payload, for an origin of `originBytes`. */
export function gossipOverheadBytes(originBytes = MAX_ORIGIN_BYTES): number {
  return 2 + GOSSIP_ID_BYTES + originBytes;
}
