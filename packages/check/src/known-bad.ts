/**
 * The harness watches itself: before a sweep runs, every checker the
 * scenarios rely on is fed a history known to be bad, and the sweep refuses
 * to start if one of them accepts it. A checker that passes everything would
 * make a clean sweep meaningless; this catches it in milliseconds instead of
 * after a thousand green seeds.
 *
 * Each case is a small, hand-built history of one bug class the scenarios
 * look for (a lost acknowledged write, two lease holders at one epoch, a
 * stale fence accepted, two leaders in one term, ...).
 */
import { compareHlc, type Hlc } from '@parley/crdt';
import { checkConvergence } from './convergence.js';
import { checkDurability } from './durability.js';
import { checkFencing } from './fencing.js';
import { HistoryRecorder } from './history.js';
import { InvariantRegistry } from './invariants.js';
import { checkLinearizability } from './linearizability.js';
import type { Model } from './model.js';
import { parleyEntryModel, parleyLeaseModel, parleyLockModel } from './models/index.js';
import { type RaftClusterView, type RaftNodeView, registerRaftInvariants } from './raft-invariants.js';

export interface KnownBadCase {
  /** `<checker>: <bug>`. */
  readonly name: string;
  /** True when the checker accepted the bad history (that is the checker's bug). */
  accepts(): boolean;
}

/** Thrown by `runSweep` when a checker accepted a known-bad history. */
export class CheckerSelfTestError extends Error {
  constructor(readonly accepted: readonly string[]) {
    super(`checker self-test failed, refusing to run: accepted known-bad ${accepted.join('; ')}`);
    this.name = 'CheckerSelfTestError';
  }
}

const linearizable = (model: Model<unknown, unknown, unknown>, build: (r: HistoryRecorder) => void): boolean => {
  const rec = new HistoryRecorder();
  build(rec);
  // A bad history must be refused outright: `unknown` is not a refusal.
  return checkLinearizability(model, rec.events(), { maxSteps: 100_000 }).verdict !== 'not linearizable';
};

const node = (id: string, term: number, isLeader: boolean, terms: number[], commitIndex = 0): RaftNodeView => ({
  id,
  term,
  isLeader,
  commitIndex,
  firstIndex: 1,
  lastIndex: terms.length,
  termAt: (i) => terms[i - 1] ?? -1,
});

const raftAccepts = (views: RaftClusterView[]): boolean => {
  const registry = new InvariantRegistry<RaftClusterView>();
  registerRaftInvariants(registry);
  return views.every((v) => registry.checkInvariants(v).length === 0);
};

const hlc = (wallMs: number, node: string): Hlc => ({ wallMs, logical: 0, node });

