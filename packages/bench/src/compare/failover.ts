/** `bench:compare`'s failover trials: the leader of each side killed or frozen under a steady write load. */
import type { EtcdCluster } from '@parley/etcd';
import type { Etcd3 } from 'etcd3';
import { etcdAdapter } from './etcd-adapter.js';
import type { ParleyCluster } from './parley-cluster.js';
import { atMost, atMostAnchor, type CompareRow, compareRow } from './rows.js';
import { spread } from './stats.js';
import { timelineChart } from './svg.js';
import { runStrongTask, type StrongTask } from './workloads.js';

/** How a failover trial takes the leader out: kill -9 (its sockets close), or SIGSTOP (they stay open). */
type Outage = 'kill' | 'stop';

/** The clusters a run has started, and how it reports progress. */
export interface FailoverContext {
  readonly parley: ParleyCluster;
  readonly etcd: EtcdCluster;
  readonly client: Etcd3;
  readonly trials: number;
  step(what: string): void;
}

/**
 * Failover trials, alternating sides: a steady sequential write loop, the
 * leader taken out 800 ms in (kill -9, then SIGSTOP), and the gap to the next
 * acknowledged write; the rows, the raw gaps and the kill timeline chart.
 */
export async function failoverTrials(
  ctx: FailoverContext,
): Promise<{ rows: CompareRow[]; extra: Record<string, unknown>; svg: string }> {
  const { parley, etcd, trials } = ctx;
  const KILL_AT = 800;
  const WINDOW = 6_000;
  const timelines = { p: [] as number[][], e: [] as number[][] };
  const gaps = { kill: { p: [] as number[], e: [] as number[] }, stop: { p: [] as number[], e: [] as number[] } };
  const etcdSignal = (i: number, sig: 'SIGSTOP' | 'SIGCONT') => {
    const pid = etcd.members[i]?.proc?.pid;
    if (pid !== undefined) process.kill(pid, sig);
  };
  const trial = async (side: 'p' | 'e', outage: Outage, t: number) => {
    const leader = side === 'p' ? await parley.leaderIndex() : await etcd.leaderIndex();
    if (leader === undefined || leader < 0) throw new Error('no etcd leader');
    const start = Date.now();
    const task: StrongTask = { kind: 'steady', durationMs: WINDOW, prefix: `fo${outage}${t}` };
    const loop = side === 'p' ? parley.run(task) : runStrongTask(etcdAdapter(ctx.client), task);
    await new Promise((r) => setTimeout(r, KILL_AT));
    const killAt = Date.now();
    const thaw = () => (side === 'p' ? parley.signal(leader, 'SIGCONT') : etcdSignal(leader, 'SIGCONT'));
    let thawTimer: NodeJS.Timeout | undefined;
    if (outage === 'stop') {
      if (side === 'p') parley.signal(leader, 'SIGSTOP');
      else etcdSignal(leader, 'SIGSTOP');
      // Thawed when the window ends: a call left waiting on the frozen member returns then.
      thawTimer = setTimeout(thaw, WINDOW - KILL_AT);
    } else if (side === 'p') await parley.kill(leader);
    else await etcd.kill(leader);
    const res = await loop;
    clearTimeout(thawTimer);
    const acks = res.kind === 'steady' ? res.acks : [];
    // The first write sent after the kill: one in flight at the kill may already be committed and
    // answer a millisecond later, which says nothing about the failover.
    const sentAt = res.kind === 'steady' ? res.sentAt : [];
    const first = sentAt.findIndex((s) => s >= killAt);
    const next = first < 0 ? undefined : acks[first];
    gaps[outage][side].push(next === undefined ? WINDOW - (killAt - start) : next - killAt);
    if (outage === 'kill') timelines[side].push(acks.map((a) => a - killAt));
    // A frozen leader thaws deposed and rejoins as a follower; a killed one restarts from its disk.
    if (outage === 'stop') {
      thaw();
      if (side === 'e') await etcd.waitHealthy(30_000);
    } else if (side === 'p') await parley.startVoter(leader);
    else await etcd.restart(leader);
    const what = outage === 'kill' ? 'kill -9' : 'SIGSTOP';
    ctx.step(`failover (${what}) ${side === 'p' ? 'Parley' : 'etcd'} trial ${t + 1}`);
  };
  for (const outage of ['kill', 'stop'] as const) {
    for (let t = 0; t < trials; t++) {
      await trial('p', outage, t);
      await trial('e', outage, t);
    }
  }
  const extra = { failover_ms: gaps.kill, failover_frozen_ms: gaps.stop };
  const g = gaps.kill;
  const f = gaps.stop;
  const rows = [
    compareRow({
      name: `failover median, kill -9 leader → next write (${trials} trials)`,
      unit: 'ms',
      better: 'lower',
      value: spread(g.p),
      anchor: 'etcd',
      anchorValue: spread(g.e),
      target: atMost(300, 'ms'),
    }),
    compareRow({
      name: `failover max (${trials} trials)`,
      unit: 'ms',
      better: 'lower',
      value: { ...spread(g.p), median: Math.max(...g.p) },
      anchor: 'etcd',
      anchorValue: { ...spread(g.e), median: Math.max(...g.e) },
      target: atMost(500, 'ms'),
    }),
    compareRow({
      name: `failover median, SIGSTOP leader (sockets open) → next write (${trials} trials)`,
      unit: 'ms',
      better: 'lower',
      value: spread(f.p),
      anchor: 'etcd',
      anchorValue: spread(f.e),
      target: atMostAnchor(),
    }),
    compareRow({
      name: `failover max, SIGSTOP leader (${trials} trials)`,
      unit: 'ms',
      better: 'lower',
      value: { ...spread(f.p), median: Math.max(...f.p) },
      anchor: 'etcd',
      anchorValue: { ...spread(f.e), median: Math.max(...f.e) },
    }),
  ];
  const svg = timelineChart(
    `Failover: acknowledged writes around a kill -9 of the leader (${trials} trials per side)`,
    [
      { label: 'Parley', color: '#1f77b4', trials: timelines.p },
      { label: 'etcd', color: '#d62728', trials: timelines.e },
    ],
    -500,
    3000,
  );
  return { rows, extra, svg };
}
