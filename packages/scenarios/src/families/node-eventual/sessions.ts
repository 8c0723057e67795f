/**
 * `node-eventual-5-sessions`: sessions on an eventual namespace (docs/sessions.md).
 * 3–5 real nodes on the simulated world under partitions, crashes (restart
 * from disk), loss, reordering and clock skew. A few sessions hop between
 * nodes at random — each call on a node picked anew, the session carried as
 * its token (`Session.from(token)`, `s.token`) — setting and reading several
 * keys of one namespace; each written value is unique. Observers outside the
 * sessions read every key of one node in one synchronous turn (`peek`).
 *
 * Checked:
 * - the sessions' history with `checkSessionGuarantees` under `causal`
 *   (which implies read-your-writes, monotonic reads, monotonic writes and
 *   writes-follow-reads), the version order being the LWW stamp order;
 * - every observer snapshot is a causal cut: when it shows a session write
 *   w, each key holds a version at least that of every write w causally
 *   follows (what w's session had written or read, transitively, before it);
 * - after the faults stop, all nodes converge (equal digests).
 */

import { checkSessionGuarantees, type SessionOp } from '@parley/check';
import { compareHlc, type Hlc, type NamespaceReplica } from '@parley/crdt';
import { isParleyError, type PeerId } from '@parley/interface';
import { createNode, type EventualNamespace, type NodeLogger, Session } from '@parley/node';
import { internals, type ParleyNodeInternals } from '@parley/node/testing';
import { between, type HostContext, Nemesis, PARTITION_KINDS, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { digestsAgree } from './digests.js';

const NAMESPACE = 'sess';
const KEYS = ['x0', 'x1', 'x2', 'x3'];
/** A call nobody answers (its node crashed) is given up after this long: a write's outcome is then unknown. */
const GIVE_UP_MS = 6_000;
const CALL_TIMEOUT_MS = 1_500;
const silent: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** The stamp a version string names (`wall36.logical36.node`). */
function stampOfVersion(version: string): Hlc {
  const a = version.indexOf('.');
  const b = version.indexOf('.', a + 1);
  return {
    wallMs: Number.parseInt(version.slice(0, a), 36),
    logical: Number.parseInt(version.slice(a + 1, b), 36),
    node: version.slice(b + 1),
  };
}

/** Per key, the greatest version a write causally follows. */
type Past = Map<string, Hlc>;

function join(into: Past, from: ReadonlyMap<string, Hlc>): void {
  for (const [k, v] of from) {
    const have = into.get(k);
    if (have === undefined || compareHlc(v, have) > 0) into.set(k, v);
  }
}

export function nodeEventualSessionsScenario(): Scenario {
  return {
    name: 'node-eventual-5-sessions',
    description:
      'sessions hop between 3–5 nodes (as tokens) under partitions, crashes, loss and clock skew, writing and reading four keys; causal session guarantees and causal observer snapshots.',
    safetyMs: 8_000,
    livenessBoundMs: 20_000,
    setup,
  };
}

function setup(sim: Simulation): ScenarioRun {
  const rng = sim.random;
  const count = 3 + rng.int(3);
  const ids: PeerId[] = Array.from({ length: count }, (_, i) => `n${i}`);
  const ops: SessionOp<Hlc>[] = [];
  /** Each written value's causal past, as its session saw it when it wrote. */
  const pastOf = new Map<string, Past>();
  const versionOf = new Map<string, Hlc>();
  const stats = { writes: 0, reads: 0, behind: 0, unknown: 0, snapshots: 0, snapshotChecks: 0 };
  let running = true;
  let values = 0;

  for (const id of ids) {
    const clock = { offsetMs: between(rng, -2_000, 2_000), driftPpm: between(rng, -200, 200) };
    sim.addHost(
      id,
      async (ctx: HostContext) => {
        const node = internals(
          await createNode({
            transport: ctx.transport,
            storage: { kv: ctx.kv('node'), raftLog: ctx.raftLog('raft') },
            clock: ctx.clock,
            scheduler: ctx.scheduler,
            random: ctx.random,
            logger: silent,
            eventual: { antiEntropyMs: 400, requestTimeoutMs: 1_000, compactLogBytes: 4_096 },
          }),
        );
        await (node.eventual(NAMESPACE) as unknown as { ready: Promise<void> }).ready;
        return node;
      },
      { clock, disk: { tornWriteRate: 0.5 } },
    );
  }

  const live = (): ParleyNodeInternals[] =>
    ids
      .filter((id) => sim.host(id).state === 'up')
      .map((id) => sim.host<ParleyNodeInternals>(id).app)
      .filter((n): n is ParleyNodeInternals => n !== undefined);
  const replicaOf = (n: ParleyNodeInternals): NamespaceReplica => n.eventualModule.namespace(NAMESPACE).replica;

  /** Runs `call`, or gives up after GIVE_UP_MS (a crashed node never answers). */
  function bounded<T>(call: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; err: unknown }> {
    return new Promise((resolve) => {
      let open = true;
      const cancel = sim.schedule(GIVE_UP_MS, () => {
        if (open) {
          open = false;
          resolve({ ok: false, err: 'gave-up' });
        }
      });
      call().then(
        (value) => {
          if (!open) return;
          open = false;
          cancel();
          resolve({ ok: true, value });
        },
        (err: unknown) => {
          if (!open) return;
          open = false;
          cancel();
          resolve({ ok: false, err });
        },
      );
    });
  }

  function session(name: string): void {
    let token = '';
    const past: Past = new Map();
    const step = async (ns: EventualNamespace): Promise<void> => {
      const key = KEYS[rng.int(KEYS.length)] as string;
      const s = Session.from(token);
      const invokeMs = sim.nowMs();
      if (rng.int(100) < 40) {
        const id = `${name}:${values++}`;
        stats.writes++;
        pastOf.set(id, new Map(past));
        const at = ops.length;
        ops.push({ kind: 'write', session: name, key, id, outcome: 'unknown', invokeMs });
        const r = await bounded(() => ns.set(key, id, { session: s, timeoutMs: CALL_TIMEOUT_MS }));
        if (r.ok) {
          const version = stampOfVersion(r.value.version);
          versionOf.set(id, version);
          ops[at] = {
            kind: 'write',
            session: name,
            key,
            id,
            outcome: 'ok',
            version,
            invokeMs,
            completeMs: sim.nowMs(),
          };
          join(past, new Map([[key, version]]));
          token = s.token;
        } else if (isParleyError(r.err, 'session_behind') || isParleyError(r.err, 'invalid_argument')) {
          stats.behind++;
          ops[at] = { kind: 'write', session: name, key, id, outcome: 'fail', invokeMs };
        } else stats.unknown++;
        return;
      }
      stats.reads++;
      const at = ops.length;
      ops.push({ kind: 'read', session: name, key, saw: null, outcome: 'fail', invokeMs });
      const r = await bounded(() => ns.get(key, { session: s, timeoutMs: CALL_TIMEOUT_MS }));
      if (!r.ok) {
        if (isParleyError(r.err, 'session_behind')) stats.behind++;
        return;
      }
      const saw = (r.value?.value as string | undefined) ?? null;
      const version = r.value ? stampOfVersion(r.value.version) : undefined;
      if (saw !== null && version !== undefined) {
        if (!pastOf.has(saw)) throw violation('node-eventual-sessions/validity', `${name} read ${saw} under ${key}`);
        join(past, pastOf.get(saw) as Past);
        join(past, new Map([[key, version]]));
        if (!versionOf.has(saw)) versionOf.set(saw, version);
      }
      ops[at] = {
        kind: 'read',
        session: name,
        key,
        saw,
        ...(version ? { version } : {}),
        outcome: 'ok',
        invokeMs,
        completeMs: sim.nowMs(),
      };
      token = s.token;
    };
    const loop = () => {
      if (!running) return;
      sim.schedule(between(rng, 20, 200), () => {
        const nodes = live();
        if (!running) return;
        if (nodes.length === 0) {
          loop();
          return;
        }
        const node = nodes[rng.int(nodes.length)] as ParleyNodeInternals;
        step(node.eventual(NAMESPACE)).then(loop, (err: unknown) => {
          sim.fail('correctness', err instanceof Error ? `${err.name}: ${err.message}` : String(err));
        });
      });
    };
    loop();
  }

  /** An observer's snapshot of one node: every key in one turn; it must be a causal cut. */
  function observe(): void {
    if (!running) return;
    sim.schedule(between(rng, 30, 150), () => {
      const nodes = live();
      if (nodes.length > 0) {
        const node = nodes[rng.int(nodes.length)] as ParleyNodeInternals;
        const ns = node.eventual(NAMESPACE);
        const view = new Map<string, { value: string; version: Hlc }>();
        try {
          for (const k of KEYS) {
            const e = ns.peek(k);
            if (e) view.set(k, { value: e.value as string, version: stampOfVersion(e.version) });
          }
        } catch {
          view.clear(); // still opening
        }
        stats.snapshots++;
        for (const [k, { value }] of view) {
          const past = pastOf.get(value);
          if (past === undefined) throw violation('node-eventual-sessions/validity', `${node.peerId} holds ${value}`);
          for (const [x, need] of past) {
            stats.snapshotChecks++;
            const got = view.get(x);
            if (got === undefined || compareHlc(got.version, need) < 0) {
              throw violation(
                'node-eventual-sessions/causal-cut',
                `${node.peerId} shows ${k}=${value} but ${x} at ${got ? JSON.stringify(got.version) : 'absent'}, older than ${JSON.stringify(need)} it follows`,
              );
            }
          }
        }
      }
      observe();
    });
  }

  const sessions = 2 + rng.int(3);
  for (let i = 0; i < sessions; i++) session(`s${i}`);
  observe();
  const nemesis = new Nemesis(sim, ids, {
    partitions: PARTITION_KINDS,
    crashes: true,
    clockJumps: true,
    maxClockJumpMs: 2_000,
  }).start();
  sim.network.configure({ lossRate: 0.05, duplicateRate: 0.02, reorder: true });

  return {
    quiesce() {
      running = false;
      nemesis.stop();
    },
    converged() {
      const nodes = live();
      if (nodes.length !== ids.length) return false;
      return digestsAgree(nodes.map(replicaOf));
    },
    check() {
      const result = checkSessionGuarantees(ops, { guarantees: new Set(['causal']), compare: compareHlc });
      if (!result.ok) {
        throw violation(
          'node-eventual-sessions/causal',
          `${JSON.stringify(result.violations.slice(0, 3))} (op: ${JSON.stringify(ops[(result.violations[0] as { op?: number }).op ?? 0])})`,
        );
      }
    },
    metrics() {
      let pendingDropped = 0;
      for (const n of live()) pendingDropped += replicaOf(n).stats().pendingDropped;
      return {
        nodes: count,
        sessions,
        ...stats,
        partitions: nemesis.stats.partitions,
        crashes: nemesis.stats.crashes,
        pendingDropped,
      };
    },
  };
}

registerScenario(nodeEventualSessionsScenario());