export const KNOWN_BAD: readonly KnownBadCase[] = [
  {
    name: 'parley-entry: an acknowledged write is not read back',
    accepts: () =>
      linearizable(parleyEntryModel as Model<unknown, unknown, unknown>, (r) => {
        r.invoke('a', 'set', { value: 1 }, 'k');
        r.ok('a', { version: 'v1' });
        r.invoke('b', 'get', null, 'k');
        r.ok('b', null);
      }),
  },
  {
    name: 'parley-entry: two CAS writes on one version both succeed',
    accepts: () =>
      linearizable(parleyEntryModel as Model<unknown, unknown, unknown>, (r) => {
        r.invoke('a', 'set', { value: 1 }, 'k');
        r.ok('a', { version: 'v1' });
        r.invoke('b', 'set', { value: 2, ifVersion: 'v1' }, 'k');
        r.ok('b', { version: 'v2' });
        r.invoke('c', 'set', { value: 3, ifVersion: 'v1' }, 'k');
        r.ok('c', { version: 'v3' });
      }),
  },
  {
    name: 'parley-lease: two holders granted one epoch',
    accepts: () =>
      linearizable(parleyLeaseModel as Model<unknown, unknown, unknown>, (r) => {
        r.invoke('a', 'acquire', { holder: 'a' }, 'l');
        r.ok('a', { epoch: 1 });
        r.invoke('b', 'acquire', { holder: 'b' }, 'l');
        r.ok('b', { epoch: 1 });
      }),
  },
  {
    name: 'parley-lease: taken over inside the first holder’s TTL',
    accepts: () =>
      linearizable(parleyLeaseModel as Model<unknown, unknown, unknown>, (r) => {
        r.invoke('a', 'acquire', { holder: 'a', ttlMs: 3_000, skewMs: 100 }, 'l', { timeMs: 1_000 });
        r.ok('a', { epoch: 1 }, { timeMs: 1_010 });
        r.invoke('b', 'acquire', { holder: 'b', ttlMs: 3_000, skewMs: 100 }, 'l', { timeMs: 2_000 });
        r.ok('b', { epoch: 2 }, { timeMs: 2_010 });
      }),
  },
  {
    name: 'parley-lock: a write with a superseded fence accepted',
    accepts: () =>
      linearizable(parleyLockModel as Model<unknown, unknown, unknown>, (r) => {
        r.invoke('a', 'acquire', { owner: 'a' }, 'm');
        r.ok('a', { fence: 1 });
        r.invoke('b', 'acquire', { owner: 'b' }, 'm');
        r.ok('b', { fence: 2 });
        r.invoke('a', 'write', { fence: 1 }, 'm');
        r.ok('a', {});
      }),
  },
  {
    name: 'fencing: a grant that does not increase the fence',
    accepts: () =>
      checkFencing([
        { type: 'grant', resource: 'lock:m', fence: 2 },
        { type: 'grant', resource: 'lock:m', fence: 2 },
      ]).ok,
  },
  {
    name: 'fencing: a stale write accepted',
    accepts: () =>
      checkFencing([
        { type: 'grant', resource: 'lock:m', fence: 1 },
        { type: 'grant', resource: 'lock:m', fence: 2 },
        { type: 'write', resource: 'lock:m', fence: 1, accepted: true },
      ]).ok,
  },
  {
    name: 'durability: an acknowledged write missing after restart',
    accepts: () =>
      checkDurability([{ key: 'k', version: 'v1', index: 3 }], { snapshotIndex: 0, entries: new Map() }).ok,
  },
  {
    name: 'convergence: two replicas with different states',
    accepts: () =>
      checkConvergence(
        new Map([
          ['a', 1],
          ['b', 2],
        ]),
        [],
        { equal: (x, y) => x === y, stampOf: () => undefined, compare: compareHlc },
      ).ok,
  },
  {
    name: 'convergence: an acknowledged write overwritten by an older one',
    accepts: () =>
      checkConvergence(new Map([['a', hlc(5, 'a')]]), [{ key: 'k', stamp: hlc(9, 'b') }], {
        equal: () => true,
        stampOf: (s) => s,
        compare: compareHlc,
      }).ok,
  },
  {
    name: 'raft: two leaders in one term',
    accepts: () => raftAccepts([{ nodes: [node('a', 2, true, [1, 2]), node('b', 2, true, [1])] }]),
  },
  {
    name: 'raft: two members commit different entries at one index',
    accepts: () =>
      raftAccepts([
        { nodes: [node('a', 2, false, [1, 1], 2)] },
        { nodes: [node('a', 2, false, [1, 1], 2), node('b', 3, false, [1, 3], 2)] },
      ]),
  },
];

/** The cases whose checker accepted the bad history or threw on it (empty: every checker refused). */
export function runKnownBad(cases: readonly KnownBadCase[] = KNOWN_BAD): string[] {
  const accepted: string[] = [];
  for (const c of cases) {
    try {
      if (c.accepts()) accepted.push(c.name);
    } catch (err) {
      // A checker that throws on a history it should judge is as broken as one that accepts it.
      accepted.push(`${c.name} (threw ${err instanceof Error ? err.message : String(err)})`);
    }
  }
  return accepted;
}
