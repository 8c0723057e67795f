/**
 * `Simulation`: hosts, a network and disks on one virtual clock, driven by
 * one seed. See README.md for the model and an example.
 */

import { InvariantViolationError } from '@parley/check';
import {
  type Cancel,
  type Clock,
  type KVStorage,
  type PeerId,
  type RaftLogStorage,
  type Random,
  type Scheduler,
  SeededRandom,
  type Transport,
  type TransportLimits,
} from '@parley/interface';
import { type ClockSpec, HostClock } from './clock.js';
import type { SimKernel } from './kernel.js';
import { CALM_NETWORK, type NetEndpoint, type NetworkFaults, SimNetwork } from './network.js';
import { EventQueue, type QueuedEvent } from './queue.js';
import { DEFAULT_DISK_FAULTS, type DiskFaults, type KVStoreOptions, SimDisk } from './storage.js';
import { SimTransport } from './transport.js';

export type FailureKind = 'correctness' | 'liveness' | 'crash';

/** A failed run. The message always names the seed that replays it. */
export class SimulationFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    readonly seed: number,
    readonly atMs: number,
    readonly detail: string,
  ) {
    super(`${kind}: ${detail} (t=${atMs} ms, PARLEY_SEED=${seed})`);
    this.name = 'SimulationFailure';
  }
}

/**
 * Reports a correctness violation from simulated code, an invariant or a
 * check: throw the result. (`InvariantViolationError` from ./check is the
 * one error class the simulator classifies as `correctness`.)
 */
export function violation(invariant: string, message: string): InvariantViolationError {
  return new InvariantViolationError([{ invariant, message }]);
}

/** What a host's boot function receives: every seam of the process, simulated. */
export interface HostContext {
  readonly id: PeerId;
  /** 0 on first boot, +1 on every restart. */
  readonly generation: number;
  /** The host's own wall clock (offset, drift, jumps). */
  readonly clock: Clock;
  /** Timers on the host's clock; they never fire while paused (they wait) or after a crash. */
  readonly scheduler: Scheduler;
  /** This generation's random stream, derived from the seed. */
  readonly random: Random;
  /** A fresh transport for this generation; call `start()`. */
  readonly transport: Transport;
  /** Opens a KV store on the host's disk (survives crashes as described in storage.ts). */
  kv(name?: string, options?: KVStoreOptions): KVStorage;
  /** Opens a Raft log on the host's disk. */
  raftLog(name?: string): RaftLogStorage;
}

export type Boot<App> = (ctx: HostContext) => App | Promise<App>;

export interface HostOptions {
  clock?: ClockSpec;
  disk?: Partial<DiskFaults>;
  transport?: Partial<TransportLimits>;
}

export type HostState = 'up' | 'paused' | 'down';

export interface SimulationOptions {
  seed: number;
  /** Wall-clock reading of every host at t = 0 (before its offset). Default 2026-01-01T00:00:00Z. */
  epochMs?: number;
  /** Network faults at the start. Default: calm (1–20 ms latency, no loss). */
  network?: Partial<NetworkFaults>;
  /** Keep the trace lines (for tests and debugging); the fingerprint is always kept. Default false. */
  captureTrace?: boolean;
  /** Bound on kept trace lines. Default 200,000. */
  maxTraceLines?: number;
  /** Events a run may execute before it fails as a livelock (`liveness`). Default 5,000,000. */
  maxSteps?: number;
}

/** Events one host buffers while paused before it drops deliveries (timers are always kept). */
export const MAX_DEFERRED_PER_HOST = 100_000;

export class SimHost<App = unknown> implements NetEndpoint {
  private stateValue: HostState = 'down';
  private gen = -1;
  private appValue: App | undefined;
  private transportValue: SimTransport | undefined;
  private readonly timers = new Set<QueuedEvent>();
  private deferred: Array<{ label: string; fn: () => void }> = [];
  private readonly rng: Random;
  readonly clock: HostClock;
  readonly disk: SimDisk;

  /** @internal */
  constructor(
    readonly id: PeerId,
    private readonly boot: Boot<App>,
    private readonly sim: Simulation,
    private readonly kernel: SimKernel,
    private readonly options: HostOptions,
    rng: Random,
  ) {
    this.rng = rng;
    this.clock = new HostClock(() => kernel.nowMs(), sim.epochMs, options.clock);
    this.disk = new SimDisk(id, kernel, rng.fork(), { ...DEFAULT_DISK_FAULTS, ...options.disk });
  }

  get state(): HostState {
    return this.stateValue;
  }

