import { type ConfState, type PeerId, type RaftEntry, type RaftSnapshot, SeededRandom } from '@parley/interface';
import { decodeConfChange } from '../confchange.js';
import type { RaftConfig } from '../raft.js';
import { RawNode } from '../rawnode.js';
import { MemoryRaftStorage } from '../storage.js';
import type { Message, Ready } from '../types.js';

/**
 * An in-process Raft cluster for tests, benchmarks and simulations: each
 * member is a RawNode over MemoryRaftStorage with a toy state machine (the
 * list of applied normal entries), and messages wait in one queue until the
 * caller delivers, drops, duplicates or reorders them.
 */

const text = new TextDecoder();

export function entryText(e: RaftEntry): string {
  if (e.type === 'conf') {
    const cc = decodeConfChange(e.data);
    return `${cc.type}(${cc.node})`;
  }
  return JSON.stringify(text.decode(e.data));
}

export function describeEntry(e: RaftEntry): string {
  return `${e.term}/${e.index} ${e.type === 'conf' ? 'conf' : 'norm'} ${entryText(e)}`;
}

function ctxText(ctx: Uint8Array): string {
  return ctx.byteLength === 0 ? '' : ` ctx=${JSON.stringify(text.decode(ctx))}`;
}

export function describeMessage(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} term=${m.term}`;
  switch (m.type) {
    case 'prop':
      return `${head} entries=[${m.entries.map(entryText).join(', ')}]`;
    case 'app':
      return `${head} log=${m.logTerm}/${m.index} commit=${m.commit}${m.entries.length ? ` entries=[${m.entries.map((e) => `${e.term}/${e.index}`).join(' ')}]` : ''}`;
    case 'appResp':
      return m.reject
        ? `${head} reject index=${m.index} hint=${m.logTerm}/${m.rejectHint}`
        : `${head} index=${m.index}`;
    case 'vote':
    case 'preVote':
      return `${head} last=${m.logTerm}/${m.index}${m.transfer ? ' transfer' : ''}`;
    case 'voteResp':
    case 'preVoteResp':
      return `${head}${m.reject ? ' rejected' : ' granted'}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${ctxText(m.context)}`;
    case 'heartbeatResp':
      return `${head}${ctxText(m.context)}`;
    case 'snap':
      return `${head} snap=${m.meta.term}/${m.meta.index} voters=${m.meta.confState.voters.join(',')} bytes=${m.offset}+${m.data.byteLength}/${m.totalBytes}`;
    case 'snapResp':
      return `${head} snap=${m.index} offset=${m.offset}`;
    case 'timeoutNow':
      return head;
    case 'readIndex':
      return `${head}${ctxText(m.context)}`;
    case 'readIndexResp':
      return `${head} index=${m.index}${ctxText(m.context)}`;
    case 'transferLeader':
      return `${head} transferee=${m.transferee}`;
  }
}

export function describeReady(rd: Ready): string[] {
  const out: string[] = [];
  if (rd.softState) out.push(`Lead:${rd.softState.lead || '-'} State:${rd.softState.state}`);
  if (rd.hardState)
    out.push(`HardState Term:${rd.hardState.term} Vote:${rd.hardState.vote || '-'} Commit:${rd.hardState.commit}`);
  if (rd.entries.length) out.push('Entries:', ...rd.entries.map((e) => `  ${describeEntry(e)}`));
  if (rd.snapshot) {
    const m = rd.snapshot.meta;
    out.push(
      `Snapshot ${m.term}/${m.index} voters=${m.confState.voters.join(',')} learners=${m.confState.learners.join(',')}`,
    );
  }
  if (rd.committedEntries.length)
    out.push('CommittedEntries:', ...rd.committedEntries.map((e) => `  ${describeEntry(e)}`));
  if (rd.messages.length) out.push('Messages:', ...rd.messages.map((m) => `  ${describeMessage(m)}`));
  if (rd.messagesAfterPersist.length)
    out.push('MessagesAfterPersist:', ...rd.messagesAfterPersist.map((m) => `  ${describeMessage(m)}`));
  if (rd.readStates.length)
    out.push('ReadStates:', ...rd.readStates.map((r) => `  index=${r.index}${ctxText(r.context)}`));
  return out;
}

export interface ClusterNode {
  id: PeerId;
  storage: MemoryRaftStorage;
  node: RawNode;
  /** Applied normal entries (index, term, data) in order: the toy state machine. */
  applied: RaftEntry[];
  /** Index of the last applied entry (normal or conf) or snapshot. */
  appliedIndex: number;
  confState: ConfState;
  crashed: boolean;
  /** The membership the node was created with (used again on restart without a snapshot). */
  bootstrap: { voters: PeerId[]; learners: PeerId[] };
  readStates: { index: number; context: string }[];
}

export interface ClusterOptions {
  seed?: number;
  config?: Partial<Omit<RaftConfig, 'id' | 'storage' | 'random'>>;
  /** Called for every committed entry applied by any node (for invariant checks). */
  onApply?: (node: PeerId, e: RaftEntry) => void;
  log?: (line: string) => void;
}

/** The toy state machine's snapshot: applied entries as JSON. */
function encodeApplied(entries: RaftEntry[]): Uint8Array {
  const rows = entries.map((e) => [e.term, e.index, text.decode(e.data)]);
  return new TextEncoder().encode(JSON.stringify(rows));
}

function decodeApplied(data: Uint8Array): RaftEntry[] {
  if (data.byteLength === 0) return [];
  const rows = JSON.parse(text.decode(data)) as [number, number, string][];
  return rows.map(([term, index, s]) => ({ term, index, type: 'normal', data: new TextEncoder().encode(s) }));
}

export class Cluster {
  readonly nodes = new Map<PeerId, ClusterNode>();
  queue: Message[] = [];
  /** Directed links that drop every message: `${from}>${to}`. */
  readonly cut = new Set<string>();
  readonly random: SeededRandom;
  private readonly opts: ClusterOptions;

  constructor(opts: ClusterOptions = {}) {
    this.opts = opts;
    this.random = new SeededRandom(opts.seed ?? 1);
  }

  private log(line: string): void {
    this.opts.log?.(line);
  }

  ids(): PeerId[] {
    return [...this.nodes.keys()];
  }

  /** Adds members with empty storage; `voters`/`learners` is their bootstrap membership. */
  add(id: PeerId, membership: { voters: PeerId[]; learners?: PeerId[] }): ClusterNode {
    const storage = new MemoryRaftStorage();
    const cn: ClusterNode = {
      id,
      storage,
      node: this.makeNode(id, storage, membership),
      applied: [],
      appliedIndex: 0,
      confState: { voters: [...membership.voters], learners: [...(membership.learners ?? [])] },
      crashed: false,
      bootstrap: { voters: [...membership.voters], learners: [...(membership.learners ?? [])] },
      readStates: [],
    };
    this.nodes.set(id, cn);
    return cn;
  }

  private makeNode(
    id: PeerId,
    storage: MemoryRaftStorage,
    membership: { voters: PeerId[]; learners?: PeerId[] },
    applied?: number,
  ): RawNode {
    return new RawNode({
      ...this.opts.config,
      id,
      storage,
      random: this.random.fork(),
      voters: membership.voters,
      learners: membership.learners ?? [],
      applied,
    });
  }

  get(id: PeerId): ClusterNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  /** Handles every pending Ready of `id`; returns the lines describing them. */
  processReady(id: PeerId): string[] {
    const cn = this.get(id);
    const out: string[] = [];
    if (cn.crashed) return out;
    while (cn.node.hasReady()) {
      const rd = cn.node.ready();
      out.push(...describeReady(rd));
      void cn.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState });
      for (const m of rd.messages) this.queue.push(m);
      for (const m of rd.messagesAfterPersist) this.queue.push(m);
      if (rd.snapshot) this.applySnapshot(cn, rd.snapshot);
      for (const e of rd.committedEntries) this.applyEntry(cn, e);
      for (const r of rd.readStates) cn.readStates.push({ index: r.index, context: text.decode(r.context) });
      cn.node.advance();
    }
    return out;
  }

  private applySnapshot(cn: ClusterNode, snap: RaftSnapshot): void {
    cn.applied = decodeApplied(snap.data);
    cn.appliedIndex = snap.meta.index;
    cn.confState = { voters: [...snap.meta.confState.voters], learners: [...snap.meta.confState.learners] };
  }

  private applyEntry(cn: ClusterNode, e: RaftEntry): void {
    cn.appliedIndex = e.index;
    if (e.type === 'conf') {
      cn.confState = cn.node.applyConfChange(decodeConfChange(e.data));
    } else if (e.data.byteLength > 0) {
      cn.applied.push(e);
    }
    this.opts.onApply?.(cn.id, e);
  }

  /** Delivers queued messages addressed to `to` (all when undefined); returns description lines. */
  deliver(to?: PeerId, drop?: ReadonlySet<PeerId>): string[] {
    const out: string[] = [];
    const keep: Message[] = [];
    const take: Message[] = [];
    for (const m of this.queue) {
      if (to === undefined || m.to === to) take.push(m);
      else keep.push(m);
    }
    this.queue = keep;
    for (const m of take) {
      const target = this.nodes.get(m.to);
      if (drop?.has(m.to) || !target || target.crashed || this.cut.has(`${m.from}>${m.to}`)) {
        out.push(`  dropped: ${describeMessage(m)}`);
        continue;
      }
      out.push(`  ${describeMessage(m)}`);
      target.node.step(m);
    }
    return out;
  }

  /** Delivers one message (already removed from the queue); returns false when it was dropped. */
  deliverMessage(m: Message): boolean {
    const target = this.nodes.get(m.to);
    if (!target || target.crashed || this.cut.has(`${m.from}>${m.to}`)) return false;
    target.node.step(m);
    return true;
  }

  /** Processes Readys and delivers messages until the cluster is quiet. */
  stabilize(maxRounds = 1000): string[] {
    const out: string[] = [];
    for (let round = 0; round < maxRounds; round++) {
      let busy = false;
      for (const id of this.ids()) {
        const lines = this.processReady(id);
        if (lines.length) {
          busy = true;
          out.push(`> ${id} handling Ready`, ...lines.map((l) => `  ${l}`));
        }
      }
      for (const id of this.ids()) {
        if (!this.queue.some((m) => m.to === id)) continue;
        busy = true;
        out.push(`> ${id} receiving messages`, ...this.deliver(id).map((l) => `  ${l}`));
      }
      if (!busy) return out;
    }
    throw new Error('stabilize: cluster did not quiesce');
  }

  tick(id: PeerId, n = 1): void {
    const cn = this.get(id);
    if (cn.crashed) return;
    for (let i = 0; i < n; i++) cn.node.tick();
  }

  /** Cuts every link between the groups (both directions). */
  partition(...groups: PeerId[][]): void {
    for (const g of groups) {
      for (const h of groups) {
        if (g === h) continue;
        for (const a of g) for (const b of h) this.cut.add(`${a}>${b}`);
      }
    }
  }

  heal(): void {
    this.cut.clear();
  }

  /** Snapshots the toy state machine of `id` at its applied index and compacts its log. */
  snapshot(id: PeerId): RaftSnapshot | undefined {
    const cn = this.get(id);
    if (cn.appliedIndex <= cn.storage.snapshot().meta.index) return undefined;
    // MemoryRaftStorage applies inside the call, so both take effect now.
    void cn.storage.createSnapshot(cn.appliedIndex, cn.confState, encodeApplied(cn.applied));
    void cn.storage.compact(cn.appliedIndex);
    return cn.storage.snapshot();
  }

  crash(id: PeerId): void {
    const cn = this.get(id);
    cn.crashed = true;
    this.queue = this.queue.filter((m) => m.to !== id && m.from !== id);
  }

  /** Restarts `id` from its storage; the toy state machine restarts from the snapshot. */
  restart(id: PeerId): void {
    const cn = this.get(id);
    const snap = cn.storage.snapshot();
    cn.applied = decodeApplied(snap.data);
    cn.appliedIndex = snap.meta.index;
    const cs = snap.meta.confState;
    cn.confState = { voters: [...cs.voters], learners: [...cs.learners] };
    cn.node = this.makeNode(id, cn.storage, cn.bootstrap);
    cn.crashed = false;
  }

  leaders(): ClusterNode[] {
    return [...this.nodes.values()].filter((n) => !n.crashed && n.node.raft.state === 'leader');
  }
}
