/**
 * `node-strong-3-reads`: strong reads beside linearizable
 * (docs/guarantees.md, "Strong reads"). Twelve clients write unique values
 * to four keys and read them with every consistency — serializable, bounded
 * (`maxStalenessMs` 0–1000 and/or `maxLagEntries` 0–10) and linearizable —
 * hopping between the three voters and a node outside the group, under
 * partitions of every kind, voter crashes and pauses, 2% loss with
 * reordering, and clocks skewed ±100 ms with drift (no clock steps: the
 * bound's proof assumes none goes unseen).
 *
 * Checked after healing:
 * - `checkBoundedStaleness` over the session history, each read promised
 *   its `maxStalenessMs` when it bounds time alone (linearizable reads are
 *   promised 0);
 * - the lag bound against the log: a read bounded by (S, N) may miss a write
 *   acknowledged before `invoke − S` only if it is among the last N entries
 *   of the log as it stood then (a read point covers the largest index
 *   acknowledged by then; the answer is at most N behind it);
 * - every serializable or bounded answer a member gave is the committed
 *   state at the index it had applied (a prefix of the log: never an entry
 *   that did not commit), and one member's answers never go back;
 * - once healed and caught up, a serializable read through every node is no
 *   older than a linearizable one taken before it (a node answers from a
 *   state that applies the log);
 * plus Raft's invariants and replica agreement after every event.
 */