  /** 0 on first boot, +1 per restart; -1 before the first boot. */
  get generation(): number {
    return this.gen;
  }

  /** What the boot function returned, once it resolved (undefined while down). */
  get app(): App | undefined {
    return this.appValue;
  }

  get transport(): SimTransport | undefined {
    return this.transportValue;
  }

  /** @internal Boots a new generation from the disk. */
  start(): void {
    if (this.stateValue !== 'down') throw new RangeError(`host ${this.id} is ${this.stateValue}`);
    this.gen++;
    this.stateValue = 'up';
    this.kernel.trace(`host ${this.id} boot gen=${this.gen}`);
    const gen = this.gen;
    const random = this.rng.fork();
    const transport = new SimTransport(
      { id: this.id, after: (ms, fn) => this.after(ms, fn), crashed: (err) => this.kernel.crashed(this.id, err) },
      this.sim.network,
      (peer) => this.sim.liveTransport(peer),
      this.options.transport,
    );
    this.transportValue = transport;
    const ctx: HostContext = {
      id: this.id,
      generation: gen,
      clock: this.clock,
      scheduler: { after: (ms, fn) => this.after(ms, fn) },
      random,
      transport,
      kv: (name, opts) => this.disk.kv(name, opts),
      raftLog: (name) => this.disk.raftLog(name),
    };
    this.kernel.schedule(0, 'boot', () =>
      this.deliver('boot', () => {
        Promise.resolve()
          .then(() => this.boot(ctx))
          .then(
            (app) => {
              if (this.gen === gen && this.stateValue !== 'down') this.appValue = app;
            },
            (err: unknown) => {
              if (this.gen === gen && this.stateValue !== 'down') this.kernel.crashed(this.id, err);
            },
          );
      }),
    );
  }

  /** Kills the process: timers and pending I/O vanish, unsynced writes are lost. */
  crash(): void {
    if (this.stateValue === 'down') return;
    this.kernel.trace(`host ${this.id} crash gen=${this.gen}`);
    this.stateValue = 'down';
    this.appValue = undefined;
    for (const ev of this.timers) this.kernel.cancel(ev);
    this.timers.clear();
    this.deferred = [];
    this.transportValue?.kill();
    this.transportValue = undefined;
    this.disk.crash();
    this.sim.network.refresh();
  }

  /** Boots the host again from what its disk kept. */
  restart(): void {
    if (this.stateValue !== 'down') this.crash();
    this.start();
  }

  /** Stops processing while time runs: timers and deliveries wait until `resume`. */
  pause(): void {
    if (this.stateValue !== 'up') return;
    this.kernel.trace(`host ${this.id} pause`);
    this.stateValue = 'paused';
  }

  resume(): void {
    if (this.stateValue !== 'paused') return;
    this.kernel.trace(`host ${this.id} resume (${this.deferred.length} waiting)`);
    this.stateValue = 'up';
    const waiting = this.deferred;
    this.deferred = [];
    for (const w of waiting) this.kernel.schedule(0, w.label, () => this.run(w.label, w.fn));
  }

  /** Steps the host's wall clock (negative: backwards). */
  jumpClock(deltaMs: number): void {
    this.kernel.trace(`host ${this.id} clock-jump ${deltaMs}`);
    this.clock.jump(deltaMs);
  }

  /** Runs `fn` as this host: dropped while down, deferred while paused, exceptions are crashes. */
  run(label: string, fn: () => void): void {
    if (this.stateValue === 'down') return;
    if (this.stateValue === 'paused') {
      if (this.deferred.length < MAX_DEFERRED_PER_HOST || label === 'timer') this.deferred.push({ label, fn });
      return;
    }
    try {
      fn();
    } catch (err) {
      this.kernel.crashed(this.id, err);
    }
  }

  /** @internal NetEndpoint */
  reachable(): boolean {
    return this.stateValue !== 'down' && this.transportValue?.started === true;
  }

  /** @internal NetEndpoint */
  deliver(label: string, fn: () => void): void {
    const gen = this.gen;
    this.run(label, () => {
      if (this.gen === gen) fn();
    });
  }

  /** @internal NetEndpoint */
  connectionChanged(peer: PeerId, up: boolean, delayMs = 0): void {
    const transport = this.transportValue;
    if (!transport) return;
    this.kernel.schedule(delayMs, 'conn', () => this.run('conn', () => transport.connectionChanged(peer, up)));
  }

