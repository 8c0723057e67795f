/**
 * Applies a schedule to the cluster: each step at its offset, healed after its
 * duration, recorded on the run's timeline with the processes it actually hit
 * (a `leader` target is resolved when the fault begins). `healAll` undoes
 * everything at the end: links restored, clocks zeroed, disks emptied and
 * writable, paused processes continued, dead ones restarted.
 */
import type { Cluster, Target } from '../cluster.js';
import { fill, remount, unfill } from '../disk.js';
import type { FaultRecord, Recorder } from '../history.js';
import { call } from '../http.js';
import { ParleyNode } from '../parley-node.js';
import type { Firewall } from '../partition.js';
import { sleep } from '../workload.js';
import type { Schedule, Step } from './schedule.js';

/** How long a node whose disk was freed gets to take strong writes again by itself. */
const DISK_RECOVERY_MS = 8_000;

/**
 * True once `n`'s own stores work again within `withinMs`: an eventual write
 * through it succeeds (its key-value store), and its applied Raft index
 * reaches the commit index the other voters reported at the start (its Raft
 * log takes entries). A strong write through it would not tell: the leader's
 * log takes that.
 */
async function storesWork(n: ParleyNode, others: readonly ParleyNode[], withinMs: number): Promise<boolean> {
  const end = performance.now() + withinMs;
  let target = 0;
  for (const o of others) target = Math.max(target, (await o.raft())?.commitIndex ?? 0);
  let kv = false;
  while (performance.now() < end) {
    if (!kv) {
      const o = await call(n.url, `/api/v1/replicated/torture-health/${n.name}`, {
        method: 'POST',
        body: { value: Date.now() },
        timeoutMs: 2_000,
      });
      kv = o.kind === 'reply' && o.status < 300;
    }
    if (kv && ((await n.raft())?.appliedIndex ?? 0) >= target) return true;
    await sleep(250);
  }
  return false;
}

/** Whether a step whose gap starts at `nowMs` begins before `untilMs`. */
export function startsInTime(nowMs: number, gapMs: number, untilMs: number): boolean {
  return nowMs + gapMs < untilMs;
}

