import { DecodeError, ParleyError, testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeFrameBody,
  decodeGossip,
  encodeFrame,
  encodeGossip,
  errorFromFrame,
  FRAME_HEADER_BYTES,
  type Frame,
  FrameReader,
  MAX_ERROR_MESSAGE_BYTES,
  maxFrameBodyBytes,
} from './frame.js';

const seed = testSeed(20261129);
const fcOptions = { seed, numRuns: 300 };
const reportSeed = <T>(run: () => T): T => withSeed(seed, run);

function bodyOf(encoded: Uint8Array): Uint8Array {
  return encoded.subarray(FRAME_HEADER_BYTES);
}

const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({
    type: fc.constant('hello' as const),
    version: fc.integer({ min: 0, max: 255 }),
    protocol: fc.string({ minLength: 1, maxLength: 60 }),
  }),
  fc.record({
    type: fc.constantFrom('request' as const, 'response' as const),
    id: fc.integer({ min: 0, max: 0xffff_ffff }),
    payload: fc.uint8Array({ maxLength: 300 }),
  }),
  fc.record({
    type: fc.constant('message' as const),
    payload: fc.uint8Array({ maxLength: 300 }),
  }),
  fc.record({
    type: fc.constant('error' as const),
    id: fc.integer({ min: 0, max: 0xffff_ffff }),
    code: fc.constantFrom('not_leader' as const, 'timeout' as const, 'version_mismatch' as const),
    message: fc.string({ maxLength: 80 }),
    details: fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer())),
  }),
);

