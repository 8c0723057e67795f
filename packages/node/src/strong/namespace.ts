/**
 * `node.strong(ns)`: a strong namespace over the node's strong backend (the
 * Raft group, or etcd). Writes apply exactly once; reads are linearizable;
 * every failure is coord's typed error.
 */
import {
  type StrongReadOptions as BackendReadOptions,
  type DocStore,
  doc,
  type JsonValue,
  type LeaseView,
  type Operation,
  type OpResult,
  readConsistency,
  type StrongBackend,
} from '@parley/coord';
import {
  type Clock,
  InvalidArgumentError,
  isParleyError,
  systemClock,
  UnavailableError,
  type Unsubscribe,
} from '@parley/interface';
import type {
  ClaimResult,
  FenceToken,
  Lease,
  ListPage,
  StrongChange,
  StrongDoc,
  StrongEntry,
  StrongListQuery,
  StrongNamespace,
  StrongReadOptions,
  StrongSetResult,
  StrongWatchOptions,
  StrongWriteOptions,
  WriteOperation,
} from '../api.js';
import type { QueueOptions, StrongQueue } from '../queue-api.js';
import type { Session } from '../session/session.js';
import { StrongQueueImpl } from './queue.js';

/** Keys one deleteNamespace command deletes at most (the node repeats until none match). */
export const DELETE_NAMESPACE_CHUNK = 1000;
/** Commands of one deleteNamespace at most (a key is deleted once, so only concurrent creates reach it). */
const MAX_DELETE_NAMESPACE_CHUNKS = 1000;

function expect<T extends OpResult['type']>(r: OpResult, type: T): Extract<OpResult, { type: T }> {
  if (r.type !== type) throw new InvalidArgumentError(`expected a '${type}' result, got '${r.type}'`);
  return r as Extract<OpResult, { type: T }>;
}

/** The entry with its `operation` (and the deprecated, non-enumerable `entry` alias of the old shape). */
function setResult(entry: StrongEntry, operation: WriteOperation): StrongSetResult {
  const result = { ...entry, operation } as StrongSetResult;
  Object.defineProperty(result, 'entry', { value: entry, enumerable: false, writable: false, configurable: true });
  return result;
}

/**
 * The call's session as the backend's option, checked first (`invalid_argument`
 * when it has outgrown the token's limits): the backend waits for it where a
 * read needs to and observes into it what the call wrote or saw.
 */
function withSession(session: Session | undefined): { session?: Session } {
  if (session === undefined) return {};
  session.check();
  return { session };
}

/** The backend's read options for a public call's (validated: `invalid_argument` on a bad mix). */
function readOptions(o: StrongReadOptions): BackendReadOptions {
  const consistency = readConsistency(o);
  const out: BackendReadOptions = withSession(o.session);
  if (consistency.level !== 'linearizable') out.consistency = consistency;
  if (o.timeoutMs !== undefined) out.timeoutMs = o.timeoutMs;
  return out;
}

function fenceRef(f: FenceToken): { namespace: string; key: string; token: number } {
  return { namespace: f.namespace, key: f.key, token: f.fence };
}

export class StrongNamespaceImpl implements StrongNamespace {
  constructor(
    readonly name: string,
    private readonly calls: StrongBackend,
    /** Resolves on a later turn of the event loop (between the commands of one deleteNamespace). */
    private readonly nextTurn: () => Promise<void> = () => new Promise((resolve) => setImmediate(resolve)),
    /** The node's clock: a queue's take reads it to skip tasks whose lease is still running. */
    private readonly clock: Clock = systemClock,
  ) {}

  queue(name: string, options?: QueueOptions): StrongQueue {
    return new StrongQueueImpl(this.name, name, this.calls, this.clock, options);
  }

  async set(key: string, value: JsonValue, options: StrongWriteOptions = {}): Promise<StrongSetResult> {
    const op: Extract<Operation, { type: 'set' }> = { type: 'set', namespace: this.name, key, value };
    if (options.ttl !== undefined) op.ttlSeconds = options.ttl;
    if (options.ifVersion !== undefined) op.ifVersion = options.ifVersion;
    if (options.ifNotExists !== undefined) op.ifNotExists = options.ifNotExists;
    if (options.fence !== undefined) op.fence = fenceRef(options.fence);
    const r = expect(
      await this.calls.write(op, { timeoutMs: options.timeoutMs, ...withSession(options.session) }),
      'entry',
    );
    return setResult(r.entry, r.operation);
  }