export class NemesisRunner {
  constructor(
    private readonly cluster: Cluster,
    private readonly rec: Recorder,
    private readonly firewall: Firewall | undefined,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Runs the steps in order, each `gapMs` after the previous one's heal
   * completed, and starts none whose gap would end past `untilMs` (run time):
   * restarts on a loaded machine stretch a schedule drawn for the nominal
   * length, and the run keeps to that length. Returns how many steps were
   * left unplayed.
   */
  async run(schedule: Schedule, untilMs = Number.POSITIVE_INFINITY): Promise<number> {
    for (const [i, s] of schedule.steps.entries()) {
      if (!startsInTime(this.rec.now(), s.gapMs, untilMs)) return schedule.steps.length - i;
      await sleep(s.gapMs);
      await this.apply(s);
    }
    return 0;
  }

  private async resolve(target: string): Promise<Target[]> {
    if (target === 'all') return this.cluster.servers;
    if (target === 'every') return this.cluster.all();
    if (target === 'leader') {
      // A loaded machine answers status calls slowly: ask for a while before giving up.
      const end = performance.now() + 10_000;
      for (;;) {
        const l = await this.cluster.leader();
        if (l !== undefined || performance.now() > end) return l === undefined ? [] : [l];
        await sleep(500);
      }
    }
    return [this.cluster.byName(target)];
  }

  private async apply(s: Step): Promise<void> {
    const targets = await this.resolve(s.target);
    const names = targets.map((t) => t.name);
    const f = this.rec.fault(s.kind, names, describe(s, names));
    this.log(`fault ${f.id} at ${Math.round(f.startMs)} ms: ${f.detail}`);
    if (targets.length === 0) f.notes.push('no leader known: nothing to hit');
    try {
      await this.inflict(s, targets, f);
      await sleep(s.durationMs);
    } finally {
      f.endMs = this.rec.now();
      await this.heal(s, targets, f);
      this.log(`healed ${f.id} at ${Math.round(f.endMs)} ms${f.notes.length ? ` (${f.notes.join('; ')})` : ''}`);
    }
  }

  private async inflict(s: Step, targets: Target[], f: FaultRecord): Promise<void> {
    switch (s.kind) {
      case 'kill':
      case 'outage':
        await Promise.all(targets.map((t) => t.kill()));
        return;
      case 'pause':
        for (const t of targets) t.pause();
        return;
      case 'partition': {
        const fw = this.requireFirewall();
        const [t] = targets;
        if (t === undefined) return;
        const slot = (x: Target) => x.spec.slot;
        if (s.shape === 'isolate') {
          fw.split(
            [slot(t)],
            this.cluster
              .all()
              .filter((x) => x !== t)
              .map(slot),
          );
        } else if (s.shape === 'cut') {
          fw.cut(slot(t), slot(this.cluster.byName(s.peer as string)));
        } else {
          // A bridge: the other servers split in two halves that cannot talk; the target talks to both.
          const others = this.cluster.servers.filter((x) => x !== t);
          const half = Math.ceil(others.length / 2);
          fw.split(others.slice(0, half).map(slot), others.slice(half).map(slot));
        }
        f.notes.push(`cut ${fw.cutLinks.length} links`);
        return;
      }
      case 'clock':
        for (const [name, ms] of Object.entries(s.offsets ?? {})) {
          const n = this.cluster.byName(name);
          if (n instanceof ParleyNode) n.clock?.set(ms);
        }
        return;
      case 'disk-full':
        for (const t of targets) {
          if (t instanceof ParleyNode) f.notes.push(`filled ${t.name}'s disk with ${fill(t.spec.dataDir)} bytes`);
        }
        return;
      case 'disk-ro':
        for (const t of targets) {
          await t.kill();
          if (!(t instanceof ParleyNode)) continue;
          if (!remount(t.spec.dataDir, 'ro')) f.notes.push(`could not remount ${t.name}'s data dir read-only`);
          await t.start().then(
            () => f.notes.push(`${t.name} started on a read-only data dir`),
            (err: Error) => f.notes.push(`${t.name} refused to start read-only: ${err.message.split(';')[0]}`),
          );
        }
        return;
    }
  }

  private async heal(s: Step, targets: Target[], f: FaultRecord): Promise<void> {
    switch (s.kind) {
      case 'kill':
      case 'outage':
        await this.restart(targets, f.notes);
        return;
      case 'pause':
        for (const t of targets) t.resume();
        return;
      case 'partition':
        this.firewall?.heal();
        return;
      case 'clock':
        for (const n of this.cluster.nodes) n.clock?.set(0);
        return;
      case 'disk-full':
        for (const t of targets) {
          if (!(t instanceof ParleyNode)) continue;
          unfill(t.spec.dataDir);
          if (!t.alive) {
            f.notes.push(`${t.name} exited on the full disk`);
          } else if (!(await storesWork(t, this.voters(t), DISK_RECOVERY_MS))) {
            // Alive, but its stores do not come back by themselves: an operator restarts it.
            f.notes.push(`${t.name}'s stores still failed ${DISK_RECOVERY_MS} ms after its disk was freed: restarted`);
            await t.kill();
          }
        }
        await this.restart(
          targets.filter((t) => !t.alive),
          f.notes,
        );
        return;
      case 'disk-ro':
        for (const t of targets) {
          await t.kill();
          if (t instanceof ParleyNode && !remount(t.spec.dataDir, 'rw')) f.notes.push(`could not remount ${t.name} rw`);
        }
        await this.restart(targets, f.notes);
        return;
    }
  }

  private async restart(targets: readonly Target[], notes: string[]): Promise<void> {
    await Promise.all(
      targets.map(async (t) => {
        const begin = this.rec.now();
        try {
          await t.start();
          notes.push(`${t.name} back in ${Math.round(this.rec.now() - begin)} ms`);
        } catch (err) {
          notes.push(`${t.name} did not restart: ${(err as Error).message}`);
        }
      }),
    );
  }

  /** The live voters other than `t`. */
  private voters(t: Target): ParleyNode[] {
    return this.cluster.nodes.filter((n) => n !== t && n.spec.role === 'voter' && n.alive && !n.paused);
  }

  private requireFirewall(): Firewall {
    if (this.firewall === undefined) throw new Error('partitions need the firewall (root and iptables)');
    return this.firewall;
  }

  /** Undoes every fault still in place and brings every process back. */
  async healAll(): Promise<string[]> {
    const notes: string[] = [];
    this.firewall?.heal();
    for (const n of this.cluster.nodes) {
      n.clock?.set(0);
      unfill(n.spec.dataDir);
    }
    for (const t of this.cluster.all()) {
      if (t.paused) t.resume();
    }
    await this.restart(
      this.cluster.all().filter((t) => !t.alive),
      notes,
    );
    return notes;
  }
}

function describe(s: Step, names: readonly string[]): string {
  const who = names.length > 0 ? names.join(',') : s.target;
  const d = `${(s.durationMs / 1000).toFixed(1)} s`;
  switch (s.kind) {
    case 'kill':
      return `kill -9 ${who} (${s.target}), restart after ${d}`;
    case 'outage':
      return `whole-cluster outage: kill -9 ${who} for ${d}`;
    case 'pause':
      return `SIGSTOP ${who} (${s.target}) for ${d}`;
    case 'partition':
      if (s.shape === 'isolate') return `isolate ${who} (${s.target}) for ${d}`;
      return s.shape === 'cut'
        ? `cut ${who}–${s.peer} for ${d}`
        : `bridge: ${who} links two halves that cannot talk, for ${d}`;
    case 'clock':
      return `clock offsets ${Object.entries(s.offsets ?? {})
        .map(([n, ms]) => `${n} ${ms > 0 ? '+' : ''}${ms} ms`)
        .join(', ')} for ${d}`;
    case 'disk-full':
      return `fill ${who}'s disk for ${d}`;
    case 'disk-ro':
      return `restart ${who} on a read-only data dir for ${d}`;
  }
}
