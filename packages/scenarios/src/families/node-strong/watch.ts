/**
 * `watch-strong-*`: every way the node's strong watch follows the group,
 * judged against the sequence of changes the group applied. Three voters
 * and two nodes outside the group (the real strong module of @parley/node,
 * ./node-strong-host.ts) take sets, deletes and deleteNamespace calls (a
 * deleteNamespace puts up to 40 changes at one revision) from clients
 * through any node, over a lossy network (so forwarded writes are retried
 * and some commands are appended twice), while watchers start on random
 * nodes — on a voter (its own applied log), outside the group (polling pages
 * of 7 changes, smaller than one deleteNamespace), from now or from a
 * revision up to 80 back, with and without a prefix — and some stop and
 * resume from the revision before the last one they saw.
 *
 * Faults: a voter isolated long enough to be caught up by InstallSnapshot
 * (a snapshot every 12 entries, 3 kept), voter crashes with restart from
 * disk, a non-member cut off. `watch-strong-compaction` keeps only 25
 * changes per member, so resume points fall out of the history.
 *
 * The property, checked after healing: what each watcher saw is exactly the
 * applied changes matching its filter after its start point (for a watch
 * "from now" on a node outside the group, whose start that node picks: a
 * contiguous run of them), or a prefix of it when the watch ended with
 * `compacted`, its node crashed or its caller stopped it; every watch still
 * running has caught up to the end. The applied sequence is built from what
 * the members applied (first result per log index), a command answered from
 * the session table (a retry appended twice) changing nothing.
 */
import type { ApplyOutput, Command } from '@parley/coord';
import { isParleyError, type PeerId } from '@parley/interface';
import type { StrongChange } from '@parley/node';
import { between, chance, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { highestTermLeader, raftGroupConverged } from '../raft/group.js';
import { NodeStrongHost } from './host.js';

const NS = 'w';
const OTHER_NS = 'o';
const KEYS = [...Array.from({ length: 20 }, (_, i) => `a${i}`), ...Array.from({ length: 20 }, (_, i) => `b${i}`)];
/** A client gives up on a call it has heard nothing of after this long (its node crashed). */
const GIVE_UP_MS = 8_000;
const WRITERS = 3;

export interface WatchScenarioConfig {
  name: string;
  description: string;
  maxWatchHistory: number;
  safetyMs?: number;
}

/** One applied change, as the group's applied commands say it happened. */
interface Change {
  namespace: string;
  key: string;
  type: string;
  revision: number;
  version: string | undefined;
}

interface WatchRecord {
  id: number;
  node: PeerId;
  generation: number;
  member: boolean;
  prefix: string | undefined;
  /** Revision after which it must see everything; undefined for a watch from now outside the group. */
  start: number | undefined;
  seen: Change[];
  ended: string | undefined;
  stopped: boolean;
}

function describeChange(c: Change | undefined): string {
  return c === undefined
    ? 'nothing'
    : `${c.type} ${c.namespace}/${c.key}@${c.revision}${c.version ? ` v${c.version}` : ''}`;
}

function sameChange(a: Change, b: Change): boolean {
  return (
    a.revision === b.revision &&
    a.type === b.type &&
    a.key === b.key &&
    a.namespace === b.namespace &&
    a.version === b.version
  );
}

export function watchStrongScenario(config: WatchScenarioConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? 10_000,
    livenessBoundMs: 20_000,
    setup: (sim) => setupWatchStrong(sim, config),
  };
}

