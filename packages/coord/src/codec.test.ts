import { DecodeError, testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeCommand,
  decodeResult,
  encodeCommand,
  encodeResult,
  MAX_COMMAND_BYTES,
  MAX_ENVELOPE_DEPTH,
} from './codec.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { CoordHarness } from './harness.js';
import { base64UrlDecode, base64UrlEncode, canonicalJson, type JsonValue, MAX_JSON_DEPTH, utf8Length } from './json.js';
import type { Command, CommandResult } from './types.js';

const seed = testSeed(20261129);

const sample: Command[] = [
  { nowMs: 1, op: { type: 'noop' } },
  {
    nowMs: 2,
    clientId: 's1',
    seq: 4,
    ackSeq: 3,
    op: { type: 'set', namespace: 'n', key: 'k', value: { b: 1, a: [true, null] } },
  },
  {
    nowMs: 3,
    op: {
      type: 'set',
      namespace: 'n',
      key: 'k',
      value: 'x',
      ttlSeconds: 5,
      ifVersion: 'v',
      fence: { namespace: 'l', key: 'r', token: 9 },
    },
  },
  {
    nowMs: 4,
    op: { type: 'list', namespace: 'n', q: 'a', filter: 'a = 1', sortBy: 'created_at', sortOrder: 'desc', limit: 3 },
  },
  { nowMs: 5, op: { type: 'lease_release', namespace: 'n', key: 'k', holder: 'h', epoch: 3, state: null } },
  { nowMs: 6, op: { type: 'lock_acquire', namespace: 'n', key: 'k', owner: 'o', metadata: { m: 1 }, waitSeconds: 3 } },
  { nowMs: 7, op: { type: 'delete_namespace', namespace: 'n', confirm: true, pattern: 'a*' } },
];

describe('command codec', () => {
  it('round-trips commands and is canonical', () => {
    for (const c of sample) {
      const bytes = encodeCommand(c);
      expect(decodeCommand(bytes)).toEqual(c);
      expect(encodeCommand(decodeCommand(bytes))).toEqual(bytes);
    }
    const a = encodeCommand({ nowMs: 1, op: { type: 'set', namespace: 'n', key: 'k', value: { x: 1, y: 2 } } });
    const b = encodeCommand({
      op: { value: { y: 2, x: 1 }, key: 'k', namespace: 'n', type: 'set' },
      nowMs: 1,
    } as Command);
    expect(a).toEqual(b);
    // A release carrying state null keeps the field; one without state omits it.
    expect(decodeCommand(encodeCommand(sample[4] as Command)).op).toHaveProperty('state', null);
  });

  it('rejects malformed envelopes and bodies with DecodeError', () => {
    const good = encodeCommand(sample[1] as Command);
    const cases: Uint8Array[] = [
      new Uint8Array(0),
      good.subarray(0, 3),
      Uint8Array.from([0, ...good.subarray(1)]),
      Uint8Array.from([0x50, 0x43, 2, ...good.subarray(3)]),
      Uint8Array.from([0x50, 0x43, 1, 2, ...good.subarray(4)]),
      Uint8Array.from([0x50, 0x43, 1, 1, 0xff, 0xfe]),
      new Uint8Array([0x50, 0x43, 1, 1, ...new TextEncoder().encode('{"nowMs":1}')]),
      new Uint8Array([0x50, 0x43, 1, 1, ...new TextEncoder().encode('{"nowMs":1,"op":{"type":"nuke"}}')]),
      new Uint8Array([
        0x50,
        0x43,
        1,
        1,
        ...new TextEncoder().encode('{"nowMs":1,"op":{"type":"get","namespace":"n"}}'),
      ]),
      new Uint8Array([
        0x50,
        0x43,
        1,
        1,
        ...new TextEncoder().encode('{"nowMs":1,"op":{"type":"get","namespace":"n","key":"k","extra":1}}'),
      ]),
      new Uint8Array([0x50, 0x43, 1, 1, ...new TextEncoder().encode('{"nowMs":"1","op":{"type":"noop"}}')]),
      new Uint8Array([
        0x50,
        0x43,
        1,
        1,
        ...new TextEncoder().encode(`{"nowMs":1,"op":{"type":"noop"},"x":${'['.repeat(5000)}${']'.repeat(5000)}}`),
      ]),
      new Uint8Array(MAX_COMMAND_BYTES + 1),
    ];
    for (const bytes of cases) {
      expect(() => decodeCommand(bytes)).toThrow(expect.objectContaining({ code: 'decode_error' }));
    }
  });

  it('throws nothing but DecodeError on random and mutated bytes', () => {
    const valid = sample.map((c) => encodeCommand(c));
    withSeed(seed, () =>
      fc.assert(
        fc.property(
          fc.oneof(
            fc.uint8Array({ maxLength: 200 }),
            fc
              .tuple(
                fc.constantFrom(...valid),
                fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
              )
              .map(([bytes, edits]) => {
                const copy = Uint8Array.from(bytes);
                for (const [at, v] of edits) copy[at % copy.length] = v;
                return copy;
              }),
            fc
              .tuple(fc.constantFrom(...valid), fc.nat())
              .map(([bytes, cut]) => bytes.subarray(0, cut % (bytes.length + 1))),
          ),
          (bytes) => {
            try {
              const c = decodeCommand(bytes);
              // Whatever decodes must apply without throwing.
              new CoordHarness().applyCommand(c);
            } catch (err) {
              expect(err).toMatchObject({ code: 'decode_error' });
            }
          },
        ),
        { seed, numRuns: 2000 },
      ),
    );
  });
});

