/**
 * The search's pruning and memory: unknown reads dropped, unknown calls tried
 * last and subsumed, a memo sized by need. Budgets here are step counts (not
 * wall-clock), so each test fails deterministically without its fix.
 */
import { type Random, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { type HistoryEvent, HistoryRecorder } from './history.js';
import { checkLinearizability } from './linearizability.js';
import { kvModel, mutexModel, registerModel } from './models/index.js';
import { testSeed, withSeed } from './test-util.js';

/** `n` calls, one at a time: writes of fresh values, each followed by a read of it. */
export function sequentialRegister(n: number): HistoryEvent[] {
  const r = new HistoryRecorder();
  let v = 0;
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      v = i;
      r.invoke(0, 'write', v);
      r.ok(0, v);
    } else {
      r.invoke(1, 'read', null);
      r.ok(1, v);
    }
  }
  return r.events();
}

/**
 * A real mutex used by 5 clients: each call takes effect at a random point
 * before its reply; blocked acquires may give up (`fail`); about `infoRate` of the
 * replies are lost (`info`: an acquire that never took effect, or a release that
 * did), after which the client continues as a new process, as Jepsen does.
 */
export function mutexHistory(rng: Random, calls: number, infoRate: number): HistoryEvent[] {
  const r = new HistoryRecorder();
  let held = false;
  let nextProcess = 0;
  const clients = Array.from({ length: 5 }, () => ({
    process: nextProcess++,
    op: null as 'acquire' | 'release' | null,
    applied: false,
    holds: false,
  }));
  let invoked = 0;
  while (invoked < calls || clients.some((c) => c.op !== null)) {
    const c = clients[rng.int(clients.length)]!;
    if (c.op === null) {
      if (invoked >= calls) continue;
      c.op = c.holds ? 'release' : 'acquire';
      c.applied = false;
      invoked++;
      r.invoke(c.process, c.op, null);
    } else if (!c.applied && rng.float() < 0.5) {
      if (c.op === 'acquire' && !held) {
        held = true;
        c.applied = true;
      } else if (c.op === 'release') {
        held = false;
        c.applied = true;
      }
    } else if (c.applied || rng.float() < 0.1) {
      const lost = rng.float() < infoRate;
      if (lost && ((c.op === 'acquire' && !c.applied) || (c.op === 'release' && c.applied))) {
        r.info(c.process, null);
        c.process = nextProcess++;
        c.op = null;
        c.holds = false;
        continue;
      }
      if (c.applied) {
        r.ok(c.process, null);
        c.holds = c.op === 'acquire';
      } else if (c.op === 'acquire') {
        r.fail(c.process, null);
      } else {
        continue;
      }
      c.op = null;
    }
  }
  return r.events();
}

describe('search', () => {
  it('drops reads whose outcome is unknown: 26 timed-out reads cost nothing', () => {
    const r = new HistoryRecorder();
    r.invoke(0, 'write', 1);
    r.ok(0, 1);
    for (let p = 1; p <= 26; p++) r.invoke(p, 'read', null);
    for (let p = 1; p <= 26; p++) r.info(p);
    r.invoke(100, 'read', null);
    r.ok(100, 7);
    const result = checkLinearizability(registerModel, r.events(), { maxSteps: 10_000 });
    expect(result.verdict).toBe('not linearizable');
    expect(result.operations).toBe(2);
  });

  it('decides a 10,000-call mutex history with lost replies within 1,000,000 steps', () => {
    withSeed(testSeed(7), (seed) => {
      const history = mutexHistory(new SeededRandom(seed), 10_000, 0.02);
      expect(history.filter((e) => e.type === 'info').length).toBeGreaterThan(50);
      const result = checkLinearizability(mutexModel, history, { maxSteps: 1_000_000 });
      expect(result.verdict).toBe('linearizable');
    });
  });

  it('decides a 50,000-call sequential history with a small memo', () => {
    const result = checkLinearizability(registerModel, sequentialRegister(50_000), { maxMemoBytes: 16 * 2 ** 20 });
    expect(result.verdict).toBe('linearizable');
    expect(result.operations).toBe(50_000);
  });

  it('gives up with unknown (max-memo) when the memo cap is reached', () => {
    const result = checkLinearizability(registerModel, sequentialRegister(20_000), { maxMemoBytes: 100_000 });
    expect(result).toMatchObject({ verdict: 'unknown', reason: 'max-memo' });
  });

  it('counts the distinct states in the memo cap', () => {
    // 5,000 puts of distinct 1,000-character strings, each read back: a small memo, 10 MB of states.
    const r = new HistoryRecorder();
    for (let i = 0; i < 5_000; i++) {
      const v = String(i).padStart(1_000, '.');
      r.invoke(0, 'put', v, 'k');
      r.ok(0, null);
      r.invoke(1, 'get', null, 'k');
      r.ok(1, v);
    }
    const events = r.events();
    expect(checkLinearizability(kvModel, events, { maxMemoBytes: 64 * 2 ** 20 }).verdict).toBe('linearizable');
    expect(checkLinearizability(kvModel, events, { maxMemoBytes: 2 * 2 ** 20 })).toMatchObject({
      verdict: 'unknown',
      reason: 'max-memo',
    });
  });

  it('keeps an unknown call available on a path that has not used it (subsumption goes one way)', () => {
    // Only A, B, read 2, write 3, W, read 2 works. The search first tries B, A, W
    // and fails; the configuration after A, B (same calls, same state, without W)
    // must not be pruned by the one that already used W.
    const r = new HistoryRecorder();
    r.invoke('B', 'write', 2);
    r.invoke('A', 'write', 1);
    r.invoke('W', 'write', 2);
    r.ok('A', null);
    r.ok('B', null);
    r.info('W');
    r.invoke('r1', 'read', null);
    r.ok('r1', 2);
    r.invoke('w3', 'write', 3);
    r.ok('w3', null);
    r.invoke('r2', 'read', null);
    r.ok('r2', 2);
    expect(checkLinearizability(registerModel, r.events()).verdict).toBe('linearizable');
  });
});
