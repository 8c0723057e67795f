import { DecodeError, testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeSegment, KeyLayout, prefixEnd, unescapeSegment } from './keys.js';
import {
  decodeEntryRecord,
  decodeRequestRecord,
  type EntryRecord,
  encodeEntryRecord,
  encodeRequestRecord,
  MAX_REQUEST_RECORD_BYTES,
} from './record.js';
import { revisionOf, versionOf } from './version.js';

const seed = testSeed(20261130);
const MAX = 1_048_576 + 65_536;

const sample: EntryRecord = {
  kind: 'value',
  value: JSON.parse('{"pct":25,"__proto__":"kept","list":[1,"two",null,true]}'),
  valueBytes: 50,
  ttlSeconds: 3600,
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_500,
  expiresAt: 1_700_003_600_500,
};

function isTyped(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
  }
}

describe('entry records', () => {
  it('round-trip, keeping __proto__ as an ordinary key', () => {
    const bytes = encodeEntryRecord(sample);
    const back = decodeEntryRecord(bytes, MAX);
    expect(back).toEqual(sample);
    expect(Object.hasOwn(back.value as object, '__proto__')).toBe(true);
    expect(Object.isFrozen(back.value)).toBe(true);
    expect(encodeEntryRecord(back).equals(bytes)).toBe(true);
  });

  it('reject hostile bytes with DecodeError only', () => {
    const text = (o: unknown) => Buffer.from(JSON.stringify(o));
    const good = JSON.parse(encodeEntryRecord(sample).toString()) as Record<string, unknown>;
    const cases: Uint8Array[] = [
      new Uint8Array(0),
      Buffer.from([0xff, 0xfe, 0x00]),
      Buffer.from('{"format":1'),
      text(null),
      text([1, 2]),
      text({ ...good, format: 2 }),
      text({ ...good, kind: 'lock' }),
      text({ ...good, extra: 1 }),
      text({ ...good, createdAt: -1 }),
      text({ ...good, expiresAt: 1.5 }),
      text({ ...good, ttlSeconds: '1' }),
      text({ ...good, valueBytes: 2 ** 60 }),
      Buffer.from(JSON.stringify({ ...good, value: 0 }).replace('"value":0', '"value":1e400')),
      Buffer.from(
        JSON.stringify({ ...good, value: 0 }).replace('"value":0', `"value":${'['.repeat(100)}${']'.repeat(100)}`),
      ),
      new Uint8Array(MAX + 1),
    ];
    const { value: _omit, ...noValue } = good;
    cases.push(text(noValue));
    for (const bytes of cases) {
      expect(() => decodeEntryRecord(bytes, MAX)).toThrow(DecodeError);
    }
  });

  it('throws nothing but DecodeError on random and mutated bytes', () => {
    const valid = encodeEntryRecord(sample);
    withSeed(seed, () =>
      fc.assert(
        fc.property(
          fc.oneof(
            fc.uint8Array({ maxLength: 300 }),
            fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }).map((edits) => {
              const copy = Uint8Array.from(valid);
              for (const [at, v] of edits) copy[at % copy.length] = v;
              return copy;
            }),
            fc.nat().map((cut) => valid.subarray(0, cut % (valid.length + 1))),
          ),
          (bytes) => {
            isTyped(() => {
              const r = decodeEntryRecord(bytes, MAX);
              // Whatever decodes re-encodes to a record that decodes the same.
              expect(decodeEntryRecord(encodeEntryRecord(r), MAX)).toEqual(r);
            });
            isTyped(() => decodeRequestRecord(bytes));
          },
        ),
        { seed, numRuns: 2000 },
      ),
    );
  });

  it('request records round-trip and are bounded', () => {
    const r = { type: 'deleted', namespace: 'a', key: 'b' };
    expect(decodeRequestRecord(encodeRequestRecord(r))).toEqual(r);
    expect(() => decodeRequestRecord(new Uint8Array(MAX_REQUEST_RECORD_BYTES + 1))).toThrow(DecodeError);
    expect(() => decodeRequestRecord(Buffer.from('{"format":1}'))).toThrow(DecodeError);
    expect(() => decodeRequestRecord(Buffer.from('{"format":1,"result":1,"x":2}'))).toThrow(DecodeError);
  });
});