describe('frame codec', () => {
  it('round-trips every frame type', () => {
    reportSeed(() =>
      fc.assert(
        fc.property(frameArb, (frame) => {
          const decoded = decodeFrameBody(bodyOf(encodeFrame(frame)));
          expect(decoded).toEqual(frame);
        }),
        fcOptions,
      ),
    );
  });

  it('reassembles frames split at arbitrary points', () => {
    reportSeed(() =>
      fc.assert(
        fc.property(
          fc.array(frameArb, { minLength: 1, maxLength: 8 }),
          fc.array(fc.nat(), { maxLength: 10 }),
          (frames, cuts) => {
            const all = Buffer.concat(frames.map((f) => encodeFrame(f)));
            const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
            const reader = new FrameReader(maxFrameBodyBytes(1024));
            const out: Frame[] = [];
            let from = 0;
            for (const point of [...points, all.length]) {
              for (const body of reader.push(new Uint8Array(all.subarray(from, point))))
                out.push(decodeFrameBody(body));
              from = point;
            }
            expect(out).toEqual(frames);
            expect(reader.bufferedBytes).toBe(0);
          },
        ),
        fcOptions,
      ),
    );
  });

  it('frames a one-way message as tag 5 and its payload, within the request size bound', () => {
    const encoded = encodeFrame({ type: 'message', payload: new Uint8Array([9, 8]) });
    expect([...encoded]).toEqual([0, 0, 0, 3, 5, 9, 8]);
    expect(decodeFrameBody(new Uint8Array([5]))).toEqual({ type: 'message', payload: new Uint8Array(0) });
    // The largest message a peer may send fits the frame bound; a header past it is refused unbuffered.
    const max = 1024;
    const largest = encodeFrame({ type: 'message', payload: new Uint8Array(max) });
    expect(new FrameReader(maxFrameBodyBytes(max)).push(largest)).toHaveLength(1);
    const header = new Uint8Array(4);
    new DataView(header.buffer).setUint32(0, maxFrameBodyBytes(max) + 1);
    expect(() => new FrameReader(maxFrameBodyBytes(max)).push(header)).toThrow(DecodeError);
  });

  it('refuses a length header over the limit before buffering the body', () => {
    const reader = new FrameReader(1000);
    const header = new Uint8Array([0xff, 0xff, 0xff, 0xff]);
    expect(() => reader.push(header)).toThrow(DecodeError);
    const ok = new FrameReader(1000);
    expect(ok.push(new Uint8Array([0, 0, 3, 0xe8]))).toEqual([]); // exactly 1000: waits for the body
  });

  it('hands a zero-length frame on as an empty body, at the end of the input or before more', () => {
    expect(new FrameReader(64).push(new Uint8Array([0, 0, 0, 0]))).toEqual([new Uint8Array(0)]);
    const reader = new FrameReader(64);
    expect(reader.push(new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]))).toEqual([
      new Uint8Array(0),
      new Uint8Array(0),
    ]);
    expect(reader.bufferedBytes).toBe(4);
    expect(reader.push(new Uint8Array([0, 0]))).toEqual([new Uint8Array([0])]);
    expect(reader.bufferedBytes).toBe(1);
    expect(() => decodeFrameBody(new Uint8Array(0))).toThrow(DecodeError);
  });

  it('decodes arbitrary bytes to a frame or a DecodeError, nothing else', () => {
    reportSeed(() =>
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 200 }), (garbage) => {
          try {
            decodeFrameBody(garbage);
          } catch (err) {
            expect(err).toBeInstanceOf(DecodeError);
          }
          try {
            new FrameReader(64).push(garbage);
          } catch (err) {
            expect(err).toBeInstanceOf(DecodeError);
          }
          try {
            decodeGossip(garbage);
          } catch (err) {
            expect(err).toBeInstanceOf(DecodeError);
          }
        }),
        fcOptions,
      ),
    );
  });

  it('maps an unknown error code from a peer to unavailable and cuts long messages', () => {
    const frame = encodeFrame({ type: 'error', id: 7, code: 'timeout', message: 'x'.repeat(10_000), details: {} });
    const decoded = decodeFrameBody(bodyOf(frame));
    expect(decoded.type === 'error' && decoded.message.length).toBe(MAX_ERROR_MESSAGE_BYTES);
    // Rewrite the code bytes to one no Parley version defines.
    const body = new Uint8Array(bodyOf(frame));
    body.set(new TextEncoder().encode('zzzzzzz'), 6);
    const unknown = decodeFrameBody(body);
    expect(unknown.type === 'error' && unknown.code).toBe('unavailable');
    if (unknown.type !== 'error') throw new Error('expected an error frame');
    const err = errorFromFrame(unknown);
    expect(err).toBeInstanceOf(ParleyError);
    expect(err.code).toBe('unavailable');
  });

  it('keeps a leading U+FEFF in gossip origins, protocol names and error messages', () => {
    const id = new Uint8Array(16);
    expect(decodeGossip(encodeGossip({ id, origin: '\uFEFFpeer', payload: new Uint8Array(0) })).origin).toBe(
      '\uFEFFpeer',
    );
    const hello: Frame = { type: 'hello', version: 1, protocol: '\uFEFF/parley/1' };
    expect(decodeFrameBody(bodyOf(encodeFrame(hello)))).toEqual(hello);
    const error: Frame = { type: 'error', id: 1, code: 'timeout', message: '\uFEFFslow', details: {} };
    expect(decodeFrameBody(bodyOf(encodeFrame(error)))).toEqual(error);
  });

  it('decodes error details to what encoding them again sends', () => {
    const frame = (details: string) => {
      const head = bodyOf(encodeFrame({ type: 'error', id: 1, code: 'timeout', message: 'm', details: {} }));
      const text = new TextEncoder().encode(details);
      const body = new Uint8Array(head.length - 2 + text.length);
      body.set(head.subarray(0, head.length - 2)); // without its '{}'
      body.set(text, head.length - 2);
      return body;
    };
    const once = decodeFrameBody(frame('{"a":1e400,"b":[-1e400],"c":-0}'));
    expect(once).toMatchObject({ details: { a: null, b: [null], c: 0 } });
    expect(decodeFrameBody(bodyOf(encodeFrame(once)))).toEqual(once);
    // 1e21 is 4 bytes here and 22 once printed: details that would outgrow the limit are dropped, as the encoder does.
    const growing = decodeFrameBody(frame(`{"a":[${new Array(800).fill('1e21').join(',')}]}`));
    expect(growing).toMatchObject({ details: {} });
    expect(decodeFrameBody(bodyOf(encodeFrame(growing)))).toEqual(growing);
  });

  it('round-trips gossip envelopes', () => {
    const id = new Uint8Array(16).fill(9);
    const encoded = encodeGossip({ id, origin: '12D3KooWorigin', payload: new Uint8Array([1, 2]) });
    const decoded = decodeGossip(encoded);
    expect(decoded.origin).toBe('12D3KooWorigin');
    expect([...decoded.id]).toEqual([...id]);
    expect([...decoded.payload]).toEqual([1, 2]);
  });
});
