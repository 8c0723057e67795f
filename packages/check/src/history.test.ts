import { DecodeError, InvalidArgumentError, SeededRandom } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EdnChar, EdnDecimal, EdnDouble, EdnMap, EdnRatio, Keyword, readEdn, readEdnAll } from './edn.js';
import {
  type HistoryEvent,
  HistoryRecorder,
  type HistoryValue,
  toEdnValue,
  toKnossosEdn,
  toPorcupineLog,
} from './history.js';
import { pairOperations } from './model.js';
import { parseHistory } from './parse.js';
import { testSeed, withSeed } from './test-util.js';

describe('HistoryRecorder', () => {
  it('records invoke and completion with the open call’s f and key, at simulated time', () => {
    let now = 100;
    const rec = new HistoryRecorder({ nowMs: () => now });
    rec.invoke(1, 'put', 'x', 'k');
    now = 105;
    rec.ok(1, null);
    rec.invoke('c2', 'get', null, 'k');
    rec.info('c2', null, { error: 'timeout', timeMs: 200 });
    expect(rec.events()).toEqual([
      { type: 'invoke', process: 1, timeMs: 100, f: 'put', value: 'x', key: 'k' },
      { type: 'ok', process: 1, timeMs: 105, f: 'put', value: null, key: 'k' },
      { type: 'invoke', process: 'c2', timeMs: 105, f: 'get', value: null, key: 'k' },
      { type: 'info', process: 'c2', timeMs: 200, f: 'get', value: null, key: 'k', error: 'timeout' },
    ]);
    expect(rec.size).toBe(4);
    expect(rec.isOpen(1)).toBe(false);
  });

  it('refuses a second open call per process and a completion without a call', () => {
    const rec = new HistoryRecorder();
    rec.invoke(1, 'read', null);
    expect(() => rec.invoke(1, 'read', null)).toThrow(InvalidArgumentError);
    expect(() => rec.ok(2, 1)).toThrow(InvalidArgumentError);
  });

  it('keeps memory bounded: recording past maxEvents throws', () => {
    const rec = new HistoryRecorder({ maxEvents: 3 });
    rec.invoke(1, 'read', null);
    rec.ok(1, 0);
    rec.invoke(1, 'read', null);
    expect(() => rec.ok(1, 0)).toThrow(/maxEvents/);
    expect(() => new HistoryRecorder({ maxEvents: 0 })).toThrow(InvalidArgumentError);
  });
});

describe('EDN reader', () => {
  it('reads the forms Jepsen histories use', () => {
    const v = readEdn(
      '{:a nil, :b [1 -2 3.5 1N 2M], :c "q\\"\\n", :d #{:x}, :e (true false), :f #inst "2020", :g \\a, :h sym, #_ :skip :i 1/2}',
    );
    expect(v).toBeInstanceOf(EdnMap);
    const m = v as EdnMap;
    expect(m.get('a')).toBeNull();
    expect(m.get('b')).toEqual([1, -2, new EdnDouble(3.5), 1, new EdnDecimal(2n, 0)]);
    expect(m.get('c')).toBe('q"\n');
    expect(m.get('g')).toEqual(new EdnChar('a'));
    expect(m.get('i')).toEqual(new EdnRatio(1n, 2n));
    // Numbers keep their type: integers beyond 2^53 exactly, floats as doubles, ##Inf/##NaN.
    expect(readEdn('[9007199254740993 12345678901234567890123N 1.0 ##Inf ##-Inf ##NaN 4/2 1.50M]')).toEqual([
      9007199254740993n,
      12345678901234567890123n,
      new EdnDouble(1),
      new EdnDouble(Number.POSITIVE_INFINITY),
      new EdnDouble(Number.NEGATIVE_INFINITY),
      new EdnDouble(Number.NaN),
      2,
      new EdnDecimal(15n, 1),
    ]);
    expect(Keyword.of('x')).toBe(Keyword.of('x'));
    expect(readEdnAll('; only a comment\n')).toEqual([]);
  });

  it('throws DecodeError, never anything else, on malformed input', () => {
    for (const bad of [
      '{:a}',
      '[1 2',
      '"open',
      ')',
      '#',
      '{:a 1',
      '"\\q"',
      '\\',
      '1x',
      '\\unknownchar',
      '##Nope',
      ':',
      '1/0',
    ]) {
      expect(() => readEdnAll(bad), bad).toThrow(DecodeError);
    }
    expect(() => readEdn('['.repeat(10_000))).toThrow(DecodeError);
    withSeed(testSeed(99), (seed) => {
      fc.assert(
        fc.property(fc.string({ unit: fc.constantFrom(...'{}[]()#_:;"\\ ,anil0123.-+N\n'), maxLength: 60 }), (text) => {
          try {
            readEdnAll(text);
          } catch (err) {
            if (!(err instanceof DecodeError)) throw err;
          }
        }),
        { seed, numRuns: 3000 },
      );
    });
  });
});

