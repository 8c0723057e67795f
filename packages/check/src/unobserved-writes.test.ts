/**
 * Writes whose replies were lost, on one key: `parley-entry` gives the values no call
 * observes one name (`preparePartition`), and the search tries a call with an unknown
 * outcome only once its earlier twins (same input, unknown outcome) are linearized.
 * Checked against the brute-force oracle (the raw model, no rewrite, no twin rule:
 * every order and every subset of unknown calls) on random register histories, and on
 * the shape that left torture runs with full disks undecided: many timed-out writes
 * pending at a dead end.
 */
import { type Random, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { HistoryRecorder, type HistoryValue } from './history.js';
import { checkLinearizability } from './linearizability.js';
import { type Model, pairOperations } from './model.js';
import { type EntryInput, parleyEntryModel, registerModel, UNOBSERVED_VALUE } from './models/index.js';
import { bruteForceLinearizable, testSeed, withSeed } from './test-util.js';

const entry = parleyEntryModel as unknown as Model;
/** The same model without the rewrite. */
const entryRaw = { ...entry, preparePartition: undefined } as Model;

type Ending = { type: 'ok'; value: HistoryValue } | { type: 'fail'; error: string } | { type: 'info' };
interface Call {
  readonly process: string;
  readonly f: string;
  readonly input: HistoryValue;
  readonly at: number;
  readonly end: number;
  readonly ending: Ending;
}
const ok = (value: HistoryValue): Ending => ({ type: 'ok', value });
const INFO: Ending = { type: 'info' };

function events(calls: readonly Call[]) {
  const rec = new HistoryRecorder();
  const steps = calls.flatMap((c) => [
    { at: c.at, tie: 0, run: () => rec.invoke(c.process, c.f, c.input, 'k', { timeMs: c.at }) },
    {
      at: c.end,
      tie: 1,
      run: () => {
        const e = c.ending;
        if (e.type === 'ok') rec.ok(c.process, e.value, { timeMs: c.end });
        else if (e.type === 'fail') rec.fail(c.process, null, { error: e.error, timeMs: c.end });
        else rec.info(c.process, null, { error: 'timeout', timeMs: c.end });
      },
    },
  ]);
  for (const s of steps.sort((a, b) => a.at - b.at || a.tie - b.tie)) s.run();
  return rec.events();
}

/**
 * `a` writes x (v1); `unknown` blind writes time out; then `b`'s write of y (v2) is
 * invoked before `c`'s read of x, which returns first. The search tries `b` first,
 * meets the read's return, and must rule out every way the timed-out writes could
 * have come between.
 */
function pendingAtDeadEnd(unknown: number): Call[] {
  const calls: Call[] = [
    { process: 'a', f: 'set', input: { value: 'x' }, at: 0, end: 10, ending: ok({ version: 'v1' }) },
  ];
  for (let i = 1; i <= unknown; i++) {
    calls.push({ process: `u${i}`, f: 'set', input: { value: `u${i}` }, at: 20 + i, end: 20 + i, ending: INFO });
  }
  calls.push(
    { process: 'b', f: 'set', input: { value: 'y' }, at: 10_000, end: 10_003, ending: ok({ version: 'v2' }) },
    { process: 'c', f: 'get', input: null, at: 10_001, end: 10_002, ending: ok({ value: 'x', version: 'v1' }) },
  );
  return calls;
}

describe('parley-entry: writes no call observes', () => {
  it('decides a dead end with 40 timed-out writes pending', () => {
    const good = pendingAtDeadEnd(40);
    expect(checkLinearizability(entry, events(good), { maxSteps: 5_000 }).verdict).toBe('linearizable');
    // Without the rewrite every timed-out write ends in a state of its own, and the
    // search walks their subsets and orders.
    expect(checkLinearizability(entryRaw, events(good), { maxSteps: 5_000 }).verdict).toBe('unknown');
    // Known-bad: a later read returns x with v1 after `b`'s write of y returned.
    const bad = [
      ...good,
      { process: 'd', f: 'get', input: null, at: 10_010, end: 10_011, ending: ok({ value: 'x', version: 'v1' }) },
    ];
    expect(checkLinearizability(entry, events(bad), { maxSteps: 5_000 }).verdict).toBe('not linearizable');
    // Known-bad: a read returns a timed-out write's value with a version no write had,
    // then `a`'s x again: x cannot come back.
    const back = [
      ...good,
      { process: 'd', f: 'get', input: null, at: 10_010, end: 10_011, ending: ok({ value: 'u7', version: 'v9' }) },
      { process: 'e', f: 'get', input: null, at: 10_020, end: 10_021, ending: ok({ value: 'y', version: 'v2' }) },
    ];
    expect(checkLinearizability(entry, events(back), { maxSteps: 5_000 }).verdict).toBe('not linearizable');
  });

  it('renames only the values no call returns, and none when a history uses the reserved value', () => {
    const rename = (calls: readonly Call[]) =>
      entry.preparePartition!(pairOperations(events(calls)).map((op) => entry.prepare(op)!)).ops.map(
        (m) => (m.input as EntryInput & { value?: HistoryValue }).value,
      );
    const calls: Call[] = [
      { process: 'a', f: 'set', input: { value: 'x' }, at: 0, end: 1, ending: INFO },
      { process: 'b', f: 'set', input: { value: 'y' }, at: 2, end: 3, ending: ok({ version: 'v1' }) },
      { process: 'c', f: 'get', input: null, at: 4, end: 5, ending: ok({ value: 'x', version: 'v0' }) },
    ];
    expect(rename(calls)).toEqual(['x', UNOBSERVED_VALUE, undefined]);
    const reserved: Call = { ...calls[1]!, input: { value: UNOBSERVED_VALUE } };
    const read: Call = { ...calls[2]!, ending: ok({ value: UNOBSERVED_VALUE, version: 'v1' }) };
    expect(rename([calls[0]!, reserved, read])).toEqual(['x', UNOBSERVED_VALUE, undefined]);
    expect(rename([calls[0]!, calls[1]!, read])).toEqual(['x', 'y', undefined]);
  });

  it('agree with the brute-force oracle on random register histories with lost replies', () => {
    const seed = testSeed(0xe47);
    withSeed(seed, () => {
      const rng = new SeededRandom(seed);
      const counts = { linearizable: 0, 'not linearizable': 0, twins: 0 };
      for (let i = 0; i < 400; i++) {
        const calls = randomEntryHistory(rng);
        const h = events(calls);
        const r = checkLinearizability(entry, h, { maxSteps: 1_000_000 });
        const oracle = bruteForceLinearizable(entryRaw, h);
        if (r.verdict !== (oracle ? 'linearizable' : 'not linearizable')) {
          expect.fail(`history ${i}: checker ${r.verdict}, oracle ${oracle}\n${calls.map(show).join('\n')}`);
        }
        counts[r.verdict as 'linearizable' | 'not linearizable']++;
        if (calls.filter((c) => c.f === 'set' && c.ending.type === 'info').length >= 2) counts.twins++;
      }
      expect(counts.linearizable, JSON.stringify(counts)).toBeGreaterThan(150);
      expect(counts['not linearizable'], JSON.stringify(counts)).toBeGreaterThan(60);
      expect(counts.twins, JSON.stringify(counts)).toBeGreaterThan(150);
    });
  });

  it('the twin rule alone: identical timed-out writes of a plain register agree with the oracle', () => {
    const register = registerModel as unknown as Model;
    const seed = testSeed(0x7e1);
    withSeed(seed, () => {
      const rng = new SeededRandom(seed);
      let bad = 0;
      for (let i = 0; i < 300; i++) {
        const calls: Call[] = [];
        let t = 0;
        let value = 0;
        for (let p = 0; p < 8; p++) {
          const at = (t += 1 + rng.int(5));
          const end = at + 1 + rng.int(12);
          const w = rng.int(3);
          if (rng.int(2) === 0) {
            calls.push({ process: `p${p}`, f: 'write', input: w, at, end, ending: rng.int(2) ? INFO : ok(w) });
            if (calls.at(-1)!.ending.type === 'ok') value = w;
          } else {
            const seen = rng.int(4) === 0 ? rng.int(3) : value;
            calls.push({ process: `p${p}`, f: 'read', input: null, at, end, ending: ok(seen) });
          }
        }
        const h = events(calls);
        const r = checkLinearizability(register, h, { maxSteps: 1_000_000 });
        const oracle = bruteForceLinearizable(register, h);
        if (r.verdict !== (oracle ? 'linearizable' : 'not linearizable')) {
          expect.fail(`history ${i}: checker ${r.verdict}, oracle ${oracle}\n${calls.map(show).join('\n')}`);
        }
        if (!oracle) bad++;
      }
      expect(bad).toBeGreaterThan(30);
    });
  });
});

const show = (c: Call) =>
  `${c.process} ${c.f} ${JSON.stringify(c.input)} [${c.at}, ${c.end}] ${JSON.stringify(c.ending)}`;

/**
 * A strong entry as a service applies it, with three clients: each call takes effect
 * at a moment between its invocation and its reply. Blind writes, CAS on the last
 * version a client saw, create-only writes, deletes and reads; many replies are lost
 * (the call applied or not: nobody knows) and the client is replaced. Half the
 * histories get one answer changed.
 */
function randomEntryHistory(rng: Random): Call[] {
  const svc = { value: null as HistoryValue, version: null as string | null };
  let versions = 0;
  let values = 0;
  const apply = (f: string, input: Record<string, HistoryValue>): Ending => {
    switch (f) {
      case 'set': {
        if (input.ifNotExists === true && svc.version !== null) return { type: 'fail', error: 'key_already_exists' };
        if (input.ifVersion !== undefined && input.ifVersion !== svc.version) {
          return { type: 'fail', error: 'version_mismatch' };
        }
        svc.value = input.value!;
        svc.version = `v${++versions}`;
        return ok({ version: svc.version });
      }
      case 'delete': {
        const existed = svc.version !== null;
        svc.value = null;
        svc.version = null;
        return ok({ existed });
      }
      default:
        return ok(svc.version === null ? null : { value: svc.value, version: svc.version });
    }
  };
  const calls: Call[] = [];
  let time = 0;
  let procs = 0;
  const clients = Array.from({ length: 3 }, () => ({ id: `p${procs++}`, seen: null as string | null }));
  let budget = 9;
  type Open = {
    c: (typeof clients)[number];
    f: string;
    input: Record<string, HistoryValue>;
    at: number;
    done?: Ending;
  };
  const open: Open[] = [];
  while (budget > 0 || open.length > 0) {
    time += 10 + rng.int(200);
    const o = open.length > 0 && (budget === 0 || rng.int(2) === 0) ? open[rng.int(open.length)]! : undefined;
    if (o === undefined) {
      const c = clients.find((x) => !open.some((y) => y.c === x));
      if (c === undefined) continue;
      budget--;
      const r = rng.int(10);
      let f = 'get';
      let input: Record<string, HistoryValue> = {};
      if (r < 5) {
        f = 'set';
        input = { value: `w${values++}` };
      } else if (r === 5 && c.seen !== null) {
        f = 'set';
        input = { value: `w${values++}`, ifVersion: c.seen };
      } else if (r === 6) {
        f = 'set';
        input = { value: `w${values++}`, ifNotExists: true };
      } else if (r === 7) {
        f = 'delete';
      }
      open.push({ c, f, input, at: time });
      continue;
    }
    if (o.done === undefined && rng.int(3) > 0) {
      o.done = apply(o.f, o.input);
      continue;
    }
    open.splice(open.indexOf(o), 1);
    const lost = o.done === undefined || (o.f === 'set' && rng.int(2) === 0);
    calls.push({ process: o.c.id, f: o.f, input: o.input, at: o.at, end: time, ending: lost ? INFO : o.done! });
    if (lost) {
      o.c.id = `p${procs++}`;
      o.c.seen = null;
    } else if (o.done!.type === 'ok') {
      const v = (o.done as { value: HistoryValue }).value as Record<string, HistoryValue> | null;
      if (v !== null && typeof v.version === 'string') o.c.seen = v.version;
    }
  }
  if (rng.int(2) === 0) {
    const reads = calls.filter((c) => c.f === 'get' && c.ending.type === 'ok');
    if (reads.length > 0) {
      const c = reads[rng.int(reads.length)]!;
      const value =
        rng.int(2) === 0 ? null : { value: `w${rng.int(Math.max(values, 1))}`, version: `v${rng.int(versions + 1)}` };
      calls[calls.indexOf(c)] = { ...c, ending: ok(value) };
    }
  }
  return calls;
}