describe('result codec', () => {
  it('round-trips results and rejects unknown shapes', () => {
    const h = new CoordHarness();
    const results: CommandResult[] = [
      h.run({ type: 'set', namespace: 'n', key: 'k', value: [1, 'two'] }),
      h.run({ type: 'get', namespace: 'n', key: 'missing' }),
      h.run({ type: 'list', namespace: 'n' }),
    ];
    for (const r of results) expect(decodeResult(encodeResult(r))).toEqual(r);
    const enc = (v: unknown) => new Uint8Array([0x50, 0x43, 1, 2, ...new TextEncoder().encode(JSON.stringify(v))]);
    for (const bad of [
      {},
      { ok: true, value: { type: 'weird' } },
      { ok: false, error: { code: 'nope', message: '', details: {} } },
      { ok: false, error: { code: 'key_not_found', message: 1, details: {} } },
    ]) {
      expect(() => decodeResult(enc(bad))).toThrow(expect.objectContaining({ code: 'decode_error' }));
    }
  });
});

describe('json helpers', () => {
  it('measures UTF-8 like TextEncoder and round-trips base64url', () => {
    withSeed(seed, () =>
      fc.assert(
        fc.property(fc.string({ unit: 'grapheme', maxLength: 50 }), fc.uint8Array({ maxLength: 40 }), (s, bytes) => {
          expect(utf8Length(s)).toBe(new TextEncoder().encode(s).length);
          const enc = base64UrlEncode(bytes);
          expect(enc).toMatch(/^[A-Za-z0-9_-]*$/);
          expect(base64UrlDecode(enc)).toEqual(bytes);
        }),
        { seed, numRuns: 300 },
      ),
    );
    expect(base64UrlDecode('a')).toBeUndefined();
    expect(base64UrlDecode('ab$d')).toBeUndefined();
  });

  it('canonicalizes key order and rejects non-JSON', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: 'x', u: undefined })).toBe('{"a":"x","b":[1,{"c":2,"d":1}]}');
    expect(() => canonicalJson(new Map())).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => canonicalJson([undefined])).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => canonicalJson(Number.POSITIVE_INFINITY)).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
    let deep: unknown = 1;
    for (let i = 0; i < 70; i++) deep = [deep];
    expect(() => canonicalJson(deep)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});

describe('snapshot decoding', () => {
  function richSnapshot(): Uint8Array {
    const h = new CoordHarness();
    const c = h.register();
    h.run({ type: 'set', namespace: 'n', key: 'k', value: { a: [1, 'x'], b: null } }, { clientId: c, seq: 1 });
    h.run({ type: 'claim', namespace: 'n', key: 'c', value: 7 });
    h.run({ type: 'lease_acquire', namespace: 'n', key: 'l', holder: 'w', ttlSeconds: 9, state: { s: 1 } });
    h.run({ type: 'lock_acquire', namespace: 'm', key: 'r', owner: 'o', ttlSeconds: 9, metadata: { host: 'h' } });
    h.run({ type: 'lock_acquire', namespace: 'm', key: 'r', owner: 'p', waitSeconds: 5 }, { clientId: c, seq: 2 });
    return h.sm.snapshot();
  }

  it('restores mutated or truncated snapshots only as DecodeError, and a restored state keeps working', () => {
    const good = richSnapshot();
    const ops = [
      { type: 'set', namespace: 'n', key: 'k', value: 2 },
      { type: 'get', namespace: 'n', key: 'k' },
      { type: 'lease_renew', namespace: 'n', key: 'l', holder: 'w', epoch: 3, ttlSeconds: 5 },
      { type: 'lock_release', namespace: 'm', key: 'r', owner: 'o', fence: 4 },
      { type: 'list', namespace: 'n', filter: 'a.0 = 1' },
      { type: 'expire' },
    ] as const;
    withSeed(seed, () =>
      fc.assert(
        fc.property(
          fc.oneof(
            fc
              .array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 })
              .map((edits) => {
                const copy = Uint8Array.from(good);
                for (const [at, v] of edits) copy[at % copy.length] = v;
                return copy;
              }),
            fc.nat().map((cut) => good.subarray(0, cut % good.length)),
          ),
          (bytes) => {
            const h = new CoordHarness();
            try {
              h.sm.restore(bytes);
            } catch (err) {
              expect(err).toMatchObject({ code: 'decode_error' });
              return;
            }
            h.index = h.sm.applied.index;
            for (const op of ops) h.run(op as never);
            h.sm.restore(h.sm.snapshot());
          },
        ),
        { seed, numRuns: 1500 },
      ),
    );
  });
});