  async get(key: string, options: StrongReadOptions = {}): Promise<StrongEntry | undefined> {
    const read = readOptions(options);
    try {
      return expect(await this.calls.read({ type: 'get', namespace: this.name, key }, read), 'got').entry;
    } catch (err) {
      if (isParleyError(err, 'key_not_found')) return undefined;
      throw err;
    }
  }

  async delete(
    key: string,
    options: { ifVersion?: string; fence?: FenceToken; session?: Session } = {},
  ): Promise<boolean> {
    const op: Extract<Operation, { type: 'delete' }> = { type: 'delete', namespace: this.name, key };
    if (options.ifVersion !== undefined) op.ifVersion = options.ifVersion;
    if (options.fence !== undefined) op.fence = fenceRef(options.fence);
    try {
      expect(await this.calls.write(op, withSession(options.session)), 'deleted');
      return true;
    } catch (err) {
      if (isParleyError(err, 'key_not_found') && options.ifVersion === undefined) return false;
      throw err;
    }
  }

  async list(query: StrongListQuery = {}): Promise<ListPage<StrongEntry>> {
    const read = readOptions(query);
    const op: Extract<Operation, { type: 'list' }> = { type: 'list', namespace: this.name };
    if (query.q !== undefined) op.q = query.q;
    if (query.prefix !== undefined) op.prefix = query.prefix;
    if (query.filter !== undefined) op.filter = query.filter;
    if (query.sortBy !== undefined) op.sortBy = query.sortBy;
    if (query.sortOrder !== undefined) op.sortOrder = query.sortOrder;
    if (query.limit !== undefined) op.limit = query.limit;
    if (query.cursor !== undefined) op.cursor = query.cursor;
    const r = expect(await this.calls.read(op, read), 'list');
    return { items: r.items, nextCursor: r.nextCursor };
  }

  /**
   * One command per DELETE_NAMESPACE_CHUNK matching keys (in key order), each
   * atomic and applied once, a turn of the event loop apart, so no single
   * stretch holds the loop (and Raft) for a whole namespace; the sequence is
   * not atomic (docs/guarantees.md).
   */
  async deleteNamespace(options: {
    confirm: boolean;
    pattern?: string;
  }): Promise<{ deleted_count: number; namespace: string; pattern_used: string }> {
    const op: Extract<Operation, { type: 'delete_namespace' }> = {
      type: 'delete_namespace',
      namespace: this.name,
      confirm: options.confirm,
      maxKeys: DELETE_NAMESPACE_CHUNK,
    };
    if (options.pattern !== undefined) op.pattern = options.pattern;
    let deleted = 0;
    // Each command starts after the last key of the one before: a key is visited at most once.
    for (let chunk = 0; chunk < MAX_DELETE_NAMESPACE_CHUNKS; chunk++) {
      const r = expect(await this.calls.write(op), 'namespace_deleted');
      deleted += r.deleted_count;
      if (r.resume_after === undefined)
        return { deleted_count: deleted, namespace: r.namespace, pattern_used: r.pattern_used };
      op.after = r.resume_after;
      // With storage that answers without I/O, the next command could otherwise apply in the same turn.
      await this.nextTurn();
    }
    throw new UnavailableError(
      `deleteNamespace: writers kept adding matching keys through ${MAX_DELETE_NAMESPACE_CHUNKS} chunks; retry`,
      { namespace: this.name },
    );
  }

  async claim(key: string, value: JsonValue, options: { ttl?: number; session?: Session } = {}): Promise<ClaimResult> {
    const op: Extract<Operation, { type: 'claim' }> = { type: 'claim', namespace: this.name, key, value };
    if (options.ttl !== undefined) op.ttlSeconds = options.ttl;
    const r = expect(await this.calls.write(op, withSession(options.session)), 'claim');
    return { won: r.won, value: r.value, version: r.version, entry: r.entry };
  }

  async lease(
    key: string,
    options: { ttl: number; holder: string; state?: JsonValue; session?: Session },
  ): Promise<Lease> {
    const op: Extract<Operation, { type: 'lease_acquire' }> = {
      type: 'lease_acquire',
      namespace: this.name,
      key,
      holder: options.holder,
      ttlSeconds: options.ttl,
    };
    if (options.state !== undefined) op.state = options.state;
    const r = expect(await this.calls.write(op, withSession(options.session)), 'lease');
    return new StrongLease(this.calls, r.lease, options.ttl, options.session);
  }