describe('export and parse', () => {
  const values: fc.Arbitrary<HistoryValue> = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.constant(null),
      fc.boolean(),
      fc.integer({ min: -1000, max: 1000 }),
      fc.string({ maxLength: 6 }),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom('value', 'version', 'epoch', 'ifNotExists'), tie('value'), { maxKeys: 3 }),
    ),
  })).value as fc.Arbitrary<HistoryValue>;

  /** A well-formed random history: each process alternates invoke and completion. */
  const histories = fc
    .array(
      fc.record({
        process: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.constantFrom('n1', 'n2')),
        f: fc.constantFrom('read', 'write', 'cas', 'acquire', 'lock/acquire'),
        key: fc.option(fc.constantFrom('a', 'b/c', 'd e'), { nil: undefined }),
        type: fc.constantFrom('ok', 'fail', 'info'),
        input: values,
        output: values,
        error: fc.option(fc.constantFrom('timeout', 'version_mismatch'), { nil: undefined }),
      }),
      { minLength: 1, maxLength: 12 },
    )
    .map((calls) => {
      const rec = new HistoryRecorder();
      let t = 0;
      for (const c of calls) {
        if (rec.isOpen(c.process)) rec.ok(c.process, c.output, { timeMs: ++t });
        rec.invoke(c.process, c.f, c.input, c.key, { timeMs: ++t });
        const opts = c.error === undefined ? { timeMs: ++t } : { timeMs: ++t, error: c.error };
        rec[c.type as 'ok' | 'fail' | 'info'](c.process, c.output, opts);
      }
      return rec.events();
    });

  it('round-trips through Knossos EDN and Porcupine lines', () => {
    withSeed(testSeed(1234), (seed) => {
      fc.assert(
        fc.property(histories, (h) => {
          const k = parseHistory(toKnossosEdn(h));
          expect(k.format).toBe('knossos-edn');
          expect(k.events).toEqual(h);
          const p = parseHistory(toPorcupineLog(h));
          expect(p.format).toBe('edn-lines');
          expect(p.events).toEqual(h);
        }),
        { seed, numRuns: 300 },
      );
    });
  });

  it('writes and reads the Jepsen log shape of a register history', () => {
    const rec = new HistoryRecorder();
    rec.invoke(2, 'cas', [3, 0]);
    rec.fail(2, [3, 0]);
    rec.invoke(0, 'read', null);
    rec.ok(0, null);
    rec.invoke(1, 'write', 4);
    rec.info(1, null, { error: 'timed-out' });
    const text = toPorcupineLog(rec.events(), 'jepsen');
    expect(text.split('\n')[0]).toBe('INFO  jepsen.util - 2\t:invoke\t:cas\t[3 0]');
    const back = parseHistory(`some preamble line\n${text}INFO  jepsen.core - ignored\n`);
    expect(back.format).toBe('jepsen-log');
    expect(back.events.map((e) => [e.type, e.process, e.f, e.value, e.error])).toEqual([
      ['invoke', 2, 'cas', [3, 0], undefined],
      ['fail', 2, 'cas', [3, 0], undefined],
      ['invoke', 0, 'read', null, undefined],
      ['ok', 0, 'read', null, undefined],
      ['invoke', 1, 'write', 4, undefined],
      ['info', 1, 'write', null, 'timed-out'],
    ]);
  });

  it('names the format the file holds, whatever hides its first form', () => {
    const text = '#_ {:ignored 1} [{:process 0, :type :invoke, :f :read, :value nil}]';
    expect(parseHistory(text).format).toBe('knossos-edn');
  });

  it('skips nemesis entries and reads a read’s value from its completion', () => {
    const { events } = parseHistory(`[{:process :nemesis, :type :info, :f :start, :value nil}
      {:process 0, :type :invoke, :f :read, :value nil, :time 5000000}
      {:process 0, :type :ok, :f :read, :value 3}]`);
    expect(events).toHaveLength(2);
    expect(events[0]!.timeMs).toBe(5);
    const [op] = pairOperations(events);
    expect(op).toMatchObject({ f: 'read', input: null, output: 3, status: 'ok', callIndex: 0, returnIndex: 1 });
  });

  it('refuses malformed histories with DecodeError', () => {
    expect(() => parseHistory('[{:process 1, :type :bogus, :f :read}]')).toThrow(DecodeError);
    expect(() => parseHistory('[{:process 1, :type :ok}]')).toThrow(DecodeError);
    expect(() => parseHistory('[1 2]')).toThrow(DecodeError);
    expect(() => pairOperations([{ type: 'ok', process: 1, timeMs: 0, f: 'read', value: 1 }])).toThrow(DecodeError);
    const mismatched: HistoryEvent[] = [
      { type: 'invoke', process: 1, timeMs: 0, f: 'read', value: null },
      { type: 'ok', process: 1, timeMs: 1, f: 'write', value: 1 },
    ];
    expect(() => pairOperations(mismatched)).toThrow(DecodeError);
  });

  it('pairs a call left open by a process that invoked again as open (return at +∞)', () => {
    const ops = pairOperations([
      { type: 'invoke', process: 1, timeMs: 0, f: 'write', value: 1 },
      { type: 'invoke', process: 1, timeMs: 1, f: 'read', value: null },
      { type: 'ok', process: 1, timeMs: 2, f: 'read', value: 1 },
    ]);
    expect(ops.map((o) => [o.f, o.status, o.returnIndex])).toEqual([
      ['write', 'open', Number.POSITIVE_INFINITY],
      ['read', 'ok', 2],
    ]);
  });

  it('rejects values EDN cannot carry', () => {
    expect(toEdnValue([Number.NaN, Number.POSITIVE_INFINITY, 1.5, 2 ** 60, 2n ** 70n])).toBe(
      `[##NaN ##Inf 1.5 ${2n ** 60n} ${2n ** 70n}]`,
    );
    expect(() => toEdnValue({ 'not a keyword': 1 })).toThrow(InvalidArgumentError);
    expect(toEdnValue({ a: [1, 'x', null, true] })).toBe('{:a [1 "x" nil true]}');
  });

  it('is deterministic: the same seeded run exports byte-identical text', () => {
    const record = (seed: number) => {
      const rng = new SeededRandom(seed);
      const rec = new HistoryRecorder();
      for (let i = 0; i < 50; i++) {
        const p = rng.int(3);
        if (rec.isOpen(p)) rec.ok(p, rng.int(5));
        else rec.invoke(p, 'read', null, undefined, { timeMs: i });
      }
      return toKnossosEdn(rec.events());
    };
    expect(record(5)).toBe(record(5));
  });
});
