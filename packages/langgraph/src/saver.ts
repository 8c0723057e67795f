/**
 * `ParleySaver`: a LangGraph.js checkpoint saver on Parley strong namespaces.
 *
 * Layout: the index namespace (`namespace`, default `langgraph`) has one entry
 * per thread; each thread's entries live in their own strong namespace
 * (`<namespace>-<hash of the thread id>`): checkpoint heads `c:<ns>:<id>`,
 * channel values `b:<ns>:<channel>:<version>` (written only for the channels
 * a checkpoint changed), pending writes `w:<ns>:<id>:<task>` (one entry per
 * task, merged by compare-and-swap) and payload chunks. A put writes the
 * channel values first and the head last, so a reader that finds a head finds
 * everything it names.
 *
 * Ownership: `ownThread` (or the `owner` option) takes the thread's fenced
 * lock; every write to an owned thread carries the fence, and the store
 * refuses it once another writer took the thread over (`ownership.ts`).
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  getCheckpointId,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey,
} from '@langchain/langgraph-checkpoint';
import { InvalidArgumentError, isParleyError } from '@parley/interface';
import type { FenceToken, JsonValue, ParleyNode, StrongEntry, StrongNamespace } from '@parley/node';
import { Gate, GatedNamespace } from './gate.js';
import {
  blobKey,
  checkId,
  checkPrefix,
  checkpointKey,
  checkThreadId,
  literal,
  nsHash,
  threadNamespace,
  writesKey,
} from './keys.js';
import { Lifetimes } from './lifetimes.js';
import { metadataFields, metadataFilter, metadataMatches } from './metadata.js';
import { type OwnThreadOptions, resolveOwnOptions, ThreadLease } from './ownership.js';
import { listAll } from './pages.js';
import { isConflict, readEntry, type WriteContext, writeEntry } from './payload.js';
import { decodeSerialized, encodeSerialized, type Serialized } from './serde.js';

/**
 * 14 days. Channel values and the thread index live twice as long (see
 * lifetimes.ts), and payload chunks a minute more: within Parley's largest
 * strong TTL (30 days).
 */
export const DEFAULT_CHECKPOINT_TTL_SECONDS = 14 * 86_400;
export const DEFAULT_CHUNK_BYTES = 256 * 1024;
const MAX_CAS_ATTEMPTS = 8;

export interface ParleySaverOptions {
  /** The Parley node whose strong namespaces hold the checkpoints. */
  node: ParleyNode;
  /** Index namespace and prefix of the per-thread namespaces (default `langgraph`). */
  namespace?: string;
  /**
   * Seconds a checkpoint lives after it was written (default 14 days); channel
   * values and the thread's index entry live twice that (refreshed while the
   * thread is written), so 2·ttl + 60 must be within the node's strong TTL bound.
   */
  ttlSeconds?: number;
  /** Largest payload kept inline and largest chunk, in UTF-8 bytes of JSON (default 256 KiB; keep it well under the node's value limit). */
  chunkBytes?: number;
  serde?: SerializerProtocol;
  /**
   * Own every thread this saver touches: the first call on a thread takes its
   * lock (as `ownThread(threadId, owner)`), before the first read, so a graph
   * resumes from the state its owner last wrote.
   */
  owner?: OwnThreadOptions;
}

interface HeadFields {
  k: 'c';
  nh: string;
  ns: string;
  id: string;
  parent: string | null;
  mf: Record<string, JsonValue>;
}

interface WritesPayload {
  path: string;
  /** [idx, channel, serialized value] */
  writes: Array<[number, string, Serialized]>;
}

function configurable(config: RunnableConfig): Record<string, unknown> {
  return (config?.configurable ?? {}) as Record<string, unknown>;
}

export class ParleySaver extends BaseCheckpointSaver {
  readonly namespace: string;
  readonly ttlSeconds: number;
  readonly chunkBytes: number;
  private readonly node: ParleyNode;
  private readonly owner: ReturnType<typeof resolveOwnOptions> | undefined;
  private readonly leases = new Map<string, ThreadLease>();
  private readonly acquiring = new Map<string, Promise<ThreadLease>>();
  private readonly lifetimes = new Lifetimes();
  private readonly gate = new Gate();

