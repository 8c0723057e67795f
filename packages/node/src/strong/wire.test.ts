import { isParleyError, SeededRandom, testSeed, withSeed } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import {
  decodeChanges,
  decodeIndexedResult,
  decodeRequest,
  encodeChanges,
  encodeIndexedResult,
  encodeRequest,
  type IndexedResult,
  MAX_WAIT_MS,
  type StrongRequest,
} from './wire.js';

const SAMPLES: StrongRequest[] = [
  {
    kind: 'write',
    timeoutMs: 3000,
    command: {
      clientId: 's1',
      seq: 4,
      ackSeq: 3,
      op: { type: 'set', namespace: 'ns', key: 'k', value: { a: [1, 'x'] }, ifVersion: 'v' },
    },
  },
  { kind: 'read', timeoutMs: 10, command: { op: { type: 'get', namespace: 'ns', key: 'k' } } },
  { kind: 'register', timeoutMs: 1 },
  {
    kind: 'local-read',
    timeoutMs: 20,
    command: { op: { type: 'list', namespace: 'ns', prefix: 'a' } },
    consistency: { level: 'serializable' },
  },
  {
    kind: 'local-read',
    timeoutMs: 20,
    command: { op: { type: 'get', namespace: 'ns', key: 'k' } },
    consistency: { level: 'bounded', maxStalenessMs: 500, maxLagEntries: 0 },
  },
  {
    kind: 'local-read',
    timeoutMs: 20,
    command: { op: { type: 'get', namespace: 'ns', key: 'k' } },
    consistency: { level: 'serializable' },
    minIndex: 2 ** 40,
  },
  { kind: 'admin', timeoutMs: 5000, action: 'addLearner', peer: 'p4' },
  { kind: 'changes', timeoutMs: 250, fromRevision: 17, namespace: 'ns', prefix: 'a/', limit: 1000 },
  { kind: 'changes', timeoutMs: 250, fromRevision: 0, namespace: 'ns', prefix: undefined, limit: 5 },
  { kind: 'changes', timeoutMs: 250, fromRevision: 41, namespace: 'ns', prefix: undefined, limit: 5, skip: 1200 },
  { kind: 'write', timeoutMs: 5, command: { clientId: 's1', seq: 5, op: { type: 'noop' } }, retry: true },
];

describe('strong wire codec', () => {
  it('round-trips every request kind', () => {
    for (const req of SAMPLES) expect(decodeRequest(encodeRequest(req))).toEqual(req);
    const page = { changes: [{ namespace: 'n', key: 'k', type: 'delete' as const, revision: 9 }], revision: 12 };
    expect(decodeChanges(encodeChanges(page))).toEqual(page);
  });

  it('refuses bad versions, kinds, actions, over-long waits and trailing bytes with decode_error', () => {
    const good = encodeRequest(SAMPLES[2] as StrongRequest);
    const serializable = encodeRequest(SAMPLES[3] as StrongRequest);
    const bad = [
      Uint8Array.of(2, 3, 1),
      Uint8Array.of(1, 9, 1),
      new Uint8Array([...good, 0]),
      encodeRequest({ kind: 'register', timeoutMs: MAX_WAIT_MS }).map((b, i) => (i === 2 ? 0xff : b)),
      new Uint8Array(0),
      serializable.map((b, i) => (i === serializable.length - 1 ? 7 : b)),
      new Uint8Array([...encodeRequest(SAMPLES[0] as StrongRequest), 2]),
    ];
    for (const bytes of bad)
      expect(() => decodeRequest(bytes)).toThrow(expect.objectContaining({ code: 'decode_error' }));
    const admin = encodeRequest({ kind: 'admin', timeoutMs: 1, action: 'addVoter', peer: 'p' });
    const tampered = new TextDecoder().decode(admin).replace('addVoter', 'rmrfVote');
    expect(() => decodeRequest(new TextEncoder().encode(tampered))).toThrow(/admin action/);
    expect(() => decodeChanges(new TextEncoder().encode('{"changes":[{"key":1}],"revision":1}'))).toThrow(/malformed/);
    expect(() => decodeChanges(new TextEncoder().encode('not json'))).toThrow(/malformed/);
  });

  it('carries the answering index with a result, and refuses a local read with minIndex 0 on the wire', () => {
    const samples: IndexedResult[] = [
      { result: { ok: true as const, value: { type: 'deleted' as const, namespace: 'n', key: 'k' } }, index: 0 },
      { result: { ok: false as const, error: { code: 'key_not_found', message: 'm', details: {} } }, index: 2 ** 50 },
    ];
    for (const a of samples) {
      expect(decodeIndexedResult(encodeIndexedResult(a))).toEqual(a);
    }
    const answer = encodeIndexedResult({
      result: { ok: true, value: { type: 'deleted', namespace: 'n', key: 'k' } },
      index: 7,
    });
    for (const bad of [answer.map((b, i) => (i === 0 ? 2 : b)), answer.subarray(0, 1), new Uint8Array(0)]) {
      expect(() => decodeIndexedResult(bad)).toThrow(expect.objectContaining({ code: 'decode_error' }));
    }
    const plain = encodeRequest(SAMPLES[3] as StrongRequest);
    expect(() => decodeRequest(new Uint8Array([...plain, 0]))).toThrow(/minIndex 0/);
  });

  it('refuses change pages nested too deep or holding numbers past float64, so what decodes re-encodes', () => {
    const page = (v: string) =>
      new TextEncoder().encode(
        `{"changes":[{"namespace":"n","key":"k","type":"set","revision":1,"v":${v}}],"revision":1}`,
      );
    for (const bad of ['1e400', '[-1e400]', '1'.repeat(400), `${'['.repeat(20_000)}${']'.repeat(20_000)}`]) {
      expect(() => decodeChanges(page(bad))).toThrow(/malformed/);
    }
    let deep = '0';
    for (let i = 0; i < 64; i++) deep = `[${deep}]`;
    const ok = decodeChanges(page(`{"value":${deep},"s":"1e400","n":1e300}`));
    expect(decodeChanges(encodeChanges(ok))).toEqual(ok);
  });

  it('decoding mutated and random bytes throws nothing but DecodeError', () => {
    withSeed(testSeed(7), (seed) => {
      const rng = new SeededRandom(seed);
      const encoded = SAMPLES.map(encodeRequest);
      for (let i = 0; i < 3000; i++) {
        let bytes: Uint8Array;
        if (i % 3 === 0) {
          bytes = new Uint8Array(rng.int(64));
          for (let j = 0; j < bytes.length; j++) bytes[j] = rng.int(256);
        } else {
          bytes = (encoded[rng.int(encoded.length)] as Uint8Array).slice();
          for (let m = 0; m < 1 + rng.int(4); m++) bytes[rng.int(bytes.length)] = rng.int(256);
          if (rng.int(4) === 0) bytes = bytes.subarray(0, rng.int(bytes.length));
        }
        try {
          decodeRequest(bytes);
        } catch (err) {
          if (!isParleyError(err, 'decode_error')) throw err;
        }
      }
    });
  });
});