describe('nesting bounds', () => {
  function nest(depth: number): JsonValue {
    let v: JsonValue = 0;
    for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
    return v;
  }

  it('encodes a command holding a value at the depth limit, and anything the decoder accepts re-encodes', () => {
    const command: Command = { nowMs: 1, op: { type: 'set', namespace: 'n', key: 'k', value: nest(MAX_JSON_DEPTH) } };
    expect(decodeCommand(encodeCommand(command))).toEqual(command);
    // A body exactly at the envelope bound decodes and re-encodes; one level more is a DecodeError.
    const text = (depth: number) => `{"ok":true,"value":{"type":"noop","x":${JSON.stringify(nest(depth - 2))}}}`;
    const frame = (body: string) => new Uint8Array([0x50, 0x43, 1, 2, ...new TextEncoder().encode(body)]);
    const atBound = decodeResult(frame(text(MAX_ENVELOPE_DEPTH)));
    expect(decodeResult(encodeResult(atBound))).toEqual(atBound);
    expect(() => decodeResult(frame(text(MAX_ENVELOPE_DEPTH + 1)))).toThrow(DecodeError);
  });

  it('refuses numbers past float64 (they parse to Infinity and would not re-encode)', () => {
    const frame = (tag: number, body: string) =>
      new Uint8Array([0x50, 0x43, 1, tag, ...new TextEncoder().encode(body)]);
    const set = (value: string) => `{"nowMs":1,"op":{"key":"k","namespace":"n","type":"set","value":${value}}}`;
    for (const big of ['1e400', '-1e400', '[1,{"a":1E999}]', '1'.repeat(400)]) {
      expect(() => decodeCommand(frame(1, set(big)))).toThrow(DecodeError);
      expect(() => decodeResult(frame(2, `{"ok":true,"value":{"type":"noop","x":${big}}}`))).toThrow(DecodeError);
    }
    expect(decodeCommand(frame(1, set('["1e400",1e300,0,1E2]'))).op).toMatchObject({
      value: ['1e400', 1e300, 0, 100],
    });
  });

  it('snapshots and restores a state whose values and lock metadata are at the depth limit', () => {
    const h = new CoordHarness();
    const deep = nest(MAX_JSON_DEPTH);
    h.run({ type: 'set', namespace: 'n', key: 'k', value: deep });
    h.run({ type: 'lock_acquire', namespace: 'm', key: 'r', owner: 'o', ttlSeconds: 9, metadata: deep });
    h.run({ type: 'lock_acquire', namespace: 'm', key: 'r', owner: 'p', metadata: deep, waitSeconds: 5 });
    const bytes = h.sm.snapshot(); // threw InvalidArgumentError when the envelope counted against the value's limit
    const copy = new CoordHarness();
    copy.sm.restore(bytes);
    expect(copy.sm.snapshot()).toEqual(bytes);
  });
});

describe('list cursors', () => {
  it('round-trip, and refuse a sort value that parses to Infinity', () => {
    const c = encodeCursor('created_at', 'desc', 1_700_000_000_000, 'k');
    expect(decodeCursor(c, 'created_at', 'desc')).toEqual({ sortValue: 1_700_000_000_000, key: 'k' });
    const forged = base64UrlEncode(new TextEncoder().encode('["created_at","desc",1e400,"k"]'));
    expect(() => decodeCursor(forged, 'created_at', 'desc')).toThrow(/cursor is malformed/);
    expect(() => decodeCursor(c, 'created_at', 'asc')).toThrow(/cursor is malformed/);
  });
});