  constructor(options: ParleySaverOptions) {
    super(options.serde);
    if (!options?.node) throw new InvalidArgumentError('ParleySaver needs a node');
    this.node = options.node;
    this.namespace = checkPrefix(options.namespace ?? 'langgraph');
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_CHECKPOINT_TTL_SECONDS;
    if (!Number.isSafeInteger(this.ttlSeconds) || this.ttlSeconds < 1) {
      throw new InvalidArgumentError('ttlSeconds must be a positive integer');
    }
    this.chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (!Number.isSafeInteger(this.chunkBytes) || this.chunkBytes < 64) {
      throw new InvalidArgumentError('chunkBytes must be an integer ≥ 64');
    }
    this.owner = options.owner ? resolveOwnOptions(options.owner) : undefined;
  }

  // ------------------------------------------------------------ ownership

  /**
   * Takes single-writer ownership of a thread: its fenced lock, renewed in
   * the background. From then on every write of this saver to the thread
   * carries the fence, and is refused by the store (`fence_stale`) once
   * another owner took over; after a lost renewal writes fail at once with
   * `lease_lost`. Fails with `lock_held` while another writer owns it (after
   * `wait` seconds in the lock's queue).
   */
  async ownThread(threadId: string, options: OwnThreadOptions): Promise<ThreadLease> {
    const id = checkThreadId(threadId);
    const o = resolveOwnOptions(options);
    const current = this.leases.get(id);
    if (current && !current.lost) {
      if (current.holder === o.holder) return current;
      throw new InvalidArgumentError(`thread '${id}' is already owned by '${current.holder}' in this saver`);
    }
    const locks = this.node.locks(this.namespace);
    const grant = await locks.acquire(id, { owner: o.holder, ttl: o.ttl, wait: o.wait });
    const lease = new ThreadLease(locks, id, grant, o.ttl, o.renewEveryMs);
    this.leases.set(id, lease);
    return lease;
  }

  /** The live or lost ownership of a thread this saver took, if any. */
  lease(threadId: string): ThreadLease | undefined {
    return this.leases.get(threadId);
  }

  /** Stops the background renewals and releases every thread this saver owns. */
  async close(): Promise<void> {
    const leases = [...this.leases.values()];
    this.leases.clear();
    await Promise.all(leases.map((l) => l.release().catch(() => {})));
  }

  private async ensureOwned(threadId: string): Promise<ThreadLease | undefined> {
    const existing = this.leases.get(threadId);
    if (existing) return existing;
    if (!this.owner) return undefined;
    let pending = this.acquiring.get(threadId);
    if (!pending) {
      pending = this.ownThread(threadId, this.owner).finally(() => this.acquiring.delete(threadId));
      this.acquiring.set(threadId, pending);
    }
    return pending;
  }

  /** The fence for a write to `threadId` (none if not owned); `lease_lost` once ownership is known lost. */
  private async writeFence(threadId: string): Promise<FenceToken | undefined> {
    const lease = await this.ensureOwned(threadId);
    if (!lease) return undefined;
    lease.check();
    return lease.token;
  }

