/**
 * `SimCluster`: N real Parley nodes (`createNode` of @parley/node) on the
 * simulated world — the simulator's transport, disks, clocks, scheduler and
 * random streams — and the fault vocabulary the user drives it with.
 */
import type { NamespaceReplica } from '@parley/crdt';
import { InvalidArgumentError, type PeerId, type Random } from '@parley/interface';
import { createNode, type NodeLogger, type ParleyNode } from '@parley/node';
import { internals, type ParleyNodeInternals } from '@parley/node/testing';
import {
  type DiskFaults,
  type LatencyModel,
  Nemesis,
  type NemesisOptions,
  PARTITION_KINDS,
  type Simulation,
} from '@parley/sim';
import { expectBoundedStaleness, expectConverged, expectFencing, expectLinearizable } from './checks.js';
import { type Duration, toMs } from './duration.js';
import { Recorder } from './recorder.js';
import { expectCausal, expectSessionGuarantees } from './session-checks.js';

const silent: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };
export const MAX_NODES = 32;

export interface SimulateOptions {
  /** Nodes in the cluster (1..32). Default 3. */
  nodes?: number;
  /** Raft voters among them: nodes 0..voters-1. Default: min(nodes, 3). The others forward strong calls. */
  voters?: number;
  /** Seed; default PARLEY_SEED, else a fresh one (printed when the test fails). */
  seed?: number;
  /** Disk faults of every node (e.g. `{ tornWriteRate: 0.5 }`: a crash tears the unsynced tail). */
  disk?: Partial<DiskFaults>;
  /** Raft tick (ms). Default 100; elections time out after 10 ticks. */
  tickMs?: number;
  /** Eventual anti-entropy period (ms). Default 1,000. */
  antiEntropyMs?: number;
  /**
   * Simulated time the harness may advance on its own while `fn` awaits something other than
   * `cluster.run` (e.g. `await node.strong('x').get(k)`) before it gives up. Default '10m'.
   */
  awaitLimit?: Duration;
  /** Called with every node once it booted, and again after each restart (the agent that lives in that process). */
  onBoot?: (node: ParleyNode, index: number) => void;
  /**
   * Environment variables the test reads to choose what it runs (e.g. `['PARLEY_AGENT']`): the
   * replay line of a failure sets those that are set, so copying it replays the same run.
   */
  replayEnv?: readonly string[];
}

export type NemesisFaults = Pick<
  NemesisOptions,
  'partitions' | 'crashes' | 'pauses' | 'clogs' | 'clockJumps' | 'maxClockJumpMs' | 'gapMs' | 'durationMs' | 'maxDown'
>;

export class SimCluster {
  /** The seeded random stream for the user's own choices. */
  readonly random: Random;
  /** Peer ids of the nodes, by index. */
  readonly ids: readonly PeerId[];
  readonly voters: number;
  readonly recorder: Recorder;
  private readonly wrapped: Array<{ real: ParleyNodeInternals; user: ParleyNode } | undefined>;
  private readonly nemeses = new Set<Nemesis>();

  /** @internal */
  constructor(
    readonly sim: Simulation,
    options: SimulateOptions,
  ) {
    const n = options.nodes ?? 3;
    if (!Number.isInteger(n) || n < 1 || n > MAX_NODES) throw new InvalidArgumentError(`nodes must be 1..${MAX_NODES}`);
    const v = options.voters ?? Math.min(n, 3);
    if (!Number.isInteger(v) || v < 1 || v > n) throw new InvalidArgumentError('voters must be 1..nodes');
    this.voters = v;
    this.ids = Array.from({ length: n }, (_, i) => `n${i}`);
    this.wrapped = this.ids.map(() => undefined);
    this.random = sim.random.fork();
    this.recorder = new Recorder(() => sim.nowMs());
    const voterIds = this.ids.slice(0, v);
    for (const [i, id] of this.ids.entries()) {
      sim.addHost(
        id,
        async (ctx) => {
          const real = internals(
            await createNode({
              transport: ctx.transport,
              storage: { kv: ctx.kv('node'), raftLog: ctx.raftLog('raft') },
              clock: ctx.clock,
              scheduler: ctx.scheduler,
              random: ctx.random,
              logger: silent,
              raft: {
                voters: voterIds,
                tickMs: options.tickMs ?? 100,
                electionTimeoutTicks: 10,
                versionKey: 'parley-sim',
                callTimeoutMs: 3_000,
                attemptTimeoutMs: 1_000,
              },
              eventual: { antiEntropyMs: options.antiEntropyMs ?? 1_000, requestTimeoutMs: 1_000 },
            }),
          );
          const user = this.recorder.wrapNode(real, i, () => sim.host(id).app === real);
          this.wrapped[i] = { real, user };
          options.onBoot?.(user, i);
          return real;
        },
        { disk: options.disk },
      );
    }
  }

