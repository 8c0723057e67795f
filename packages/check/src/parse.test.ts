import { DecodeError } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkLinearizability } from './linearizability.js';
import { casRegisterModel } from './models/index.js';
import { parseHistory } from './parse.js';
import { testSeed, withSeed } from './test-util.js';

// Pieces of real histories, spliced at random: the parser either reads a history
// or refuses it with a DecodeError, and the checker takes whatever it read.
const PIECES = [
  '[',
  ']',
  '{',
  '}',
  '(',
  ')',
  '#jepsen.history.Op',
  '#_',
  '##Inf',
  '##NaN',
  ':process ',
  ':proccess ',
  ':type ',
  ':f ',
  ':value ',
  ':key ',
  ':kye ',
  ':error ',
  ':invoke ',
  ':ok ',
  ':fail ',
  ':info ',
  ':read ',
  ':write ',
  ':cas ',
  ':nemesis ',
  '0 ',
  '1 ',
  '1N ',
  '1.0 ',
  '9007199254740993 ',
  '1/2 ',
  '1.5M ',
  'nil ',
  '"a" ',
  '\\a ',
  '[1 2] ',
  ', ',
  '\n',
  '; c\n',
  'INFO  jepsen.util - ',
  '0\t:invoke\t:write\t1\n',
  '0\t:ok\t:write\t1\n',
  '\t',
  '\uFEFF',
];

const entry = fc
  .record({
    process: fc.constantFrom('0', '1', '2', ':nemesis', '"c"', '1.0'),
    type: fc.constantFrom(':invoke', ':ok', ':ok', ':fail', ':info', ':okay'),
    f: fc.constantFrom(':read', ':write', ':cas'),
    value: fc.constantFrom('nil', '1', '1N', '1.0', '[1 2]', '"[1]"', ':a', '##NaN', '#{1}', '{:a 1}', '2/4', '[0 1]'),
    extra: fc.constantFrom('', ', :key "x"', ', :key 1', ', :error :timeout', ', :time 5', ', :kye 1', ', :f :read'),
    record: fc.boolean(),
  })
  .map(
    (e) =>
      `${e.record ? '#jepsen.history.Op' : ''}{:process ${e.process}, :type ${e.type}, :f ${e.f}, :value ${e.value}${e.extra}}`,
  );

describe('parseHistory on generated and spliced input', () => {
  it('a model refuses an operation it cannot read with DecodeError, whatever its value', () => {
    const { events } = parseHistory('[{:process 0, :type :invoke, :f :cas, :value 2/4}]');
    expect(() => checkLinearizability(casRegisterModel, events)).toThrow(/cas takes \[old new\], got 1\/2/);
  });

  it('reads histories of generated entries, or refuses them with DecodeError', () => {
    withSeed(testSeed(4243), (seed) => {
      let read = 0;
      fc.assert(
        fc.property(fc.array(entry, { minLength: 1, maxLength: 12 }), fc.boolean(), (entries, vector) => {
          const text = vector ? `[${entries.join('\n')}]` : entries.join('\n');
          try {
            const { events } = parseHistory(text);
            read++;
            try {
              checkLinearizability(casRegisterModel, events, { maxSteps: 10_000 });
            } catch (err) {
              if (!(err instanceof DecodeError)) throw err;
            }
          } catch (err) {
            if (!(err instanceof DecodeError)) throw err;
          }
        }),
        { seed, numRuns: 2000 },
      );
      expect(read).toBeGreaterThan(100);
    });
  });

  it('reads a history or throws DecodeError, nothing else', () => {
    withSeed(testSeed(4242), (seed) => {
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }), (pieces) => {
          const text = pieces.join('');
          try {
            const { events } = parseHistory(text);
            expect(events.length).toBeGreaterThan(0);
            try {
              checkLinearizability(casRegisterModel, events, { maxSteps: 10_000 });
            } catch (err) {
              if (!(err instanceof DecodeError)) throw err; // pairing or model errors are decode errors too
            }
          } catch (err) {
            if (!(err instanceof DecodeError)) throw err;
          }
        }),
        { seed, numRuns: 3000 },
      );
    });
  });
});
