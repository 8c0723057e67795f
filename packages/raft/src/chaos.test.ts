/**
 * Deterministic randomized test: an in-process cluster under message loss,
 * duplication, reordering, partitions, crashes/restarts, snapshots,
 * leadership transfers and membership changes, all drawn from one seed.
 * Safety invariants are checked after every step; at the end the network
 * heals and the cluster must elect a leader and commit within a bound.
 *
 * Replay one seed: PARLEY_SEED=<n> npx vitest run packages/raft/src/chaos.test.ts
 */
import { InvariantRegistry, type RaftClusterView, registerRaftInvariants } from '@parley/check';
import { type PeerId, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { Cluster } from './testing/cluster.js';
import type { Message } from './types.js';

const enc = new TextEncoder();

interface RunResult {
  violations: string[];
  committed: number;
  livenessTicks: number;
}

/** The checkers' view of the cluster: every member through its read-only probe, entries compared by content. */
function view(c: Cluster): RaftClusterView {
  return {
    nodes: [...c.nodes.values()].map((n) => {
      const p = n.node.probe;
      return {
        id: n.id,
        term: p.term,
        isLeader: p.state === 'leader',
        commitIndex: p.committed,
        lastApplied: n.appliedIndex,
        firstIndex: p.firstIndex(),
        lastIndex: p.lastIndex(),
        termAt: (i: number) => p.termAt(i) ?? -1,
        entryAt: (i: number) => p.entryAt(i),
        down: n.crashed,
      };
    }),
  };
}

export function runChaos(seed: number, voters: number, steps: number): RunResult {
  const rng = new SeededRandom(seed);
  const invariants = new InvariantRegistry<RaftClusterView>();
  registerRaftInvariants(invariants);
  const found: string[] = [];
  const check = () => {
    for (const v of invariants.checkInvariants(view(c)))
      if (found.length < 100) found.push(`${v.invariant}: ${v.message}`);
  };
  let highestApplied = 0;
  const c = new Cluster({
    seed,
    config: { maxInflightMsgs: 4, maxSizePerMsgBytes: 256, maxSnapshotChunkBytes: 64 },
    onApply: (_id, e) => {
      highestApplied = Math.max(highestApplied, e.index);
    },
  });
  const initial = Array.from({ length: voters }, (_, i) => `n${i + 1}`);
  for (const id of initial) c.add(id, { voters: initial });
  let nextId = voters + 1;
  const removed = new Set<PeerId>();
  let proposals = 0;
  const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)] as T;

  const deliverSome = (count: number) => {
    for (let k = 0; k < count && c.queue.length > 0; k++) {
      const at = rng.int(c.queue.length); // reordering: any queued message may go next
      const m = c.queue[at] as Message;
      c.queue.splice(at, 1);
      const roll = rng.int(100);
      if (roll < 10) continue; // loss
      if (roll < 15) c.queue.push(m); // duplication: deliver now and again later
      c.deliverMessage(m);
    }
  };

  for (let step = 0; step < steps; step++) {
    const ids = c.ids();
    const live = ids.filter((id) => !c.get(id).crashed);
    const r = rng.int(100);
    if (r < 30) {
      for (const id of live) c.tick(id);
    } else if (r < 50) {
      for (const id of live) c.processReady(id);
    } else if (r < 75) {
      deliverSome(1 + rng.int(8));
    } else if (r < 85) {
      const id = pick(live.length ? live : ids);
      try {
        c.get(id).node.propose(enc.encode(`v${seed}-${proposals++}`));
      } catch {
        // not_leader / unavailable: the client would retry elsewhere
      }
    } else if (r < 88) {
      if (c.cut.size > 0) c.heal();
      else {
        const shuffled = [...ids].sort(() => 0).filter(() => true);
        const side = shuffled.filter(() => rng.int(2) === 0);
        const other = shuffled.filter((id) => !side.includes(id));
        if (rng.int(3) === 0 && side.length && other.length) {
          // asymmetric: only one direction is cut
          for (const a of side) for (const b of other) c.cut.add(`${a}>${b}`);
        } else c.partition(side, other);
      }
    } else if (r < 90) {
      const down = ids.filter((id) => c.get(id).crashed);
      if (down.length && rng.int(2) === 0) c.restart(pick(down));
      else if (live.length > 1) c.crash(pick(live));
    } else if (r < 93) {
      const id = pick(live.length ? live : ids);
      c.snapshot(id);
    } else if (r < 95) {
      const leader = c.leaders()[0];
      if (leader) {
        const vs = leader.node.status().voters.filter((v) => v !== leader.id);
        if (vs.length) leader.node.transferLeader(pick(vs));
      }
    } else if (r < 97) {
      const leader = c.leaders()[0];
      if (leader) {
        const st = leader.node.status();
        const roll = rng.int(3);
        try {
          if (roll === 0 && nextId <= voters + 3) {
            const id = `n${nextId++}`;
            c.add(id, { voters: [] });
            leader.node.proposeConfChange({ type: 'addLearner', node: id });
          } else if (roll === 1 && st.learners.length) {
            leader.node.proposeConfChange({ type: 'addVoter', node: pick(st.learners) });
          } else if (roll === 2 && st.voters.length > 3) {
            const victim = pick(st.voters);
            leader.node.proposeConfChange({ type: 'removeNode', node: victim });
            removed.add(victim);
          }
        } catch {
          // a change is still pending
        }
      }
    }
    check();
    if (found.length) break;
  }

  // Liveness: heal everything, restart everyone, and require a fresh commit
  // on every live member within a bound.
  c.heal();
  for (const id of c.ids()) if (c.get(id).crashed) c.restart(id);
  const marker = `final-${seed}`;
  let livenessTicks = -1;
  let proposed = false;
  for (let t = 0; t < 400; t++) {
    for (const id of c.ids()) c.tick(id);
    c.stabilize(10_000);
    check();
    const leader = c.leaders()[0];
    if (leader && !proposed) {
      try {
        leader.node.propose(enc.encode(marker));
        proposed = true;
      } catch {
        // transfer in progress or change pending: try next tick
      }
      c.stabilize(10_000);
    }
    // Members are those of the leader's configuration; removed nodes never learn they were removed.
    const cur = c.leaders()[0]?.node.status();
    const all = cur ? [...cur.voters, ...cur.learners].map((id) => c.get(id)) : [];
    if (
      proposed &&
      all.length > 0 &&
      all.every((n) => n.applied.some((e) => new TextDecoder().decode(e.data) === marker))
    ) {
      livenessTicks = t;
      break;
    }
  }
  check();
  const violations = [...found];
  if (livenessTicks < 0) {
    violations.push('liveness: no commit reached every member within 400 ticks after healing');
    for (const n of c.nodes.values()) {
      const st = n.node.status();
      violations.push(
        `  ${n.id}: ${st.state} term=${st.term} lead=${st.lead} commit=${st.commit} applied=${st.applied} last=${n.node.raft.log.lastIndex()} voters=${st.voters} learners=${st.learners} ${JSON.stringify(st.progress)}`,
      );
    }
  }
  return { violations, committed: highestApplied, livenessTicks };
}

const fixed = process.env.PARLEY_SEED;
const count = Number(process.env.PARLEY_CHAOS_SEEDS ?? 40);
const seeds = fixed ? [Number(fixed)] : Array.from({ length: count }, (_, i) => i + 1);

describe('randomized cluster (loss, duplication, reordering, partitions, crashes, snapshots, membership)', () => {
  for (const voters of [3, 5]) {
    it(`${voters} voters, ${seeds.length} seeds`, () => {
      let committed = 0;
      for (const seed of seeds) {
        let res: RunResult;
        try {
          res = runChaos(seed, voters, 1500);
        } catch (err) {
          throw new Error(`PARLEY_SEED=${seed} (voters=${voters}) crashed: ${(err as Error).stack}`);
        }
        if (res.violations.length) {
          throw new Error(`PARLEY_SEED=${seed} (voters=${voters}):\n${res.violations.join('\n')}`);
        }
        committed += res.committed;
      }
      // The runs made real progress (not a vacuous pass).
      expect(committed).toBeGreaterThan(seeds.length * 5);
    });
  }
});
