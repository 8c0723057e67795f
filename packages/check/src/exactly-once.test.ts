import { describe, expect, it } from 'vitest';
import { checkExactlyOnce, type Execution, type TaggedAnswer } from './exactly-once.js';

const exec = (tag: string, command: string, index: number, outcome: Execution['outcome']): Execution => ({
  tag,
  command,
  index,
  outcome,
});
const answer = (tag: string, f: string, outcome: TaggedAnswer['outcome']): TaggedAnswer => ({
  tag,
  client: 'c0',
  f,
  outcome,
});

describe('exactly-once checker', () => {
  it('passes answers that are their execution’s, and indeterminate answers of any call', () => {
    const r = checkExactlyOnce(
      [
        exec('t1', 's1/1', 10, { ok: true, won: true, value: 't1', version: 'a' }),
        exec('t2', 's1/2', 11, { ok: false, code: 'key_already_exists' }),
        exec('t3', 's2/1', 12, { ok: true, fence: 4 }),
        exec('t4', 's2/2', 13, { ok: true, version: 'b' }),
      ],
      [
        answer('t1', 'claim', { ok: true, won: true, value: 't1', version: 'a' }),
        answer('t2', 'create', { ok: false, code: 'key_already_exists' }),
        answer('t3', 'acquire', { ok: true, fence: 4 }),
        answer('t4', 'set', { ok: false, code: 'timeout' }),
        answer('t5', 'set', { ok: false, code: 'outcome_unknown' }), // never applied: fine, the caller was not told
      ],
    );
    expect(r).toMatchObject({ ok: true, compared: 3, violations: [] });
  });

  it('finds a call executed by two commands (a retry re-issued as a new command)', () => {
    const r = checkExactlyOnce(
      [
        exec('t1', 's1/7', 10, { ok: true, version: 'a' }),
        exec('t1', 's9/1', 30, { ok: false, code: 'key_already_exists' }),
      ],
      [answer('t1', 'create', { ok: false, code: 'outcome_unknown' })],
    );
    expect(r.violations).toEqual([{ type: 'applied-twice', tag: 't1', commands: ['s1/7', 's9/1'], indexes: [10, 30] }]);
  });

  it('finds a winner told it lost, by its execution or by its own value', () => {
    const won = exec('t1', 's1/1', 10, { ok: true, won: true, value: 't1', version: 'a' });
    const lostToOther = answer('t1', 'claim', { ok: true, won: false, value: 't0', version: 'z' });
    expect(checkExactlyOnce([won], [lostToOther]).violations[0]?.type).toBe('winner-told-lost');
    const lostToSelf = answer('t2', 'claim', { ok: true, won: false, value: 't2', version: 'a' });
    expect(checkExactlyOnce([], [lostToSelf]).violations[0]?.type).toBe('winner-told-lost');
  });

  it('finds an answer that is not its execution’s, or that no execution gave', () => {
    const r = checkExactlyOnce(
      [
        exec('t1', 's1/1', 10, { ok: true, version: 'a' }),
        exec('t2', 's1/2', 11, { ok: true, version: 'b' }),
        exec('t3', 's1/3', 12, { ok: true, waiting: true }),
      ],
      [
        answer('t1', 'create', { ok: false, code: 'key_already_exists' }),
        answer('t2', 'cas', { ok: true, version: 'c' }),
        answer('t3', 'acquire', { ok: true, fence: 1 }),
        answer('t4', 'set', { ok: false, code: 'invalid_argument' }),
        // A CAS failed at a read point, never logged: no execution, and none owed.
        answer('t5', 'cas', { ok: false, code: 'version_mismatch' }),
      ],
    );
    expect(r.violations.map((v) => `${v.type} ${v.tag}`)).toEqual([
      'answer-mismatch t1',
      'answer-mismatch t2',
      'answer-mismatch t3',
      'answered-unapplied t4',
    ]);
  });

  it('bounds the violations it keeps', () => {
    const answers = Array.from({ length: 30 }, (_, i) => answer(`t${i}`, 'set', { ok: true, version: 'x' }));
    const r = checkExactlyOnce([], answers, 5);
    expect([r.violations.length, r.truncated, r.ok]).toEqual([5, true, false]);
  });
});
