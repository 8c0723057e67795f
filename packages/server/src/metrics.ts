/**
 * Prometheus series: the node's observability hooks (NodeEvents) and the
 * HTTP server's own requests. One registry per server, so several servers can
 * share a process. Labels are bounded: no namespace or key labels (their
 * number is up to the user); routes are route templates, not raw paths.
 */
import type { TypedEvents, Unsubscribe } from '@parley/interface';
import type { NodeEvents } from '@parley/node/context';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

const LATENCY_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const WAIT_BUCKETS_SECONDS = [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 3600];

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly unsubscribes: Unsubscribe[] = [];
  private lastLeader: string | null | undefined;

  private readonly httpRequests = new Counter({
    name: 'parley_http_requests_total',
    help: 'HTTP requests by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly httpDuration = new Histogram({
    name: 'parley_http_request_duration_seconds',
    help: 'HTTP request latency by method and route template.',
    labelNames: ['method', 'route'] as const,
    buckets: LATENCY_BUCKETS_SECONDS,
    registers: [this.registry],
  });
  readonly watchStreams = new Gauge({
    name: 'parley_http_watch_streams',
    help: 'Open server-sent-event watch streams.',
    registers: [this.registry],
  });

  constructor(events: TypedEvents<NodeEvents>, options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'parley_process_' });
    const r = [this.registry];

    const term = new Gauge({ name: 'parley_raft_term', help: 'Current Raft term seen by this node.', registers: r });
    const hasLeader = new Gauge({
      name: 'parley_raft_has_leader',
      help: '1 when this node knows a Raft leader, else 0.',
      registers: r,
    });
    const leaderChanges = new Counter({
      name: 'parley_raft_leader_changes_total',
      help: 'Times the known Raft leader changed.',
      registers: r,
    });
    const commit = new Histogram({
      name: 'parley_raft_commit_latency_seconds',
      help: 'From proposal to commit of a strong command.',
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: r,
    });
    const applyLag = new Gauge({
      name: 'parley_raft_apply_lag_entries',
      help: 'Committed Raft entries not yet applied.',
      registers: r,
    });
    const lockWait = new Histogram({
      name: 'parley_lock_wait_seconds',
      help: 'Time an acquire waited in a lock queue, by outcome.',
      labelNames: ['granted'] as const,
      buckets: WAIT_BUCKETS_SECONDS,
      registers: r,
    });
    const gossipBytes = new Counter({
      name: 'parley_gossip_bytes_total',
      help: 'Gossip bytes by direction.',
      labelNames: ['direction'] as const,
      registers: r,
    });
    const deltas = new Counter({
      name: 'parley_deltas_applied_keys_total',
      help: 'Keys changed by applied remote deltas.',
      registers: r,
    });
    const aeRounds = new Counter({
      name: 'parley_antientropy_rounds_total',
      help: 'Completed anti-entropy rounds.',
      registers: r,
    });
    const aeRepairs = new Counter({
      name: 'parley_antientropy_repaired_entries_total',
      help: 'Entries repaired by anti-entropy.',
      registers: r,
    });
    const aeBytes = new Counter({
      name: 'parley_antientropy_bytes_total',
      help: 'Bytes exchanged by anti-entropy.',
      registers: r,
    });
    const replicationLag = new Gauge({
      name: 'parley_replication_lag_seconds',
      help: 'Age of the oldest unseen remote write, as last measured.',
      registers: r,
    });
    const rejections = new Counter({
      name: 'parley_rejections_total',
      help: 'Remote updates rejected, by reason (drift: clock too far ahead; decode: malformed bytes).',
      labelNames: ['reason'] as const,
      registers: r,
    });
    const fsync = new Histogram({
      name: 'parley_storage_fsync_seconds',
      help: 'Storage fsync latency.',
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: r,
    });

    const on = <K extends keyof NodeEvents>(type: K, listener: (payload: NodeEvents[K]) => void) =>
      this.unsubscribes.push(events.on(type, listener));
    on('raft:term', (e) => {
      term.set(e.term);
      hasLeader.set(e.leader === null ? 0 : 1);
      if (e.leader !== null && this.lastLeader !== undefined && e.leader !== this.lastLeader) leaderChanges.inc();
      if (e.leader !== null) this.lastLeader = e.leader;
      else if (this.lastLeader === undefined) this.lastLeader = null;
    });
    on('raft:commit', (e) => commit.observe(e.ms / 1000));
    on('raft:apply-lag', (e) => applyLag.set(e.entries));
    on('lock:wait', (e) => lockWait.observe({ granted: e.granted ? 'true' : 'false' }, e.ms / 1000));
    on('gossip:bytes', (e) => gossipBytes.inc({ direction: e.direction }, e.bytes));
    on('delta:applied', (e) => deltas.inc(e.keys));
    on('antientropy:round', (e) => {
      aeRounds.inc();
      aeRepairs.inc(e.repairedEntries);
      aeBytes.inc(e.bytes);
    });
    on('replication:lag', (e) => replicationLag.set(e.lagMs / 1000));
    on('reject:drift', (e) => rejections.inc({ reason: 'drift' }, e.count));
    on('reject:decode', () => rejections.inc({ reason: 'decode' }));
    on('storage:fsync', (e) => fsync.observe(e.ms / 1000));
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route }, seconds);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  close(): void {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
    this.registry.clear();
  }
}