  /** The nodes by index, as the user's code sees them (their current life; calls are recorded). */
  get nodes(): readonly ParleyNode[] {
    return this.wrapped.map((w, i) => {
      if (w === undefined) throw new InvalidArgumentError(`node ${i} has not booted yet`);
      return w.user;
    });
  }

  node(i: number): ParleyNode {
    return this.nodes[this.index(i)] as ParleyNode;
  }

  /** Simulated milliseconds since the start. */
  now(): number {
    return this.sim.nowMs();
  }

  /** Advances simulated time by `d` ('30s', '400ms', or ms), running every node, timer and callback due. */
  async run(d: Duration): Promise<void> {
    const ms = toMs(d);
    await this.drive(() => this.sim.runFor(ms));
    this.throwIfFailed();
  }

  /** Runs until `done()` holds (checked after every event) or `max` passed; returns whether it held. */
  async runUntil(done: () => boolean, max: Duration): Promise<boolean> {
    const ms = toMs(max);
    const ok = await this.drive(() => this.sim.runUntil(done, ms));
    this.throwIfFailed();
    return ok;
  }

  // --- who advances time: `run`, or (while the user awaits anything else) simulate's driver ----
  private driving = 0;
  private idleWaiters: Array<() => void> = [];
  /** @internal The driver's step in flight; `run` waits for it before it steps itself. */
  stepping: Promise<unknown> = Promise.resolve();

  /** @internal */
  get isDriving(): boolean {
    return this.driving > 0;
  }