  async attach(key: string, holder: string, options: { session?: Session } = {}): Promise<Lease | undefined> {
    const r = await this.calls.read(
      { type: 'lease_attach', namespace: this.name, key, holder },
      withSession(options.session),
    );
    if (r.type === 'lease_absent') return undefined;
    const view = expect(r, 'lease').lease;
    return new StrongLease(this.calls, view, view.ttlSeconds, options.session);
  }

  doc<T extends JsonValue>(key: string): StrongDoc<T> {
    return strongDoc<T>(this, key);
  }

  watch(options: StrongWatchOptions, callback: (change: StrongChange) => void): Unsubscribe {
    const from = options.fromRevision;
    if (from !== undefined && (!Number.isSafeInteger(from) || from < 0)) {
      throw new InvalidArgumentError('fromRevision must be a non-negative integer');
    }
    const filter =
      options.prefix === undefined ? { namespace: this.name } : { namespace: this.name, prefix: options.prefix };
    return this.calls.watch(filter, from, callback, options.onError);
  }
}

/**
 * `doc(key)` over any strong namespace's own `get`, `set` and `delete` (coord's loop: read, apply,
 * conditional write, retry on conflict). The node's namespaces use it, and so can a wrapper of one
 * (the simulator's recorded node), so every read and write of the loop goes through the wrapper.
 */
export function strongDoc<T extends JsonValue>(
  ns: Pick<StrongNamespace, 'get' | 'set' | 'delete'>,
  key: string,
): StrongDoc<T> {
  return {
    update: async (fn, options = {}) => {
      let written: StrongEntry | undefined;
      const session = options.session === undefined ? {} : { session: options.session };
      const store: DocStore = {
        get: async (k) => {
          const e = await ns.get(k, session);
          return e === undefined ? undefined : { value: e.value, version: e.version };
        },
        set: async (k, value, condition) => {
          const r = await ns.set(k, value, {
            ...condition,
            ...(options.ttl !== undefined ? { ttl: options.ttl } : {}),
            ...session,
          });
          written = r;
          return { version: r.version };
        },
        delete: async (k) => {
          await ns.delete(k, session);
        },
      };
      await doc<T>(store, key).update(fn, options.create !== undefined ? { create: options.create } : {});
      return written as StrongEntry;
    },
  };
}

/** One ownership period of a lease (namespace, key, holder, epoch); every call is fenced by the state machine. */
export class StrongLease implements Lease {
  private current: LeaseView;
  readonly holder: string;
  readonly epoch: number;

  constructor(
    private readonly calls: StrongBackend,
    view: LeaseView,
    private readonly ttlSeconds: number,
    /** The session every call of this lease is part of. */
    private readonly session?: Session,
  ) {
    this.current = view;
    this.holder = view.holder ?? '';
    this.epoch = view.epoch;
  }

  get namespace(): string {
    return this.current.namespace;
  }
  get key(): string {
    return this.current.key;
  }
  get view(): LeaseView {
    return this.current;
  }

  private async submit(op: Operation): Promise<LeaseView> {
    const r = expect(await this.calls.write(op, withSession(this.session)), 'lease');
    this.current = r.lease;
    return r.lease;
  }

  renew(ttl?: number): Promise<LeaseView> {
    return this.submit({
      type: 'lease_renew',
      namespace: this.namespace,
      key: this.key,
      holder: this.holder,
      epoch: this.epoch,
      ttlSeconds: ttl ?? this.ttlSeconds,
    });
  }

  updateState(state: JsonValue, options: { ifVersion?: string } = {}): Promise<LeaseView> {
    const op: Extract<Operation, { type: 'lease_write' }> = {
      type: 'lease_write',
      namespace: this.namespace,
      key: this.key,
      holder: this.holder,
      epoch: this.epoch,
      state,
    };
    if (options.ifVersion !== undefined) op.ifVersion = options.ifVersion;
    return this.submit(op);
  }

  async release(state?: JsonValue): Promise<void> {
    const op: Extract<Operation, { type: 'lease_release' }> = {
      type: 'lease_release',
      namespace: this.namespace,
      key: this.key,
      holder: this.holder,
      epoch: this.epoch,
    };
    if (state !== undefined) op.state = state;
    await this.submit(op);
  }
}