import { checkBoundedStaleness, type SessionOp } from '@parley/check';
import { isParleyError, type PeerId } from '@parley/interface';
import type { StrongReadOptions } from '@parley/node';
import { between, PARTITION_KINDS, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { highestTermLeader } from '../raft/group.js';
import type { NodeStrongHost } from './host.js';
import {
  bootNodeStrongWorld,
  type NodeStrongScenarioConfig,
  nodeStrongConverged,
  type RunState,
  startNodeStrongFaults,
} from './world.js';

/** The namespace the world records writes of (versions and their log indexes). */
const NS = 'kv';
const KEYS = ['r0', 'r1', 'r2', 'r3'];
const STALENESS_MS = [0, 50, 200, 1_000];
const LAG_ENTRIES = [0, 2, 10];
/** Codes a read or write may end with besides success. */
const EXPECTED = new Set(['staleness_exceeded', 'unavailable', 'timeout', 'not_leader', 'closed']);

type Level = 'linearizable' | 'serializable' | 'bounded';

interface ReadMeta {
  level: Level;
  via: PeerId;
  maxStalenessMs: number;
  maxLagEntries: number;
}

const CONFIG: NodeStrongScenarioConfig = {
  name: 'node-strong-3-reads',
  description:
    '3 voters + 1 non-member, 12 clients writing 4 keys and reading them serializable, bounded (0–1000 ms, 0–10 entries) and linearizable through any node; partitions of every kind, voter crashes and pauses, 2% loss, clocks ±100 ms with drift; bounded-staleness and lag checks, serializable answers a prefix of the log.',
  voters: 3,
  nonMembers: 1,
  clients: 12,
  network: { lossRate: 0.02, reorder: true, latency: { minMs: 1, meanMs: 5, maxMs: 60 } },
  netNemesis: { partitions: PARTITION_KINDS },
  voterNemesis: { crashes: true, pauses: true, maxDown: 1 },
  disk: { tornWriteRate: 0.5 },
  skewMs: 100,
  driftPpm: 100,
};

function setupReads(sim: Simulation, config: NodeStrongScenarioConfig): ScenarioRun {
  const state: RunState = { running: true };
  const world = bootNodeStrongWorld(sim, config, state);
  const { voters, nodes, app, writesAt, versionIndex } = world;
  const rng = sim.random;

  // --- what members answered from their own state -------------------------------------
  interface Served {
    host: PeerId;
    /** The member process (a restart is a new one). */
    incarnation: NodeStrongHost | undefined;
    key: string;
    index: number;
    version: string | null;
  }
  const served: Served[] = [];
  world.onLocalRead((host, op, index, result) => {
    if (op.type !== 'get' || op.namespace !== NS) return;
    const version = result.ok && result.value.type === 'got' ? result.value.entry.version : null;
    if (!result.ok && result.error.code !== 'key_not_found') return;
    served.push({ host, incarnation: app(host), key: op.key, index, version });
  });

  // --- the clients ----------------------------------------------------------------------
  const ops: SessionOp<string>[] = [];
  const meta = new Map<number, ReadMeta>();
  const unexpected: string[] = [];
  const stats = { writes: 0, reads: 0, refused: 0, serializable: 0, bounded: 0, linearizable: 0 };
  let values = 0;

  const live = (ids: readonly PeerId[]) => ids.filter((n) => sim.host(n).state === 'up' && app(n) !== undefined);

  function note(err: unknown, what: string): string {
    const code = isParleyError(err) ? err.code : `crash: ${String(err)}`;
    if (!EXPECTED.has(code) && unexpected.length < 10) unexpected.push(`${what}: ${code}`);
    return code;
  }

  function write(session: string, node: NodeStrongHost): Promise<void> {
    const key = KEYS[rng.int(KEYS.length)] as string;
    const id = `w${++values}`;
    const invokeMs = sim.nowMs();
    stats.writes++;
    // Its place in the history is its call (a read may see it before its reply).
    const at = ops.length;
    ops.push({ kind: 'write', session, key, id, outcome: 'unknown', invokeMs });
    return node.module
      .strong(NS)
      .set(key, id)
      .then(
        (r) => {
          ops[at] = {
            kind: 'write',
            session,
            key,
            id,
            outcome: 'ok',
            version: r.version,
            invokeMs,
            completeMs: sim.nowMs(),
          };
        },
        (err: unknown) => {
          note(err, `set ${key}`);
          // Anything but a refusal known unsent may have applied: a read that saw it names its version.
          const unsent = isParleyError(err, 'unavailable');
          ops[at] = { kind: 'write', session, key, id, outcome: unsent ? 'fail' : 'unknown', invokeMs };
        },
      );
  }

  function read(session: string, via: PeerId, node: NodeStrongHost): Promise<void> {
    const key = KEYS[rng.int(KEYS.length)] as string;
    const roll = rng.int(100);
    const level: Level = roll < 35 ? 'serializable' : roll < 85 ? 'bounded' : 'linearizable';
    const options: StrongReadOptions = {};
    let maxStalenessMs = 0;
    let maxLagEntries = 0;
    if (level === 'serializable') options.consistency = 'serializable';
    if (level === 'bounded') {
      const which = rng.int(3); // 0: time, 1: entries, 2: both
      if (which !== 1) maxStalenessMs = STALENESS_MS[rng.int(STALENESS_MS.length)] as number;
      if (which !== 0) maxLagEntries = LAG_ENTRIES[rng.int(LAG_ENTRIES.length)] as number;
      if (which !== 1) options.maxStalenessMs = maxStalenessMs;
      if (which !== 0) options.maxLagEntries = maxLagEntries;
    }
    stats.reads++;
    stats[level]++;
    const invokeMs = sim.nowMs();
    const at = ops.length;
    // Reserve the read's place in the history at its call (session order is call order).
    ops.push({ kind: 'read', session, key, saw: null, outcome: 'unknown', invokeMs });
    meta.set(at, { level, via, maxStalenessMs, maxLagEntries });
    return node.module
      .strong(NS)
      .get(key, options)
      .then(
        (e) => {
          ops[at] = {
            kind: 'read',
            session,
            key,
            saw: e === undefined ? null : String(e.value),
            ...(e === undefined ? {} : { version: e.version }),
            outcome: 'ok',
            invokeMs,
            completeMs: sim.nowMs(),
          };
        },
        (err: unknown) => {
          if (note(err, `${level} get ${key}`) === 'staleness_exceeded') stats.refused++;
          ops[at] = { kind: 'read', session, key, saw: null, outcome: 'fail', invokeMs, completeMs: sim.nowMs() };
        },
      );
  }

  function client(session: string): void {
    let busy = false;
    const tick = () => {
      sim.schedule(between(rng, 5, 40), () => {
        if (!state.running) return;
        if (!busy) {
          // Mostly a voter, else the node outside the group; a new choice every call.
          const pool = rng.int(10) < 7 ? live(voters) : live(nodes);
          const via = pool.length > 0 ? (pool[rng.int(pool.length)] as PeerId) : undefined;
          const node = via === undefined ? undefined : app(via);
          if (via !== undefined && node !== undefined) {
            busy = true;
            (rng.int(100) < 30 ? write(session, node) : read(session, via, node)).finally(() => {
              busy = false;
            });
          }
        }
        tick();
      });
    };
    tick();
  }
  for (let i = 0; i < config.clients; i++) client(`c${i}`);

  const faults = startNodeStrongFaults(sim, config, world, state);

  const checked = { staleness: 0, lag: 0, prefix: 0, final: 0 };

  /** The committed writes of each key, by log index. */
  function writesByKey(): Map<string, { index: number; version: string }[]> {
    const out = new Map<string, { index: number; version: string }[]>();
    for (const [index, w] of writesAt) {
      let list = out.get(w.key);
      if (list === undefined) out.set(w.key, (list = []));
      list.push({ index, version: w.version });
    }
    for (const list of out.values()) list.sort((a, b) => a.index - b.index);
    return out;
  }

  function checkPrefix(byKey: Map<string, { index: number; version: string }[]>): void {
    const last = new Map<NodeStrongHost | PeerId, number>();
    for (const s of served) {
      let expected: string | null = null;
      for (const w of byKey.get(s.key) ?? []) if (w.index <= s.index) expected = w.version;
      if (s.version !== expected) {
        throw violation(
          'node-strong-reads/not-a-prefix',
          `${s.host} answered ${s.key} = ${s.version ?? 'absent'} at applied index ${s.index}; the log there holds ${expected ?? 'absent'}`,
        );
      }
      const who = s.incarnation ?? s.host;
      const before = last.get(who) ?? 0;
      if (s.index < before) {
        throw violation('node-strong-reads/went-back', `${s.host} answered at index ${s.index} after ${before}`);
      }
      last.set(who, s.index);
      checked.prefix++;
    }
  }

  function checkLag(): void {
    // Acknowledged writes by acknowledgement time, with their log indexes.
    const acked = ops
      .filter((o): o is Extract<SessionOp<string>, { kind: 'write' }> => o.kind === 'write' && o.outcome === 'ok')
      .map((w) => ({ key: w.key, at: w.completeMs as number, index: versionIndex.get(w.version as string) ?? -1 }))
      .sort((a, b) => a.at - b.at);
    ops.forEach((op, i) => {
      const m = meta.get(i);
      if (op.kind !== 'read' || op.outcome !== 'ok' || m === undefined || m.level !== 'bounded') return;
      const horizon = (op.invokeMs as number) - m.maxStalenessMs;
      const seen = op.version === undefined ? 0 : (versionIndex.get(op.version) ?? -1);
      let highest = 0;
      for (const w of acked) if (w.at < horizon) highest = Math.max(highest, w.index);
      for (const w of acked) {
        if (w.at >= horizon) break;
        if (w.key === op.key && w.index > seen && w.index <= highest - m.maxLagEntries) {
          throw violation(
            'node-strong-reads/lag-exceeded',
            `read ${i} of ${op.key} via ${m.via} (maxStalenessMs ${m.maxStalenessMs}, maxLagEntries ${m.maxLagEntries}) saw index ${seen}, missed index ${w.index} acknowledged ${(op.invokeMs as number) - w.at} ms before, ${highest - w.index} entries behind the log's ${highest}`,
          );
        }
      }
      checked.lag++;
    });
  }

  async function checkFinal(): Promise<void> {
    const leader = highestTermLeader(voters, app);
    if (!leader) throw violation('node-strong-reads/final', 'no leader after healing');
    const indexOf = (v: string | undefined) => (v === undefined ? 0 : (versionIndex.get(v) ?? -1));
    for (const key of KEYS) {
      // What had committed before: a linearizable read (retried: the leader may be changing).
      let want = await settle(sim, leader.module.strong(NS).get(key));
      for (let i = 0; i < 5 && want.error !== undefined; i++)
        want = await settle(sim, leader.module.strong(NS).get(key));
      if (want.error !== undefined) continue;
      // Every member applies through the leader's index (a write still retried may commit later: newer is fine).
      const through = leader.module.replica.appliedThrough;
      await sim.runUntil(() => voters.every((v) => (app(v)?.module.replica.appliedThrough ?? 0) >= through), 5_000);
      for (const id of nodes) {
        const a = app(id);
        if (!a) continue;
        const got = await settle(sim, a.module.strong(NS).get(key, { consistency: 'serializable' }));
        if (got.error !== undefined || indexOf(got.value?.version) < indexOf(want.value?.version)) {
          throw violation(
            'node-strong-reads/serializable-converged',
            `after healing, a serializable read of ${key} via ${id} answered ${got.error ?? got.value?.version ?? 'absent'} (index ${indexOf(got.value?.version)}), below the linearizable ${want.value?.version ?? 'absent'} (index ${indexOf(want.value?.version)})`,
          );
        }
        checked.final++;
      }
    }
  }

  return {
    quiesce: faults.quiesce,
    converged: () => nodeStrongConverged(world),
    async check() {
      if (unexpected.length > 0) throw violation('node-strong-reads/unexpected-error', unexpected.join('; '));
      const compare = (a: string, b: string) => (versionIndex.get(a) ?? -1) - (versionIndex.get(b) ?? -1);
      const position = new Map(ops.map((o, i) => [o, i]));
      const staleness = checkBoundedStaleness(ops, {
        compare,
        boundOf: (r) => {
          const m = meta.get(position.get(r) ?? -1);
          if (m === undefined) return undefined;
          if (m.level === 'linearizable') return 0;
          if (m.level === 'bounded' && m.maxLagEntries === 0) return m.maxStalenessMs;
          return undefined;
        },
      });
      const first = staleness.violations[0];
      if (first) {
        throw violation(
          'node-strong-reads/staleness-exceeded',
          `${staleness.violations.length} reads: ${JSON.stringify({ ...first, via: meta.get(first.op)?.via })}`,
        );
      }
      checked.staleness = ops.filter((o, i) => o.kind === 'read' && o.outcome === 'ok' && meta.has(i)).length;
      checkLag();
      checkPrefix(writesByKey());
      await checkFinal();
    },
    metrics() {
      const local = voters.reduce(
        (acc, id) => {
          const s = app(id)?.module.localReads.stats;
          if (s) {
            acc.pointsAsked += s.pointsAsked;
            acc.pointsAnswered += s.pointsAnswered;
            acc.waited += s.waited;
          }
          return acc;
        },
        { pointsAsked: 0, pointsAnswered: 0, waited: 0 },
      );
      return {
        ...stats,
        ...local,
        servedLocally: served.length,
        checkedStaleness: checked.staleness,
        checkedLag: checked.lag,
        checkedPrefix: checked.prefix,
        checkedFinal: checked.final,
        applied: world.stats.applied,
        partitions: faults.net.stats.partitions,
        crashes: faults.voters.stats.crashes,
        pauses: faults.voters.stats.pauses,
      };
    },
  };
}

/** Runs the simulation until `p` settles (bounded), and says how. */
async function settle<T>(sim: Simulation, p: Promise<T>): Promise<{ value?: T; error?: string }> {
  let out: { value?: T; error?: string } | undefined;
  p.then(
    (value) => {
      out = { value };
    },
    (err: unknown) => {
      out = { error: isParleyError(err) ? err.code : String(err) };
    },
  );
  await sim.runUntil(() => out !== undefined, 15_000);
  return out ?? { error: 'no answer' };
}

export const NODE_STRONG_READS_SCENARIOS: readonly Scenario[] = [
  {
    name: CONFIG.name,
    description: CONFIG.description,
    safetyMs: 10_000,
    livenessBoundMs: 20_000,
    setup: (sim) => setupReads(sim, CONFIG),
  },
];

for (const s of NODE_STRONG_READS_SCENARIOS) registerScenario(s);