  /** @internal Resolves when no `run` is in progress. */
  idle(): Promise<void> {
    if (this.driving === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async drive<T>(fn: () => Promise<T>): Promise<T> {
    this.driving++;
    try {
      await this.stepping;
      return await fn();
    } finally {
      this.driving--;
      if (this.driving === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  // --- network --------------------------------------------------------------------------
  /** Splits the nodes into groups that cannot talk across; nodes not named form one more group. */
  partition(...groups: number[][]): void {
    const named = new Set(groups.flat().map((i) => this.index(i)));
    const rest = this.ids.filter((_, i) => !named.has(i));
    const ids = groups.map((g) => g.map((i) => this.id(i)));
    if (rest.length > 0) ids.push(rest);
    this.sim.network.partition(...ids);
  }

  /** `from` cannot reach `to`; `to` still reaches `from`. */
  partitionOneWay(from: number[], to: number[]): void {
    this.sim.network.partitionOneWay(
      from.map((i) => this.id(i)),
      to.map((i) => this.id(i)),
    );
  }

  /** Cuts node `i` off from every other node. */
  isolate(i: number): void {
    this.sim.network.isolate(this.id(i));
  }

  /** `a` and `c` cannot talk to each other; both talk to `bridge`. */
  bridge(a: number, bridge: number, c: number): void {
    this.sim.network.bridge(this.id(a), this.id(bridge), this.id(c));
  }

  /** Removes every partition and releases every held link. */
  heal(): void {
    this.sim.network.heal();
  }

  /** Messages between `a` and `b` are buffered (both ways) until `release`. */
  hold(a: number, b: number): void {
    this.sim.network.hold(this.id(a), this.id(b));
  }

  release(a: number, b: number): void {
    this.sim.network.release(this.id(a), this.id(b));
  }

  /** Drops each message with probability `rate` (0..1). */
  loss(rate: number): void {
    this.sim.network.configure({ lossRate: this.rate(rate) });
  }

  /** Delivers each message twice with probability `rate`. */
  duplicate(rate: number): void {
    this.sim.network.configure({ duplicateRate: this.rate(rate) });
  }

  /** Message latency: a duration (mean) or a full model; `reorder` lets messages of one link overtake. */
  delay(latency: Duration | LatencyModel, options: { reorder?: boolean } = {}): void {
    const model =
      typeof latency === 'object'
        ? latency
        : (() => {
            const mean = Math.max(1, toMs(latency));
            return { minMs: Math.max(1, Math.floor(mean / 2)), meanMs: mean, maxMs: mean * 4 };
          })();
    this.sim.network.configure({
      latency: model,
      ...(options.reorder !== undefined ? { reorder: options.reorder } : {}),
    });
  }

  /** Turns every fault off: calm network, no partitions or holds, paused nodes resumed, crashed ones restarted; stops nemeses. */
  calm(): void {
    for (const n of this.nemeses) n.stop();
    this.nemeses.clear();
    this.sim.calm();
  }

  // --- processes and clocks -------------------------------------------------------------
  /** Kills node `i`: timers and in-flight messages are lost, and so are disk writes not yet synced. */
  crash(i: number): void {
    this.sim.host(this.id(i)).crash();
  }

  /** Boots node `i` again from what its disk kept (a crashed node; a live one is crashed first). */
  restart(i: number): void {
    this.sim.host(this.id(i)).restart();
  }

  /** Freezes node `i` (a GC pause, a stopped VM): its timers and deliveries wait until `resume`. */
  pause(i: number): void {
    this.sim.host(this.id(i)).pause();
  }

  resume(i: number): void {
    this.sim.host(this.id(i)).resume();
  }

  /** Sets node `i`'s clock offset from true time ('+400ms', '-2s'). */
  skew(i: number, offset: Duration): void {
    const host = this.sim.host(this.id(i));
    host.jumpClock(toMs(offset, true) - host.clock.skewMs());
  }

  /** Steps node `i`'s clock by `delta` (an NTP step; negative goes backwards). */
  jump(i: number, delta: Duration): void {
    this.sim.host(this.id(i)).jumpClock(toMs(delta, true));
  }

  /** Is node `i` up, paused or down. */
  state(i: number): 'up' | 'paused' | 'down' {
    return this.sim.host(this.id(i)).state;
  }

  /**
   * Random faults drawn from the seed until the returned stop function (or `calm()`) is called.
   * Default: partitions of every kind, crashes (at most a minority of voters down), pauses, clogs and clock jumps.
   */
  nemesis(faults: NemesisFaults = {}): () => void {
    const options: NemesisOptions = {
      partitions: PARTITION_KINDS,
      crashes: true,
      pauses: true,
      clogs: true,
      clockJumps: true,
      maxDown: Math.max(1, Math.floor((this.voters - 1) / 2)),
      ...faults,
    };
    const n = new Nemesis(this.sim, this.ids, options).start();
    this.nemeses.add(n);
    return () => {
      n.stop();
      this.nemeses.delete(n);
    };
  }

  // --- checks ---------------------------------------------------------------------------
  /** Strong calls (entries, claims, leases, locks, fenced writes) are linearizable under Parley's models. */
  expectLinearizable(): void {
    expectLinearizable(this.recorder);
  }

  /** Fences and lease epochs only grow, and no write with a stale fence was accepted. */
  expectFencing(): void {
    expectFencing(this.recorder);
  }

  /**
   * Strong reads asked with `maxStalenessMs` missed no write acknowledged
   * more than their bound before they were called (docs/guarantees.md,
   * "Strong reads"). Serializable and bounded reads are kept out of
   * `expectLinearizable`.
   */
  expectBoundedStaleness(): { reads: number } {
    return expectBoundedStaleness(this.recorder);
  }

  /**
   * Every session (each `Session` object passed as `{ session }`) got read-your-writes,
   * monotonic reads, monotonic writes and writes-follow-reads over its `set` and `get`
   * calls, eventual and strong (docs/sessions.md; what is judged: session-checks.ts).
   * A session's calls must not overlap.
   */
  expectSessionGuarantees(): { sessions: number; operations: number } {
    return expectSessionGuarantees(this.recorder);
  }

  /** The session calls on eventual namespace `ns` were causally consistent, across sessions. */
  expectCausal(ns: string): { sessions: number; operations: number } {
    return expectCausal(this.recorder, ns);
  }

  /** Every live node that opened eventual namespace `ns` holds the same entries, and no acknowledged write was lost. */
  expectConverged(ns: string): void {
    const replicas = this.wrapped.map((w, node) => {
      const up = w !== undefined && this.sim.host(this.id(node)).app === w.real;
      // A node holds a namespace once it opened it in this life (Parley replicates a namespace to the nodes that use it).
      const opened = up ? w.real.eventualModule.opened().find((n) => n.name === ns) : undefined;
      const replica: NamespaceReplica | undefined = opened?.replica;
      return { node, replica };
    });
    expectConverged(this.recorder, ns, replicas, this.sim.epochMs + this.sim.nowMs());
  }

  /** Every recorded call, one JSON line each: equal for equal seeds. */
  historyText(): string {
    return this.recorder.calls.map((c) => JSON.stringify(c)).join('\n');
  }

  private throwIfFailed(): void {
    const f = this.sim.failure;
    if (f) throw f;
  }

  private rate(r: number): number {
    if (!(r >= 0 && r <= 1)) throw new InvalidArgumentError('a rate is between 0 and 1');
    return r;
  }

  private index(i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= this.ids.length) {
      throw new InvalidArgumentError(`no node ${i} (the cluster has ${this.ids.length})`);
    }
    return i;
  }

  private id(i: number): PeerId {
    return this.ids[this.index(i)] as PeerId;
  }
}