function setupWatchStrong(sim: Simulation, config: WatchScenarioConfig): ScenarioRun {
  const rng = sim.random;
  const voters: PeerId[] = ['n1', 'n2', 'n3'];
  const outsiders: PeerId[] = ['x1', 'x2'];
  const nodes = [...voters, ...outsiders];
  let running = true;

  // --- the applied sequence ------------------------------------------------------------
  const applied: Change[] = [];
  const state = new Map<string, Map<string, string>>();
  const answered = new Set<string>();
  let appliedThrough = 0;
  let snapshotsInstalled = 0;
  let largestRevision = 0;
  const onApply = (_host: PeerId, index: number, _term: number, command: Command | undefined, out: ApplyOutput) => {
    if (index <= appliedThrough) return; // another member applied it first (members apply in log order)
    appliedThrough = index;
    if (!command) return;
    if (command.clientId !== undefined) {
      const id = `${command.clientId}/${command.seq}`;
      if (answered.has(id)) return; // a retry appended again: answered from the session table, nothing changes
      answered.add(id);
    }
    if (!out.result.ok) return;
    const v = out.result.value;
    const push = (namespace: string, key: string, type: string, version?: string) =>
      applied.push({ namespace, key, type, revision: index, version });
    const keys = (ns: string) => {
      let m = state.get(ns);
      if (!m) state.set(ns, (m = new Map()));
      return m;
    };
    if (v.type === 'entry') {
      keys(v.entry.namespace).set(v.entry.key, v.entry.version);
      push(v.entry.namespace, v.entry.key, 'set', v.entry.version);
    } else if (v.type === 'deleted') {
      keys(v.namespace).delete(v.key);
      push(v.namespace, v.key, 'delete');
    } else if (v.type === 'namespace_deleted' && command.op.type === 'delete_namespace') {
      const m = keys(command.op.namespace);
      // The smallest keys after `after`, at most `maxKeys` of them (a bounded command of a big delete).
      const after = command.op.after;
      const gone = [...m.keys()]
        .filter((k) => after === undefined || k > after)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        .slice(0, command.op.maxKeys ?? Number.POSITIVE_INFINITY);
      for (const key of gone) {
        push(command.op.namespace, key, 'delete');
        m.delete(key);
      }
      largestRevision = Math.max(largestRevision, gone.length);
    }
  };

  for (const id of nodes) {
    sim.addHost(id, (ctx) =>
      NodeStrongHost.boot(ctx, {
        strong: {
          voters,
          tickMs: 100,
          electionTimeoutTicks: 10,
          versionKey: 'sim-watch',
          callTimeoutMs: 3_000,
          attemptTimeoutMs: 1_000,
          snapshotEveryEntries: 12,
          keepEntries: 3,
          maxSnapshotChunkBytes: 4096,
          maxWatchHistory: config.maxWatchHistory,
          watchPageChanges: 7,
        },
        onApply,
        onRestore: () => {
          if (running) snapshotsInstalled++;
        },
      }),
    );
  }
  sim.network.configure({ lossRate: 0.01 });

  const app = (id: PeerId): NodeStrongHost | undefined => {
    const h = sim.host<NodeStrongHost>(id);
    return h.state === 'up' ? h.app : undefined;
  };
  const liveNode = (): PeerId | undefined => {
    const live = nodes.filter((n) => app(n) !== undefined);
    return live.length === 0 ? undefined : live[rng.int(live.length)];
  };

  sim.invariant('watch-strong', () => {
    for (const id of nodes) {
      const a = app(id);
      if (a?.fatal !== undefined) throw violation('watch-strong/driver-healthy', `${id}: ${String(a.fatal)}`);
    }
  });

  // --- writers ---------------------------------------------------------------------------
  const stats = { calls: 0, deleteNamespaces: 0, faults: 0 };
  const write = (w: number) => {
    if (!running) return;
    const id = liveNode();
    const a = id === undefined ? undefined : app(id);
    let done = false;
    const next = () => {
      if (done) return;
      done = true;
      sim.schedule(between(rng, 5, 40), () => write(w));
    };
    if (!a) {
      next();
      return;
    }
    stats.calls++;
    const key = KEYS[rng.int(KEYS.length)] as string;
    const roll = rng.int(100);
    let call: Promise<unknown>;
    if (roll < 4) {
      stats.deleteNamespaces++;
      call = a.module.strong(NS).deleteNamespace({ confirm: true });
    } else if (roll < 20) call = a.module.strong(NS).delete(key);
    else if (roll < 28) call = a.module.strong(OTHER_NS).set(key, roll);
    else call = a.module.strong(NS).set(key, rng.int(1000));
    call.then(next, next);
    sim.schedule(GIVE_UP_MS, next);
  };
  for (let w = 0; w < WRITERS; w++) sim.schedule(between(rng, 0, 50), () => write(w));

  // --- watchers --------------------------------------------------------------------------
  const records: WatchRecord[] = [];
  const refused = { compacted: 0, other: [] as string[] };
  const late: string[] = [];
  const startWatch = (resumeFrom?: number) => {
    if (!running) return;
    const id = liveNode();
    const a = id === undefined ? undefined : app(id);
    if (id === undefined || !a) return;
    const member = voters.includes(id);
    const prefix = chance(rng, 0.3) ? 'a' : undefined;
    const from = resumeFrom ?? (chance(rng, 0.5) ? Math.max(0, appliedThrough - between(rng, 0, 80)) : undefined);
    const rec: WatchRecord = {
      id: records.length,
      node: id,
      generation: sim.host(id).generation,
      member,
      prefix,
      start: from ?? (member ? a.module.replica.appliedThrough : undefined),
      seen: [],
      ended: undefined,
      stopped: false,
    };
    let stop: () => void;
    try {
      stop = a.module.strong(NS).watch(
        {
          ...(prefix !== undefined ? { prefix } : {}),
          ...(from !== undefined ? { fromRevision: from } : {}),
          onError: (err) => {
            rec.ended = err.code;
          },
        },
        (c: StrongChange) => {
          if (rec.ended !== undefined || rec.stopped) late.push(`watch ${rec.id} on ${id} delivered after it ended`);
          rec.seen.push({
            namespace: c.namespace,
            key: c.key,
            type: c.type,
            revision: c.revision,
            version: c.entry?.version,
          });
        },
      );
    } catch (err) {
      if (isParleyError(err, 'compacted')) refused.compacted++;
      else refused.other.push(`${id}: ${String(err)}`);
      return;
    }
    records.push(rec);
    if (chance(rng, 0.3)) {
      sim.schedule(between(rng, 200, 2_000), () => {
        if (rec.ended !== undefined || sim.host(id).generation !== rec.generation) return;
        rec.stopped = true;
        stop();
        const last = rec.seen[rec.seen.length - 1];
        const resume = last ? last.revision - 1 : rec.start;
        if (resume !== undefined) startWatch(resume);
      });
    }
  };
  const watchLoop = () => {
    if (!running) return;
    startWatch();
    sim.schedule(between(rng, 150, 450), watchLoop);
  };
  sim.schedule(300, watchLoop);

  // --- faults ----------------------------------------------------------------------------
  const faultLoop = () => {
    if (!running) return;
    const roll = rng.int(4);
    const heal = between(rng, 600, 2_000);
    stats.faults++;
    if (roll === 0) {
      const v = voters[rng.int(voters.length)] as PeerId;
      sim.network.isolate(v);
      sim.schedule(heal, () => sim.network.heal());
    } else if (roll === 1) {
      const v = voters[rng.int(voters.length)] as PeerId;
      sim.host(v).crash();
      sim.schedule(heal, () => sim.host(v).restart());
    } else if (roll === 2) {
      const x = outsiders[rng.int(outsiders.length)] as PeerId;
      sim.network.isolate(x);
      sim.schedule(heal, () => sim.network.heal());
    }
    sim.schedule(heal + between(rng, 100, 600), faultLoop);
  };
  sim.schedule(1_000, faultLoop);

  // --- the property ----------------------------------------------------------------------
  const live = (r: WatchRecord) =>
    r.ended === undefined &&
    !r.stopped &&
    sim.host(r.node).state === 'up' &&
    sim.host(r.node).generation === r.generation;
  const expectedOf = (r: WatchRecord): Change[] | undefined => {
    const matching = applied.filter(
      (c) => c.namespace === NS && (r.prefix === undefined || c.key.startsWith(r.prefix)),
    );
    if (r.start !== undefined) return matching.filter((c) => c.revision > r.start!);
    // From now, outside the group: the node picked the start; what it saw must be a contiguous run from there.
    const first = r.seen[0];
    if (first === undefined) return undefined;
    const at = matching.findIndex((c) => sameChange(c, first));
    return at < 0 ? [] : matching.slice(at);
  };

  const due = new Map<WatchRecord, { applied: number; seen: number; done: boolean }>();
  return {
    quiesce() {
      running = false;
    },
    converged() {
      const l = highestTermLeader(voters, app);
      if (!l || !raftGroupConverged(l, voters, app)) return false;
      // Asked after every event: recount a watcher's due changes only when it or the applied sequence moved.
      for (const r of records) {
        if (!live(r)) continue;
        const memo = due.get(r);
        if (memo && memo.applied === applied.length && memo.seen === r.seen.length) {
          if (!memo.done) return false;
          continue;
        }
        const expected = expectedOf(r);
        const done = expected === undefined || r.seen.length >= expected.length;
        due.set(r, { applied: applied.length, seen: r.seen.length, done });
        if (!done) return false;
      }
      return true;
    },
    livenessDetail() {
      const behind = records
        .filter(live)
        .map((r) => ({ r, expected: expectedOf(r) }))
        .filter(({ r, expected }) => expected !== undefined && r.seen.length < expected.length)
        .map(
          ({ r, expected }) =>
            `watch ${r.id} on ${r.node} (${r.member ? 'member' : 'outside'}, after ${r.start ?? 'now'}) saw ${r.seen.length} of ${expected?.length} changes, next missing ${describeChange(expected?.[r.seen.length])}, last seen ${describeChange(r.seen[r.seen.length - 1])}`,
        );
      return behind.length > 0 ? `${behind.length} watches behind: ${behind.slice(0, 2).join('; ')}` : undefined;
    },
    check() {
      if (refused.other.length > 0) throw violation('watch-strong/refused', refused.other.slice(0, 3).join('; '));
      if (late.length > 0) throw violation('watch-strong/after-end', late.slice(0, 3).join('; '));
      for (const r of records) {
        if (r.ended !== undefined && r.ended !== 'compacted') {
          throw violation('watch-strong/ended', `watch ${r.id} on ${r.node} ended with ${r.ended}`);
        }
        const expected = expectedOf(r) ?? [];
        const where = `watch ${r.id} on ${r.node} (${r.member ? 'member' : 'outside'}, after ${r.start ?? 'now'}, prefix ${r.prefix ?? 'none'})`;
        for (let i = 0; i < r.seen.length; i++) {
          const want = expected[i];
          const got = r.seen[i] as Change;
          if (want === undefined || !sameChange(got, want)) {
            throw violation(
              'watch-strong/exact',
              `${where}: change ${i} is ${describeChange(got)}, the applied sequence has ${describeChange(want)}`,
            );
          }
        }
        if (live(r) && r.seen.length !== expected.length) {
          throw violation(
            'watch-strong/complete',
            `${where} saw ${r.seen.length} of ${expected.length} changes; next missing: ${describeChange(expected[r.seen.length])}`,
          );
        }
      }
    },
    metrics() {
      const count = (f: (r: WatchRecord) => boolean) => records.filter(f).length;
      return {
        appliedChanges: applied.length,
        largestRevision,
        calls: stats.calls,
        deleteNamespaces: stats.deleteNamespaces,
        faults: stats.faults,
        snapshotsInstalled,
        watchers: records.length,
        watchersOutside: count((r) => !r.member),
        watchersCompleted: count((r) => live(r) && r.seen.length > 0),
        watchersCompacted: count((r) => r.ended === 'compacted'),
        watchersStopped: count((r) => r.stopped),
        refusedCompacted: refused.compacted,
        changesSeen: records.reduce((n, r) => n + r.seen.length, 0),
      };
    },
  };
}

export const WATCH_STRONG_SCENARIOS: Scenario[] = [
  watchStrongScenario({
    name: 'watch-strong',
    description:
      'watches on voters and outside the group across snapshots, crashes, cut-off pollers, stops and resumes, 40-change revisions in pages of 7',
    maxWatchHistory: 5_000,
  }),
  watchStrongScenario({
    name: 'watch-strong-compaction',
    description: 'as watch-strong with 25 changes of history per member: resume points fall out of it (compacted)',
    maxWatchHistory: 25,
  }),
];

for (const s of WATCH_STRONG_SCENARIOS) registerScenario(s);
