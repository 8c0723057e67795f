/**
 * A Raft member as a simulated process: @parley/raft's RaftDriver over the
 * host's Transport, Raft log (which loses unsynced writes on a crash) and
 * Scheduler, applying a small replicated state machine: the ordered list of
 * client values, deduplicated by client sessions (client id + sequence
 * number), snapshotted every few entries so lagging members need
 * InstallSnapshot.
 */
import type { ConfState, PeerId, RaftEntry, RaftLogStorage, RaftSnapshot } from '@parley/interface';
import { type ConfChange, RaftDriver, type RaftStateMachine } from '@parley/raft';
import type { HostContext } from '@parley/sim';
import { ClientSessions, decodeSessionEnvelope, encodeSessionEnvelope } from './client-sessions.js';
import type { PersistProbe } from './persist-probe.js';

const ENC = new TextEncoder();
const DEC = new TextDecoder();

export interface RaftHostOptions {
  /** Initial voters (used on the first boot of an initial member only). */
  voters: PeerId[];
  /** Joins an existing cluster: starts with no membership, learns it from the leader. */
  joining: boolean;
  tickMs: number;
  /** Snapshot (and compact) once this many entries were applied since the last one. */
  snapshotEveryEntries: number;
  /** Entries kept before the snapshot point for slow followers. */
  keepEntries: number;
  maxSnapshotChunkBytes: number;
  /** Largest batch of entries in one append (1: one entry per message). Default: Raft's. */
  maxSizePerMsgBytes?: number;
  /** Watches what this member sends against what its disk holds (persist before send). */
  probe?: (ctx: HostContext, storage: RaftLogStorage) => PersistProbe;
  /** Called for every value the state machine applies (index, value). */
  onApply(host: PeerId, index: number, value: string): void;
}

interface SnapshotState {
  values: [number, string][];
  sessions: ReturnType<ClientSessions<null>['export']>;
  evicted: number;
}

export class ValueStateMachine implements RaftStateMachine {
  /** (index, value) in apply order. */
  values: [number, string][] = [];
  sessions = new ClientSessions<null>(1_000);
  duplicatesSkipped = 0;
  restores = 0;

  constructor(
    private readonly host: PeerId,
    private readonly onApply: RaftHostOptions['onApply'],
  ) {}

  apply(entries: readonly RaftEntry[], _conf: ConfState): void {
    for (const e of entries) {
      if (e.type !== 'normal' || e.data.byteLength === 0) continue;
      const env = decodeSessionEnvelope(e.data);
      const verdict = this.sessions.check(env.clientId, env.seq);
      if (verdict.type !== 'apply') {
        this.duplicatesSkipped++;
        continue;
      }
      const value = DEC.decode(env.payload);
      this.values.push([e.index, value]);
      this.sessions.record(env.clientId, env.seq, e.index, null);
      this.onApply(this.host, e.index, value);
    }
  }

  restore(snapshot: RaftSnapshot): void {
    this.restores++;
    this.load(snapshot.data);
  }

  load(data: Uint8Array): void {
    if (data.byteLength === 0) {
      this.values = [];
      this.sessions = new ClientSessions<null>(1_000);
      return;
    }
    const s = JSON.parse(DEC.decode(data)) as SnapshotState;
    this.values = s.values;
    this.sessions = ClientSessions.restore(s.sessions, 1_000, s.evicted);
  }

  encode(): Uint8Array {
    const s: SnapshotState = {
      values: this.values,
      sessions: this.sessions.export(),
      evicted: this.sessions.evictedIndex,
    };
    return ENC.encode(JSON.stringify(s));
  }
}

export class RaftHost {
  readonly driver: RaftDriver;
  readonly sm: ValueStateMachine;
  /** A storage or state machine error that stopped the driver (a scenario invariant reports it). */
  fatal: unknown;
  readonly probe: PersistProbe | undefined;
  private lastSnapshotIndex: number;
  private snapshotting = false;

  private constructor(
    readonly ctx: HostContext,
    private readonly options: RaftHostOptions,
  ) {
    const disk = ctx.raftLog('raft');
    this.probe = options.probe?.(ctx, disk);
    const storage = this.probe?.wrapStorage() ?? disk;
    this.sm = new ValueStateMachine(ctx.id, options.onApply);
    const snap = storage.snapshot();
    this.sm.load(snap.data);
    this.lastSnapshotIndex = snap.meta.index;
    this.driver = new RaftDriver({
      raft: {
        id: ctx.id,
        random: ctx.random,
        voters: options.joining ? [] : options.voters,
        electionTimeoutTicks: 10,
        heartbeatTicks: 1,
        maxSnapshotChunkBytes: options.maxSnapshotChunkBytes,
        ...(options.maxSizePerMsgBytes === undefined ? {} : { maxSizePerMsgBytes: options.maxSizePerMsgBytes }),
        maxInflightMsgs: 64,
      },
      storage,
      transport: this.probe?.wrapTransport(ctx.transport) ?? ctx.transport,
      scheduler: ctx.scheduler,
      clock: ctx.clock,
      stateMachine: {
        apply: (entries, conf) => {
          this.sm.apply(entries, conf);
          this.maybeSnapshot();
        },
        restore: (s) => {
          this.sm.restore(s);
          this.lastSnapshotIndex = s.meta.index;
        },
      },
      tickMs: options.tickMs,
      onError: (err) => {
        this.fatal = err;
      },
    });
  }

  static async boot(ctx: HostContext, options: RaftHostOptions): Promise<RaftHost> {
    const host = new RaftHost(ctx, options);
    await ctx.transport.start();
    await host.driver.start();
    return host;
  }

  private maybeSnapshot(): void {
    const applied = this.driver.appliedIndex;
    if (this.snapshotting || applied - this.lastSnapshotIndex < this.options.snapshotEveryEntries) return;
    this.snapshotting = true;
    const data = this.sm.encode();
    this.driver.createSnapshot(data, this.options.keepEntries).then(
      (s) => {
        if (s) this.lastSnapshotIndex = s.meta.index;
        this.snapshotting = false;
      },
      () => {
        this.snapshotting = false; // the host crashed mid-write; the next boot starts over
      },
    );
  }

  isLeader(): boolean {
    return this.driver.status().state === 'leader';
  }

  /** Proposes `value` under (clientId, seq); false when no leader is known. */
  propose(clientId: string, seq: number, value: string): boolean {
    try {
      this.driver.propose(encodeSessionEnvelope({ clientId, seq, payload: ENC.encode(value) }));
      return true;
    } catch {
      return false;
    }
  }

  proposeConfChange(cc: ConfChange): boolean {
    try {
      return this.driver.proposeConfChange(cc) !== undefined;
    } catch {
      return false;
    }
  }
}