describe('key layout', () => {
  it('escapes /, % and lone surrogates so distinct keys never collide', () => {
    const keys = ['a/b', 'a%2Fb', 'a%b', '\ud800', '\ufffd', '\udc00x', '😀', 'plain', 'a/', 'a'];
    const seen = new Set(keys.map((k) => escapeSegment(k)));
    expect(seen.size).toBe(keys.length);
    for (const k of keys) {
      expect(escapeSegment(k)).not.toContain('/');
      expect(unescapeSegment(escapeSegment(k))).toBe(k);
      // Distinct UTF-8 bytes too (a lone surrogate would otherwise become U+FFFD).
      expect(Buffer.from(escapeSegment(k)).toString('utf8')).toBe(escapeSegment(k));
    }
    expect(() => unescapeSegment('%zz')).toThrow(DecodeError);
    expect(() => unescapeSegment('%u0041')).toThrow(DecodeError);
    expect(() => unescapeSegment('a/b')).toThrow(DecodeError);
  });

  const endsInHighSurrogate = (p: string) => /[\ud800-\udbff]$/.test(p);

  it('keeps prefixes: escape(p) prefixes escape(k) exactly when p prefixes k (p not ending in a high surrogate)', () => {
    withSeed(seed, () =>
      fc.assert(
        fc.property(
          fc.string({ unit: 'binary', maxLength: 8 }),
          fc.string({ unit: 'binary', maxLength: 8 }),
          (p, k) => {
            if (!endsInHighSurrogate(p)) expect(escapeSegment(k).startsWith(escapeSegment(p))).toBe(k.startsWith(p));
            expect(unescapeSegment(escapeSegment(k))).toBe(k);
          },
        ),
        { seed, numRuns: 2000 },
      ),
    );
  });

  it("an entry prefix's bytes cover every key that starts with it, a high surrogate at its end too", () => {
    const keys = new KeyLayout('/p');
    const has = (p: string, k: string) => keys.entry('ns', k).subarray(0, keys.entryPrefix('ns', p).length);
    // The built-in backend matches 'x\ud83d' against 'x😀' (UTF-16 startsWith): so must the range.
    expect(has('x\ud83d', 'x😀')).toEqual(keys.entryPrefix('ns', 'x\ud83d'));
    expect(has('x\ud83d', 'x\ud83dy')).toEqual(keys.entryPrefix('ns', 'x\ud83d'));
    // Units that pair up or stay lone, at random: coverage always, exactness unless p ends high.
    const unit = fc.constantFrom('a', '/', '%', '\ud83d', '\ude00', '\udbff', '\udc00');
    withSeed(seed, () =>
      fc.assert(
        fc.property(
          fc.array(unit, { maxLength: 5 }).map((u) => u.join('')),
          fc.array(unit, { maxLength: 7 }).map((u) => u.join('')),
          (p, k) => {
            const prefix = keys.entryPrefix('ns', p);
            const covered = keys.entry('ns', k).subarray(0, prefix.length).equals(prefix);
            if (k.startsWith(p)) expect(covered).toBe(true);
            else if (!endsInHighSurrogate(p)) expect(covered).toBe(false);
          },
        ),
        { seed, numRuns: 3000 },
      ),
    );
  });

  it('lays out entries, locks, waiters and request ids under the prefix, and parses entries back', () => {
    const keys = new KeyLayout('/p');
    expect(keys.entry('ns', 'a/b').toString()).toBe('/p/e/ns/a%2Fb');
    expect(keys.lock('ns', 'a/b').toString()).toBe('/p/l/ns/a%2Fb');
    expect(keys.lockWaiters('ns', 'a').toString()).toBe('/p/w/ns/a/');
    expect(keys.request('abc-123').toString()).toBe('/p/x/abc-123');
    expect(() => keys.request('../x')).toThrow(RangeError);
    expect(keys.parseEntry(keys.entry('ns', 'a/b'))).toEqual({ namespace: 'ns', key: 'a/b' });
    expect(keys.parseEntry(Buffer.from('/p/l/ns/a'))).toBeUndefined();
    expect(keys.parseEntry(Buffer.from('/p/e/ns/%zz'))).toBeUndefined();
    expect(() => new KeyLayout('/p/')).toThrow(RangeError);
    expect(prefixEnd(Buffer.from('/p/e/')).toString()).toBe('/p/e0');
    expect(prefixEnd(Buffer.from([0x61, 0xff]))).toEqual(Buffer.from([0x62]));
  });
});

describe('version tokens', () => {
  it('are 16 base64url characters bound to their key', () => {
    const v = versionOf('ns', 'k', 12345);
    expect(v).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(revisionOf('ns', 'k', v)).toBe(12345);
    expect(revisionOf('ns', 'other', v)).toBeUndefined();
    expect(revisionOf('ns2', 'k', v)).toBeUndefined();
    expect(revisionOf('ns', 'k', 'garbage')).toBeUndefined();
    expect(revisionOf('ns', 'k', `${v.slice(0, 15)}A`)).not.toBe(12345);
    expect(versionOf('ns', 'k', 12346)).not.toBe(v);
  });
});
