import { decodeDelta, encodeDelta, NamespaceReplica } from '@parley/crdt';
import { DecodeError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import {
  decodeFrame,
  encodeAck,
  encodeDeltaFrame,
  encodeDigestFrame,
  encodeError,
  encodeHello,
  encodeWelcome,
  splitDelta,
  TAG_ACK,
  TAG_DELTA,
  TAG_ERROR,
  TAG_HELLO,
  TAG_WELCOME,
} from './wire.js';

const MAX = 1_048_576;

describe('the sync frames', () => {
  it('round-trip every frame', () => {
    const r = new NamespaceReplica({ namespace: 'ns', replicaId: 'browser-1' });
    const d = r.set('k', { v: 1 }, 1_000);
    const hello = decodeFrame(encodeHello('browser-1', r.digest()), MAX);
    expect(hello).toEqual({ tag: TAG_HELLO, replicaId: 'browser-1', digest: r.digest() });
    expect(decodeFrame(encodeWelcome('node-a', MAX, 3600, 1_800_000_000_000), MAX)).toEqual({
      tag: TAG_WELCOME,
      nodeId: 'node-a',
      maxFrameBytes: MAX,
      maxTtlSeconds: 3600,
      nowMs: 1_800_000_000_000,
    });
    expect(decodeFrame(encodeDigestFrame(r.digest()), MAX)).toMatchObject({ digest: r.digest() });
    const delta = decodeFrame(encodeDeltaFrame(7, encodeDelta(d)), MAX);
    expect(delta).toMatchObject({ tag: TAG_DELTA, seq: 7 });
    expect(delta.tag === TAG_DELTA && encodeDelta(delta.delta)).toEqual(encodeDelta(d));
    expect(decodeFrame(encodeAck(7), MAX)).toEqual({ tag: TAG_ACK, seq: 7 });
    expect(decodeFrame(encodeError('unauthorized', 'no'), MAX)).toEqual({
      tag: TAG_ERROR,
      code: 'unauthorized',
      message: 'no',
    });
  });

  it('refuses with DecodeError: oversized, unknown version or tag, trailing bytes, a bad embedded delta', () => {
    const bad = [
      new Uint8Array(MAX + 1),
      new Uint8Array([2, TAG_ACK, 1]),
      new Uint8Array([1, 0x7f]),
      new Uint8Array([1, TAG_ACK, 1, 0]),
      new Uint8Array([1, TAG_DELTA, 0, 1, 9, 9]),
      new Uint8Array([1]),
    ];
    for (const b of bad) expect(() => decodeFrame(b, MAX)).toThrow(DecodeError);
  });

  it('splits a large delta into parts that merge, in order, to the whole; a prefix leaves gaps to fill', () => {
    const a = new NamespaceReplica({ namespace: 'ns', replicaId: 'a' });
    for (let i = 0; i < 200; i++) a.set(`k${i}`, 'x'.repeat(1000), 1_000 + i);
    a.delete('k0', 2_000);
    const parts = splitDelta(a.state(), 16 * 1024);
    expect(parts.length).toBeGreaterThan(10);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(16 * 1024 + 1200);
    for (const p of parts.slice(0, -1)) expect(decodeDelta(p).context.size).toBe(0);
    const b = new NamespaceReplica({ namespace: 'ns', replicaId: 'b' });
    for (const p of parts) b.merge(decodeDelta(p), 3_000);
    expect(b.digest()).toEqual(a.digest());
    expect(b.entries(3_000)).toEqual(a.entries(3_000));
    const c = new NamespaceReplica({ namespace: 'ns', replicaId: 'c' });
    for (const p of parts.slice(0, 3)) c.merge(decodeDelta(p), 3_000);
    const rest = a.deltaFor(c.digest());
    expect(rest.states.length).toBe(a.state().states.length - c.state().states.length);
    c.merge(rest, 3_000);
    expect(c.entries(3_000)).toEqual(a.entries(3_000));
  });
});
