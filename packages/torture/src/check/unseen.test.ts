/**
 * The independent checker on keys full of calls whose replies were lost: the names
 * nothing observes made one (models.ts) and equal unknown calls tried in call order
 * (wgl.ts). The shapes are the ones long torture runs left undecided: many timed-out
 * acquires or blind writes pending where the search meets a dead end. (The random
 * histories of differential.test.ts hold both reductions to parley-check's verdicts.)
 */
import { describe, expect, it } from 'vitest';
import { type Op, Recorder } from '../history.js';
import { checkOwn } from './linear.js';
import {
  entryCall,
  entryModel,
  grantCall,
  grantModel,
  toCheckOps,
  UNSEEN,
  unseenHolders,
  unseenValues,
} from './models.js';
import { type CheckOp, checkKey, type SeqModel } from './wgl.js';

type Step = ['call', string, string, unknown] | ['ok' | 'fail' | 'info', string, unknown, string?];

/** Records the steps in order: a call by a process name, then its completion by that name. */
function record(workload: string, steps: readonly Step[]): Recorder {
  const rec = new Recorder();
  const open = new Map<string, Op>();
  for (const s of steps) {
    if (s[0] === 'call') {
      open.set(s[1], rec.invoke(workload, rec.newProcess(), s[2], 'k', s[3] as never, 'n1'));
    } else {
      rec.complete(open.get(s[1]) as Op, s[0], (s[2] ?? null) as never, s[3]);
    }
  }
  return rec;
}

/** `a` holds (1); `n` acquires time out; `b`'s acquire is called before `a`'s release returns. */
function pendingAcquires(n: number, bad: boolean): Step[] {
  const steps: Step[] = [
    ['call', 'a', 'acquire', { holder: 'a' }],
    ['ok', 'a', { epoch: 1 }],
  ];
  for (let i = 0; i < n; i++) steps.push(['call', `u${i}`, 'acquire', { holder: `u${i}` }], ['info', `u${i}`, null]);
  steps.push(
    ['call', 'b', 'acquire', { holder: 'b' }],
    ['call', 'r', 'release', { holder: 'a', epoch: 1 }],
    ['ok', 'r', { released: true }],
    ['ok', 'b', { epoch: 2 }],
    ['call', 'g', 'get', null],
    ['ok', 'g', bad ? { holder: 'a', epoch: 1 } : { holder: 'b', epoch: 2 }],
  );
  return steps;
}

/** `a` writes x; `n` blind writes time out; `b`'s write is called before a read of x returns. */
function pendingWrites(n: number, bad: boolean): Step[] {
  const steps: Step[] = [
    ['call', 'a', 'set', { value: 'x' }],
    ['ok', 'a', { version: 'v1' }],
  ];
  for (let i = 0; i < n; i++) steps.push(['call', `u${i}`, 'set', { value: `u${i}` }], ['info', `u${i}`, null]);
  steps.push(
    ['call', 'b', 'set', { value: 'y' }],
    ['call', 'c', 'get', null],
    ['ok', 'c', { value: 'x', version: 'v1' }],
    ['ok', 'b', { version: 'v2' }],
    ['call', 'd', 'get', null],
    ['ok', 'd', bad ? { value: 'x', version: 'v1' } : { value: 'y', version: 'v2' }],
  );
  return steps;
}

function keyOps<I>(rec: Recorder, workload: string, convert: (op: Op) => I | null): CheckOp<I>[] {
  return toCheckOps(rec.of(workload), rec.positions(), convert).get('k') as CheckOp<I>[];
}

describe('the independent checker: calls nobody observes', () => {
  it('decides a lease key with 30 timed-out acquires pending at a dead end', () => {
    const convert = (op: Op) => grantCall(op, { holder: 'holder', token: 'epoch' });
    const model = grantModel as SeqModel<unknown, unknown>;
    const good = record('lease', pendingAcquires(30, false));
    const ops = keyOps(good, 'lease', convert);
    expect(checkKey(model, ops, 20_000).verdict).toBe('unknown');
    const renamed = unseenHolders(ops);
    expect(renamed.filter((o) => o.input.f === 'acquire' && o.input.holder === UNSEEN)).toHaveLength(30);
    expect(checkKey(model, renamed, 20_000).verdict).toBe('linearizable');
    expect(checkOwn(good, 'lease').verdict).toBe('linearizable');
    expect(checkOwn(record('lease', pendingAcquires(30, true)), 'lease').verdict).toBe('not linearizable');
  });

  it('decides a register key with 30 timed-out writes pending at a dead end', () => {
    const model = entryModel as SeqModel<unknown, unknown>;
    const good = record('register', pendingWrites(30, false));
    const ops = keyOps(good, 'register', entryCall);
    expect(checkKey(model, ops, 20_000).verdict).toBe('unknown');
    expect(checkKey(model, unseenValues(ops), 20_000).verdict).toBe('linearizable');
    expect(checkOwn(good, 'register').verdict).toBe('linearizable');
    expect(checkOwn(record('register', pendingWrites(30, true)), 'register').verdict).toBe('not linearizable');
  });

  it('keeps every name a call observes, and all of them when a call uses the reserved one', () => {
    const convert = (op: Op) => grantCall(op, { holder: 'holder', token: 'epoch' });
    const steps: Step[] = [
      ['call', 'u', 'acquire', { holder: 'u' }],
      ['info', 'u', null],
      ['call', 'v', 'acquire', { holder: 'v' }],
      ['info', 'v', null],
      ['call', 'g', 'get', null],
      ['ok', 'g', { holder: 'v', epoch: 1 }],
    ];
    const holders = (s: Step[]) =>
      unseenHolders(keyOps(record('lease', s), 'lease', convert)).map((o) => (o.input as { holder?: string }).holder);
    expect(holders(steps)).toEqual([UNSEEN, 'v', undefined]);
    const reserved: Step[] = [...steps, ['call', 'w', 'acquire', { holder: UNSEEN }], ['info', 'w', null]];
    expect(holders(reserved)).toEqual(['u', 'v', undefined, UNSEEN]);
  });
});