  /** Runs a write; a refusal for a stale fence marks the ownership lost. */
  private async fenced<T>(threadId: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (isParleyError(err, 'fence_stale')) this.leases.get(threadId)?.markLost(err);
      throw err;
    }
  }

  // ------------------------------------------------------------ layout

  private threadNs(threadId: string): StrongNamespace {
    return new GatedNamespace(this.node.strong(threadNamespace(this.namespace, threadId)), this.gate);
  }

  private indexNs(): StrongNamespace {
    return new GatedNamespace(this.node.strong(this.namespace), this.gate);
  }

  /** Where and how a write to the thread goes; `long` for channel values (twice the checkpoint TTL). */
  private writer(threadId: string, fence: FenceToken | undefined, long = false): WriteContext {
    return {
      ns: this.threadNs(threadId),
      ttl: long ? 2 * this.ttlSeconds : this.ttlSeconds,
      chunkBytes: this.chunkBytes,
      ...(fence ? { fence } : {}),
    };
  }

  /** Writes the thread's index entry unless it is known to outlive `until` (state-machine ms; 0: exists at all). */
  private async indexThread(threadId: string, fence: FenceToken | undefined, until: number): Promise<void> {
    const index = this.indexNs();
    const known = this.lifetimes.expiry(index.name, threadId);
    if (known !== undefined && known >= until) return;
    const value = { k: 't', thread: threadId, ns: threadNamespace(this.namespace, threadId) };
    const entry = await index.set(threadId, value, { ttl: 2 * this.ttlSeconds, ...(fence ? { fence } : {}) });
    this.lifetimes.note(index.name, entry);
  }

  // ------------------------------------------------------------ reads

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const c = configurable(config);
    if (c.thread_id === undefined) return undefined;
    const threadId = checkThreadId(c.thread_id);
    const checkpointNs = checkId('checkpoint_ns', c.checkpoint_ns ?? '', true);
    const checkpointId = getCheckpointId(config);
    await this.ensureOwned(threadId);
    const ns = this.threadNs(threadId);
    let head: StrongEntry | undefined;
    if (checkpointId) {
      head = await ns.get(checkpointKey(checkpointNs, checkpointId));
    } else {
      const page = await ns.list({
        filter: `k = "c" and nh = ${literal(nsHash(checkpointNs))}`,
        sortBy: 'key',
        sortOrder: 'desc',
        limit: 1,
      });
      head = page.items[0];
    }
    if (!head || (head.value as Partial<HeadFields> | null)?.ns !== checkpointNs) return undefined;
    return this.loadTuple(threadId, ns, head);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const c = configurable(config);
    const { before, filter } = options;
    let remaining = options.limit;
    if (remaining !== undefined && remaining <= 0) return;
    const checkpointNs = c.checkpoint_ns === undefined ? undefined : checkId('checkpoint_ns', c.checkpoint_ns, true);
    const checkpointId = c.checkpoint_id === undefined || c.checkpoint_id === '' ? undefined : c.checkpoint_id;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    const conditions = ['k = "c"'];
    if (checkpointNs !== undefined) conditions.push(`nh = ${literal(nsHash(checkpointNs))}`);
    if (typeof checkpointId === 'string') conditions.push(`id = ${literal(checkpointId)}`);
    if (typeof beforeId === 'string' && beforeId !== '') conditions.push(`id < ${literal(beforeId)}`);
    const pushed = metadataFilter(filter);
    conditions.push(...pushed.conditions);
    const expression = conditions.join(' and ');
    const threads = c.thread_id !== undefined ? [checkThreadId(c.thread_id)] : await this.indexedThreads();
    for (const threadId of threads) {
      const ns = this.threadNs(threadId);
      for await (const head of listAll(ns, { filter: expression, sortBy: 'key', sortOrder: 'desc' })) {
        const fields = head.value as Partial<HeadFields> | null;
        if (checkpointNs !== undefined && fields?.ns !== checkpointNs) continue;
        const tuple = await this.loadTuple(threadId, ns, head);
        if (!tuple) continue;
        if (!pushed.complete && !metadataMatches(tuple.metadata, filter)) continue;
        yield tuple;
        if (remaining !== undefined && --remaining <= 0) return;
      }
    }
  }

  private async indexedThreads(): Promise<string[]> {
    const threads: string[] = [];
    for await (const e of listAll(this.indexNs(), { filter: 'k = "t"', sortBy: 'key' })) {
      const t = (e.value as { thread?: unknown } | null)?.thread;
      if (typeof t === 'string') threads.push(t);
    }
    return threads;
  }

  private async loadTuple(
    threadId: string,
    ns: StrongNamespace,
    found: StrongEntry,
  ): Promise<CheckpointTuple | undefined> {
    const read = await readEntry(ns, found.key, found);
    if (!read) return undefined;
    const fields = read.entry.value as unknown as HeadFields;
    const [cp, md] = JSON.parse(read.text) as [Serialized, Serialized];
    const checkpoint = (await decodeSerialized(this.serde, cp)) as Checkpoint;
    const metadata = (await decodeSerialized(this.serde, md)) as CheckpointMetadata;
    checkpoint.channel_values = await this.loadChannels(ns, fields.ns, checkpoint.channel_versions ?? {});
    const pendingWrites = await this.loadWrites(ns, fields.ns, fields.id);
    if (checkpoint.v < 4 && fields.parent !== null) {
      const sends = (await this.loadWrites(ns, fields.ns, fields.parent)).filter(([, ch]) => ch === TASKS);
      checkpoint.channel_values[TASKS] = sends.map(([, , v]) => v);
      checkpoint.channel_versions ??= {};
      const versions = Object.values(checkpoint.channel_versions);
      checkpoint.channel_versions[TASKS] =
        versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: fields.ns, checkpoint_id: fields.id } },
      checkpoint,
      metadata,
      pendingWrites,
    };
    if (fields.parent !== null) {
      tuple.parentConfig = {
        configurable: { thread_id: threadId, checkpoint_ns: fields.ns, checkpoint_id: fields.parent },
      };
    }
    return tuple;
  }

  private async loadChannels(
    ns: StrongNamespace,
    checkpointNs: string,
    versions: ChannelVersions,
  ): Promise<Record<string, unknown>> {
    const values: Record<string, unknown> = {};
    await Promise.all(
      Object.entries(versions).map(async ([channel, version]) => {
        const key = blobKey(checkpointNs, channel, version);
        const read = await readEntry(ns, key);
        if (!read) return;
        this.lifetimes.note(ns.name, read.entry);
        const blob = JSON.parse(read.text) as Serialized | null;
        if (blob === null) return; // the channel was emptied at this version
        values[channel] = await decodeSerialized(this.serde, blob);
      }),
    );
    return values;
  }

  /** Pending writes of one checkpoint in `writesSortKey` order. */
  private async loadWrites(ns: StrongNamespace, checkpointNs: string, checkpointId: string) {
    const filter = `k = "w" and nh = ${literal(nsHash(checkpointNs))} and cp = ${literal(checkpointId)}`;
    const rows: Array<{ sort: readonly [string, string, number]; write: CheckpointPendingWrite }> = [];
    for await (const e of listAll(ns, { filter, sortBy: 'key' })) {
      const f = e.value as { ns?: unknown; task?: unknown } | null;
      if (f?.ns !== checkpointNs || typeof f.task !== 'string') continue;
      const read = await readEntry(ns, e.key, e);
      if (!read) continue;
      const payload = JSON.parse(read.text) as WritesPayload;
      for (const [idx, channel, value] of payload.writes) {
        rows.push({
          sort: writesSortKey(payload.path, f.task, idx),
          write: [f.task, channel, await decodeSerialized(this.serde, value)],
        });
      }
    }
    rows.sort((a, b) => compareWritesSortKeys(a.sort, b.sort));
    return rows.map((r) => r.write);
  }

  // ------------------------------------------------------------ writes

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const c = configurable(config);
    if (c.thread_id === undefined) {
      throw new InvalidArgumentError('put needs config.configurable.thread_id: the thread the checkpoint belongs to');
    }
    const threadId = checkThreadId(c.thread_id);
    const checkpointNs = checkId('checkpoint_ns', c.checkpoint_ns ?? '', true);
    const id = checkId('checkpoint.id', checkpoint?.id);
    const parent = typeof c.checkpoint_id === 'string' && c.checkpoint_id !== '' ? c.checkpoint_id : null;
    const fence = await this.writeFence(threadId);
    const w = this.writer(threadId, fence);
    const long = this.writer(threadId, fence, true);
    await this.fenced(threadId, async () => {
      await this.indexThread(threadId, fence, 0);
      const { channel_values: values = {}, ...rest } = checkpoint;
      const changed = newVersions ?? {};
      // Channel values first (only those this checkpoint changed), the head last.
      await Promise.all(
        Object.entries(changed).map(async ([channel, version]) => {
          const has = Object.hasOwn(values, channel) && (values as Record<string, unknown>)[channel] !== undefined;
          const blob = has ? await encodeSerialized(this.serde, (values as Record<string, unknown>)[channel]) : null;
          const key = blobKey(checkpointNs, channel, version);
          this.lifetimes.note(w.ns.name, await writeEntry(long, key, { k: 'b' }, JSON.stringify(blob)));
        }),
      );
      const text = JSON.stringify([
        await encodeSerialized(this.serde, rest),
        await encodeSerialized(this.serde, metadata),
      ]);
      const fields: HeadFields = {
        k: 'c',
        nh: nsHash(checkpointNs),
        ns: checkpointNs,
        id,
        parent,
        mf: metadataFields(metadata),
      };
      const head = await writeEntry(
        w,
        checkpointKey(checkpointNs, id),
        fields as unknown as Record<string, JsonValue>,
        text,
      );
      // What the head names from earlier checkpoints, and the index, must outlive it.
      const unchanged = Object.entries(checkpoint.channel_versions ?? {})
        .filter(([channel]) => !Object.hasOwn(changed, channel))
        .map(([channel, version]) => blobKey(checkpointNs, channel, version));
      await this.lifetimes.outlive(long, unchanged, head.expiresAt);
      await this.indexThread(threadId, fence, head.expiresAt);
    });
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const c = configurable(config);
    if (c.thread_id === undefined) {
      throw new InvalidArgumentError('putWrites needs config.configurable.thread_id');
    }
    if (c.checkpoint_id === undefined || c.checkpoint_id === '') {
      throw new InvalidArgumentError('putWrites needs config.configurable.checkpoint_id: the checkpoint they follow');
    }
    const threadId = checkThreadId(c.thread_id);
    const checkpointNs = checkId('checkpoint_ns', c.checkpoint_ns ?? '', true);
    const checkpointId = checkId('checkpoint_id', c.checkpoint_id);
    const task = checkId('taskId', taskId);
    const incoming = await Promise.all(
      writes.map(
        async ([channel, value], i): Promise<[number, string, Serialized]> => [
          WRITES_IDX_MAP[channel] ?? i,
          channel,
          await encodeSerialized(this.serde, value),
        ],
      ),
    );
    const fence = await this.writeFence(threadId);
    const w = this.writer(threadId, fence);
    const key = writesKey(checkpointNs, checkpointId, task);
    await this.fenced(threadId, async () => {
      await this.indexThread(threadId, fence, 0);
      for (let attempt = 0; ; attempt++) {
        const current = await readEntry(w.ns, key);
        const payload: WritesPayload = current
          ? (JSON.parse(current.text) as WritesPayload)
          : { path: taskPath ?? '', writes: [] };
        const byIdx = new Map(payload.writes.map((x) => [x[0], x]));
        let changed = current === undefined;
        for (const x of incoming) {
          // A regular write is kept once stored (a retried task writes the same); special ones are replaced.
          if (x[0] >= 0 && byIdx.has(x[0])) continue;
          byIdx.set(x[0], x);
          changed = true;
        }
        if (!changed) return;
        payload.writes = [...byIdx.values()].sort((a, b) => a[0] - b[0]);
        if (taskPath !== undefined && payload.path === '') payload.path = taskPath;
        const fields = { k: 'w', nh: nsHash(checkpointNs), ns: checkpointNs, cp: checkpointId, task };
        try {
          await writeEntry(
            w,
            key,
            fields,
            JSON.stringify(payload),
            current ? { ifVersion: current.entry.version, previous: current.entry } : { ifNotExists: true },
          );
          return;
        } catch (err) {
          if (!isConflict(err) || attempt + 1 >= MAX_CAS_ATTEMPTS) throw err;
        }
      }
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    const id = checkThreadId(threadId);
    const fence = await this.writeFence(id);
    await this.fenced(id, async () => {
      // The index entry first (fenced), so a stale owner's delete is refused before it removes anything.
      await this.indexNs().delete(id, fence ? { fence } : {});
      await this.threadNs(id).deleteNamespace({ confirm: true });
    });
    this.lifetimes.forgetNamespace(threadNamespace(this.namespace, id));
    this.lifetimes.forgetNamespace(this.namespace);
  }
}
