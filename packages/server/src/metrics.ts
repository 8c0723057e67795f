/**
 * Prometheus series: the node's observability hooks (NodeEvents) and the
 * HTTP server's own requests. One registry per server, so several servers can
 * share a process. Labels are bounded: no namespace or key labels (their
 * number is up to the user); routes are route templates, not raw paths.
 */
import type { TypedEvents, Unsubscribe } from '@parley/interface';
import type { NodeEvents, NodeHealth } from '@parley/node';
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
  private readonly httpErrors = new Counter({
    name: 'parley_http_errors_total',
    help: "Failed HTTP requests by error code (the envelope's `error`: a fixed set) and route template.",
    labelNames: ['code', 'route'] as const,
    registers: [this.registry],
  });
  readonly watchStreams = new Gauge({
    name: 'parley_http_watch_streams',
    help: 'Open server-sent-event watch streams.',
    registers: [this.registry],
  });

  constructor(
    events: TypedEvents<NodeEvents>,
    options: {
      defaultMetrics?: boolean;
      /** The node's health, read at every scrape for `parley_storage_faulted`. */
      health?: () => NodeHealth;
      /** This node's peer id: `parley_raft_leader_term` is the term while the Raft leader is this node. */
      peerId?: string;
    } = {},
  ) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'parley_process_' });
    const r = [this.registry];

    const counter = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers: r });
    const gauge = (name: string, help: string) => new Gauge({ name, help, registers: r });
    const histogram = <L extends string = never>(
      name: string,
      help: string,
      buckets: number[],
      labelNames: readonly L[] = [],
    ) => new Histogram<L>({ name, help, labelNames, buckets, registers: r });

    const term = gauge('parley_raft_term', 'Current Raft term seen by this node.');
    const hasLeader = gauge('parley_raft_has_leader', '1 when this node knows a Raft leader, else 0.');
    const leaderChanges = counter('parley_raft_leader_changes_total', 'Times the known Raft leader changed.');
    const leaderTerm = gauge(
      'parley_raft_leader_term',
      'The Raft term this node leads, 0 while it does not lead. Two nodes of a group with the same non-zero value: split brain.',
    );
    const commit = histogram(
      'parley_raft_commit_latency_seconds',
      'From proposal to commit of a strong command.',
      LATENCY_BUCKETS_SECONDS,
    );
    const applyLag = gauge('parley_raft_apply_lag_entries', 'Committed Raft entries not yet applied.');
    const lockWait = histogram(
      'parley_lock_wait_seconds',
      'Time an acquire waited in a lock queue, by outcome.',
      WAIT_BUCKETS_SECONDS,
      ['granted'] as const,
    );
    const gossipBytes = counter('parley_gossip_bytes_total', 'Gossip bytes by direction.', ['direction'] as const);
    const deltas = counter('parley_deltas_applied_keys_total', 'Keys changed by applied remote deltas.');
    const aeRounds = counter('parley_antientropy_rounds_total', 'Completed anti-entropy rounds.');
    const aeRepairs = counter('parley_antientropy_repaired_entries_total', 'Entries repaired by anti-entropy.');
    const aeBytes = counter('parley_antientropy_bytes_total', 'Bytes exchanged by anti-entropy.');
    const replicationLag = gauge(
      'parley_replication_lag_seconds',
      'Age of the oldest unseen remote write, as last measured.',
    );
    const rejections = counter(
      'parley_rejections_total',
      'Remote updates rejected, by reason (drift: clock too far ahead; decode: malformed bytes).',
      ['reason'] as const,
    );
    const fsync = histogram('parley_storage_fsync_seconds', 'Storage fsync latency.', LATENCY_BUCKETS_SECONDS);
    const faults = counter(
      'parley_storage_faults_total',
      "Faults of the node's own disk, by store (kv: eventual, raft: the Raft log) and error code.",
      ['store', 'code'] as const,
    );
    const health = options.health;
    new Gauge({
      name: 'parley_storage_faulted',
      help: "1 while a store of the node's own disk refuses writes (until the node restarts), else 0.",
      labelNames: ['store'] as const,
      registers: r,
      collect() {
        const faulted = new Set((health?.().faults ?? []).map((f) => f.store));
        for (const store of ['kv', 'raft'] as const) this.set({ store }, faulted.has(store) ? 1 : 0);
      },
    });

    const on = <K extends keyof NodeEvents>(type: K, listener: (payload: NodeEvents[K]) => void) =>
      this.unsubscribes.push(events.on(type, listener));
    on('raft:term', (e) => {
      term.set(e.term);
      hasLeader.set(e.leader === null ? 0 : 1);
      leaderTerm.set(e.leader !== null && e.leader === options.peerId ? e.term : 0);
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
    on('storage:fault', (e) => faults.inc({ store: e.store, code: e.code }));
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route }, seconds);
  }

  /** A failed request's error code (errors.ts: a fixed set, so the label stays bounded). */
  observeError(code: string, route: string): void {
    this.httpErrors.inc({ code, route });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  close(): void {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
    this.registry.clear();
  }
}