  private after(delayMs: number, fn: () => void): Cancel {
    if (this.stateValue === 'down') return () => {};
    const gen = this.gen;
    const ev = this.kernel.schedule(this.clock.toGlobalDelay(delayMs), 'timer', () => {
      this.timers.delete(ev);
      if (this.gen === gen) this.run('timer', fn);
    });
    this.timers.add(ev);
    return () => {
      this.kernel.cancel(ev);
      this.timers.delete(ev);
    };
  }
}

const FNV_OFFSET = 0x811c9dc5;

/**
 * A deterministic world: hosts, network, disks and faults on one virtual
 * clock, every random choice derived from `seed`.
 *
 * @example
 * ```ts
 * const sim = new Simulation({ seed: 7 });
 * sim.addHost('a', async (ctx) => { await ctx.transport.start(); ctx.transport.handle('echo', (_f, b) => b); });
 * sim.addHost('b', async (ctx) => { await ctx.transport.start(); return ctx.transport; });
 * await sim.runFor(10);
 * const reply = sim.host<Transport>('b').app!.request('a', 'echo', new Uint8Array([1]));
 * await sim.runUntil(() => settled, 1_000);
 * ```
 */
export class Simulation {
  readonly seed: number;
  readonly epochMs: number;
  readonly network: SimNetwork;
  /** A random stream for the scenario's own choices (workload, faults). */
  readonly random: Random;
  private readonly queue = new EventQueue();
  private readonly kernel: SimKernel;
  private readonly hostMap = new Map<PeerId, SimHost<unknown>>();
  private readonly rng: Random;
  private now = 0;
  private stepsValue = 0;
  private failureValue: SimulationFailure | undefined;
  private readonly invariants: Array<{ name: string; check: () => void }> = [];
  private hash = FNV_OFFSET;
  private readonly lines: string[] | undefined;
  private readonly maxTraceLines: number;
  private readonly maxSteps: number;

  constructor(options: SimulationOptions) {
    if (!Number.isSafeInteger(options.seed) || options.seed < 0)
      throw new RangeError('seed must be a safe integer ≥ 0');
    this.seed = options.seed;
    this.epochMs = options.epochMs ?? Date.UTC(2026, 0, 1);
    this.rng = new SeededRandom(options.seed);
    this.lines = options.captureTrace ? [] : undefined;
    this.maxTraceLines = options.maxTraceLines ?? 200_000;
    this.maxSteps = options.maxSteps ?? 5_000_000;
    this.kernel = {
      nowMs: () => this.now,
      schedule: (delayMs, label, fn) => this.queue.push(this.now + Math.max(0, Math.trunc(delayMs)), label, fn),
      cancel: (ev) => this.queue.cancel(ev),
      trace: (line) => this.trace(line),
      crashed: (host, err) => this.crashed(host, err),
    };
    this.network = new SimNetwork(this.kernel, this.rng.fork());
    this.network.configure({ ...CALM_NETWORK, ...options.network });
    this.random = this.rng.fork();
  }

  /** Global simulated time, ms since the start of the run. */
  nowMs(): number {
    return this.now;
  }

  /** Events run so far. */
  get steps(): number {
    return this.stepsValue;
  }

  /** Events still queued. */
  get pendingEvents(): number {
    return this.queue.size;
  }

  /** The first failure of the run, if any; once set, the run stops advancing. */
  get failure(): SimulationFailure | undefined {
    return this.failureValue;
  }

  /** Adds a host and boots it (at the current time, as an event). */
  addHost<App>(id: PeerId, boot: Boot<App>, options: HostOptions = {}): SimHost<App> {
    if (this.hostMap.has(id)) throw new RangeError(`host ${id} already exists`);
    const host = new SimHost<App>(id, boot, this, this.kernel, options, this.rng.fork());
    this.hostMap.set(id, host as SimHost<unknown>);
    this.network.attach(host);
    host.start();
    return host;
  }

  host<App = unknown>(id: PeerId): SimHost<App> {
    const h = this.hostMap.get(id);
    if (!h) throw new RangeError(`no host ${id}`);
    return h as SimHost<App>;
  }

  hosts(): SimHost<unknown>[] {
    return [...this.hostMap.values()];
  }

  /** @internal The started transport of `peer`'s current generation. */
  liveTransport(peer: PeerId): SimTransport | undefined {
    const h = this.hostMap.get(peer);
    if (!h || h.state === 'down') return undefined;
    const t = h.transport;
    return t?.started ? t : undefined;
  }

