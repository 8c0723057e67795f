import { testSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evalFilter, parseFilter } from './filter.js';
import { compileGlob, globMatch } from './glob.js';
import type { JsonValue } from './json.js';

const seed = testSeed(20261129);

const doc: JsonValue = {
  status: 'running',
  attempts: 3,
  ratio: 0.5,
  owner: null,
  tags: ['a', 'b'],
  nested: { deep: { x: 'y' } },
  'with-dash': true,
};

function check(src: string): boolean {
  return evalFilter(parseFilter(src), doc);
}

describe('filter grammar', () => {
  it('evaluates comparisons, paths and boolean structure', () => {
    expect(check('status = "running"')).toBe(true);
    expect(check("status == 'running'")).toBe(true);
    expect(check('status != "done"')).toBe(true);
    expect(check('attempts >= 3 and attempts < 4')).toBe(true);
    expect(check('attempts > 3 or ratio <= 0.5')).toBe(true);
    expect(check('not attempts > 3')).toBe(true);
    expect(check('NOT (attempts > 3 OR ratio > 1)')).toBe(true);
    expect(check('owner = null and owner exists')).toBe(true);
    expect(check('missing exists')).toBe(false);
    expect(check('missing != 1')).toBe(true);
    expect(check('missing = null')).toBe(false);
    expect(check('tags.1 = "b"')).toBe(true);
    expect(check('tags.2 exists')).toBe(false);
    expect(check('nested.deep.x = "y"')).toBe(true);
    expect(check('$.nested.deep.x = "y"')).toBe(true);
    expect(check('with-dash = true')).toBe(true);
    expect(check('status > "a"')).toBe(true);
    expect(check('attempts > "1"')).toBe(false); // mixed types never compare
    expect(check('status = "say \\"hi\\""')).toBe(false);
    expect(check('attempts = -3e0 or attempts = 3.0')).toBe(true);
    expect(evalFilter(parseFilter('$ > 10'), 11)).toBe(true);
    expect(evalFilter(parseFilter('status = "x"'), 'scalar')).toBe(false);
  });

  it('binds and tighter than or', () => {
    // false and false or true  ==  (false and false) or true
    expect(check('attempts = 0 and attempts = 1 or attempts = 3')).toBe(true);
    // true or false and false  ==  true or (false and false)
    expect(check('attempts = 3 or attempts = 0 and attempts = 1')).toBe(true);
  });

  it('rejects input outside the grammar or its bounds with invalid_argument', () => {
    const bad = [
      '',
      'status',
      'status =',
      '= 1',
      'a = 1 and',
      '(a = 1',
      'a = 1)',
      'a ! 1',
      'a = "open',
      'a = 1x',
      'a = b',
      'a.b. = 1',
      'x'.repeat(1025),
      Array.from({ length: 33 }, (_, i) => `a${i} = 1`).join(' and '),
      `${'('.repeat(20)}a = 1${')'.repeat(20)}`,
      `${'not '.repeat(20)}a = 1`,
    ];
    for (const src of bad)
      expect(() => parseFilter(src), src).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });

  it('never throws anything but invalid_argument on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (src) => {
        try {
          const node = parseFilter(src);
          evalFilter(node, doc);
        } catch (err) {
          expect(err).toMatchObject({ code: 'invalid_argument' });
        }
      }),
      { seed, numRuns: 2000 },
    );
  });
});

describe('glob', () => {
  it('matches *, ? and escapes', () => {
    const m = (p: string, s: string) => globMatch(compileGlob(p), s);
    expect(m('*', '')).toBe(true);
    expect(m('*', 'a/b/c')).toBe(true);
    expect(m('a/*', 'a/b/c')).toBe(true);
    expect(m('a/*', 'b/a')).toBe(false);
    expect(m('a?c', 'abc')).toBe(true);
    expect(m('a?c', 'ac')).toBe(false);
    expect(m('*.json', 'x.json')).toBe(true);
    expect(m('*.json', 'x.jsonl')).toBe(false);
    expect(m('a\\*', 'a*')).toBe(true);
    expect(m('a\\*', 'ab')).toBe(false);
    expect(m('*a*b*', 'xxaxxbxx')).toBe(true);
    expect(m('*a*b', 'xxbxxa')).toBe(false);
    expect(() => compileGlob('a\\')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });

  it('agrees with a regex translation and stays fast on adversarial input', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[ab*?]{0,8}$/), fc.stringMatching(/^[ab]{0,10}$/), (pattern, text) => {
        if (pattern.length === 0) return;
        const re = new RegExp(`^${pattern.replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 's');
        expect(globMatch(compileGlob(pattern), text)).toBe(re.test(text));
      }),
      { seed, numRuns: 2000 },
    );
    const tokens = compileGlob(`${'*a'.repeat(100)}b`);
    expect(globMatch(tokens, 'a'.repeat(1000))).toBe(false);
  });
});