  /** Schedules a scenario-level action (a fault, a workload step) after `delayMs` of global time. */
  schedule(delayMs: number, fn: () => void, label = 'action'): Cancel {
    const ev = this.queue.push(this.now + Math.max(0, Math.trunc(delayMs)), label, () => {
      try {
        fn();
      } catch (err) {
        this.fail(err instanceof InvariantViolationError ? 'correctness' : 'crash', describe(err));
      }
    });
    return () => this.queue.cancel(ev);
  }

  /** Registers an invariant checked after every event; it throws `violation(...)` when broken. */
  invariant(name: string, check: () => void): void {
    this.invariants.push({ name, check });
  }

  /** Records the run's failure (the first one wins) and stops the run. */
  fail(kind: FailureKind, detail: string): SimulationFailure {
    if (!this.failureValue) {
      this.failureValue = new SimulationFailure(kind, this.seed, this.now, detail);
      this.trace(`FAIL ${kind} ${detail}`);
    }
    return this.failureValue;
  }

  /** Runs the next event, then lets every promise it settled run. False when nothing is queued. */
  async step(): Promise<boolean> {
    if (this.stepsValue >= this.maxSteps) {
      this.fail('liveness', `event budget of ${this.maxSteps} steps exhausted (livelock?)`);
      return false;
    }
    const ev = this.queue.pop();
    if (!ev) return false;
    this.now = ev.timeMs;
    this.stepsValue++;
    this.mix(ev.timeMs);
    this.mix(ev.seq);
    try {
      ev.run();
    } catch (err) {
      this.crashed('sim', err);
    }
    await drainMicrotasks();
    this.checkInvariants();
    return true;
  }

  /** Advances simulated time by `ms`, running every event due; stops early on a failure. */
  async runFor(ms: number): Promise<void> {
    const end = this.now + Math.max(0, Math.trunc(ms));
    await drainMicrotasks();
    while (!this.failureValue) {
      const next = this.queue.peek();
      if (!next || next.timeMs > end) break;
      await this.step();
    }
    if (!this.failureValue) this.now = Math.max(this.now, end);
  }

  /**
   * Runs until `done()` holds (checked after every event) or `maxMs` passed.
   * Returns whether `done()` held; stops early on a failure.
   */
  async runUntil(done: () => boolean, maxMs: number): Promise<boolean> {
    const end = this.now + Math.max(0, Math.trunc(maxMs));
    await drainMicrotasks();
    if (done()) return true;
    while (!this.failureValue) {
      const next = this.queue.peek();
      if (!next || next.timeMs > end) break;
      await this.step();
      if (done()) return true;
    }
    if (!this.failureValue) this.now = Math.max(this.now, end);
    return done();
  }

  /** Turns every fault off: calm network, no partitions or holds, paused hosts resumed, crashed hosts restarted. */
  calm(): void {
    this.network.configure(CALM_NETWORK);
    this.network.heal();
    for (const h of this.hosts()) {
      if (h.state === 'paused') h.resume();
      else if (h.state === 'down') h.start();
    }
  }

  /** Appends a line to the trace (and to the determinism fingerprint). */
  trace(line: string): void {
    this.mix(this.now);
    let h = this.hash;
    for (let i = 0; i < line.length; i++) {
      h ^= line.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    this.hash = h >>> 0;
    if (this.lines && this.lines.length < this.maxTraceLines) this.lines.push(`${this.now} ${line}`);
  }

  private mix(n: number): void {
    let h = this.hash ^ (n & 0xffff);
    h = Math.imul(h, 0x01000193) ^ ((n >>> 16) & 0xffff);
    this.hash = Math.imul(h, 0x01000193) >>> 0;
  }

  /** FNV-1a hash of every event (time, sequence) and trace line so far: equal for equal runs. */
  fingerprint(): string {
    return this.hash.toString(16).padStart(8, '0');
  }

  /** The kept trace lines (only with `captureTrace`). */
  traceLines(): readonly string[] {
    return this.lines ?? [];
  }

  private checkInvariants(): void {
    if (this.failureValue) return;
    for (const inv of this.invariants) {
      try {
        inv.check();
      } catch (err) {
        this.fail(err instanceof InvariantViolationError ? 'correctness' : 'crash', `${inv.name}: ${describe(err)}`);
        return;
      }
    }
  }

  private crashed(host: string, err: unknown): void {
    this.fail(err instanceof InvariantViolationError ? 'correctness' : 'crash', `host ${host}: ${describe(err)}`);
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

/**
 * Lets every queued microtask (and those they queue) run before the next
 * event. `setImmediate` fires only once the microtask queue is empty; it is
 * not a timer and reads no clock, so the order of work stays a function of
 * the seed.
 */
function drainMicrotasks(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
