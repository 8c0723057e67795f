/**
 * `strong(ns).queue(name)`: a fenced work queue made of the strong side's own
 * operations, so every strong backend (the Raft group, etcd) runs it unchanged.
 *
 * Each task is one lease entry `q/<name>/t/<seq>` whose state holds the item,
 * its status and attempt count (docs/queue.md):
 * - enqueue: a create-only cooperative write (after a create-only claim of the
 *   de-duplication key, and a compare-and-swap on the queue's sequence);
 * - take: a lease acquire guarded by the version the taker read, which writes
 *   `taken` and the next attempt in the same command: one taker wins;
 * - heartbeat, complete, fail: lease renew / release / write, fenced by the
 *   holder and epoch, so a worker another one took over from is refused.
 * A lease that runs out leaves the task `taken` with a past deadline: the next
 * take finds it and takes it over (the old holder's calls then fail).
 */
import {
  canonicalJson,
  type JsonValue,
  type LeaseDocument,
  type LeaseView,
  type Operation,
  type OpResult,
  type StrongBackend,
} from '@parley/coord';
import {
  type Clock,
  InvalidArgumentError,
  isNamespaceName,
  isParleyError,
  LeaseLostError,
  ParleyError,
  ValueTooLargeError,
} from '@parley/interface';
import type {
  QueueEnqueueOptions,
  QueueEnqueueResult,
  QueueOptions,
  QueueStats,
  QueueTakeOptions,
  QueueTask,
  QueueTaskStatus,
  QueueTaskView,
  StrongQueue,
} from '../queue-api.js';

export const QUEUE_DEFAULTS = Object.freeze({
  maxLength: 1000,
  maxItemBytes: 65_536,
  maxAttempts: 5,
  ttlSeconds: 60,
  keyTtlSeconds: 86_400,
});
const MAX_LENGTH = 10_000;
const MAX_ITEM_BYTES = 1_048_576;
const MAX_TTL_SECONDS = 30 * 86_400;
/** The sequence entry's TTL, refreshed by every enqueue. */
const SEQ_TTL_SECONDS = 30 * 86_400;
/** Compare-and-swap attempts on the sequence before `version_mismatch` reaches the caller. */
const SEQ_ATTEMPTS = 10;
/** Digits of a task's key: keys sort in queue order. */
const ID_DIGITS = 16;
const ID_RE = /^[0-9]{1,16}$/;
const PAGE = 100;
const UNFINISHED = 'state.status = "ready" or state.status = "taken"';

/** The state of a task's lease entry. */
interface TaskState {
  item: JsonValue;
  key: string | null;
  status: QueueTaskStatus;
  attempts: number;
  result: JsonValue;
  error: JsonValue;
}

function expect<T extends OpResult['type']>(r: OpResult, type: T): Extract<OpResult, { type: T }> {
  if (r.type !== type) throw new InvalidArgumentError(`expected a '${type}' result, got '${r.type}'`);
  return r as Extract<OpResult, { type: T }>;
}

function intIn(what: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw new InvalidArgumentError(`${what} must be an integer in [${min}, ${max}]`, { [what]: value });
  }
  return v;
}

const encoder = new TextEncoder();

function sized(what: string, value: JsonValue | undefined, limit: number): JsonValue {
  if (value === undefined) return null;
  let text: string;
  try {
    text = canonicalJson(value);
  } catch (err) {
    throw new InvalidArgumentError(`${what} must be JSON: ${(err as Error).message}`);
  }
  const bytes = encoder.encode(text).length;
  if (bytes > limit) throw new ValueTooLargeError(bytes, limit);
  return JSON.parse(text) as JsonValue;
}

function taskState(value: JsonValue): TaskState | undefined {
  const doc = value as unknown as LeaseDocument | null;
  const s = doc?.state as unknown as TaskState | null;
  if (s === null || typeof s !== 'object' || typeof s.status !== 'string' || typeof s.attempts !== 'number') {
    return undefined;
  }
  return s;
}

function view(id: string, doc: LeaseDocument, s: TaskState): QueueTaskView {
  return {
    id,
    status: s.status,
    item: s.item,
    attempts: s.attempts,
    key: s.key,
    holder: doc.holder,
    fence: doc.epoch,
    deadlineAt: doc.deadlineAt,
    result: s.result,
    error: s.error,
  };
}

export class StrongQueueImpl implements StrongQueue {
  private readonly maxLength: number;
  private readonly maxItemBytes: number;
  private readonly maxAttempts: number;
  private readonly prefix: string;

  constructor(
    readonly namespace: string,
    readonly name: string,
    private readonly calls: StrongBackend,
    private readonly clock: Clock,
    options: QueueOptions = {},
  ) {
    if (!isNamespaceName(name)) {
      throw new InvalidArgumentError(`queue name '${name}' must match the namespace-name rule`, { queue: name });
    }
    this.maxLength = intIn('maxLength', options.maxLength, QUEUE_DEFAULTS.maxLength, 1, MAX_LENGTH);
    this.maxItemBytes = intIn('maxItemBytes', options.maxItemBytes, QUEUE_DEFAULTS.maxItemBytes, 1, MAX_ITEM_BYTES);
    this.maxAttempts = intIn('maxAttempts', options.maxAttempts, QUEUE_DEFAULTS.maxAttempts, 1, 1000);
    this.prefix = `q/${name}/`;
  }

  private taskKey(id: string): string {
    if (!ID_RE.test(id)) throw new InvalidArgumentError(`task id '${id}' must be 1-16 digits`, { id });
    return `${this.prefix}t/${id.padStart(ID_DIGITS, '0')}`;
  }

  private idOf(key: string): string {
    return String(Number(key.slice(this.prefix.length + 2)));
  }

  private write(op: Operation): Promise<OpResult> {
    return this.calls.write(op);
  }

  async enqueue(item: JsonValue, options: QueueEnqueueOptions = {}): Promise<QueueEnqueueResult> {
    const value = sized('item', item, this.maxItemBytes);
    const keyTtl = intIn('keyTtl', options.keyTtl, QUEUE_DEFAULTS.keyTtlSeconds, 1, QUEUE_DEFAULTS.keyTtlSeconds);
    if (options.key !== undefined && (typeof options.key !== 'string' || options.key.length === 0)) {
      throw new InvalidArgumentError('key must be a non-empty string');
    }
    if (options.key !== undefined) {
      // Seen already: answer without spending a sequence number (a concurrent twin is settled by the claim).
      // The task is written again if absent: the enqueue that claimed the key may have failed before writing it.
      const known = await this.claimedId(options.key);
      if (known !== undefined) {
        await this.createTask(known, value, options.key);
        return { id: known, created: false };
      }
    }
    const seq = await this.nextSeq();
    let id = String(seq);
    let created = true;
    if (options.key !== undefined) {
      const claim = expect(
        await this.write({
          type: 'claim',
          namespace: this.namespace,
          key: `${this.prefix}k/${options.key}`,
          value: { id },
          ttlSeconds: keyTtl,
        }),
        'claim',
      );
      if (!claim.won) {
        id = String((claim.value as { id?: unknown } | null)?.id ?? id);
        created = false;
      }
    }
    await this.createTask(id, value, options.key);
    return { id, created };
  }

  /** Writes task `id` as ready unless it exists (create-only: an existing task, finished or not, is kept). */
  private async createTask(id: string, item: JsonValue, key: string | undefined): Promise<void> {
    const state: TaskState = { item, key: key ?? null, status: 'ready', attempts: 0, result: null, error: null };
    try {
      await this.write({
        type: 'lease_cooperative_write',
        namespace: this.namespace,
        key: this.taskKey(id),
        state: state as unknown as JsonValue,
        ifNotExists: true,
      });
    } catch (err) {
      if (!isParleyError(err, 'key_already_exists')) throw err;
    }
  }

  private async claimedId(key: string): Promise<string | undefined> {
    try {
      const got = expect(
        await this.calls.read({ type: 'get', namespace: this.namespace, key: `${this.prefix}k/${key}` }),
        'got',
      ).entry;
      const id = (got.value as { id?: unknown } | null)?.id;
      return typeof id === 'string' ? id : undefined;
    } catch (err) {
      if (isParleyError(err, 'key_not_found')) return undefined;
      throw err;
    }
  }

  /**
   * The next sequence number: a compare-and-swap on `q/<name>/seq`, made only
   * while the tasks from the oldest unfinished one to it number fewer than
   * maxLength (the oldest only moves on, so the bound holds once it is taken).
   */
  private async nextSeq(): Promise<number> {
    const key = `${this.prefix}seq`;
    for (let attempt = 1; ; attempt++) {
      let current: { version: string; next: number } | undefined;
      try {
        const got = expect(await this.calls.read({ type: 'get', namespace: this.namespace, key }), 'got').entry;
        current = { version: got.version, next: Number((got.value as { next?: unknown } | null)?.next ?? 0) };
      } catch (err) {
        if (!isParleyError(err, 'key_not_found')) throw err;
      }
      const seq = current?.next ?? 0;
      const oldest = await this.oldestUnfinished();
      if (oldest !== undefined && seq - oldest >= this.maxLength) {
        throw new ParleyError('namespace_full', `queue '${this.name}' holds ${this.maxLength} tasks`, {
          namespace: this.namespace,
          queue: this.name,
          limitTasks: this.maxLength,
        });
      }
      const op: Extract<Operation, { type: 'set' }> = {
        type: 'set',
        namespace: this.namespace,
        key,
        value: { next: seq + 1 },
        ttlSeconds: SEQ_TTL_SECONDS,
      };
      if (current) op.ifVersion = current.version;
      else op.ifNotExists = true;
      try {
        await this.write(op);
        return seq;
      } catch (err) {
        const conflict = isParleyError(err, 'version_mismatch') || isParleyError(err, 'key_already_exists');
        if (!conflict || attempt >= SEQ_ATTEMPTS) throw err;
      }
    }
  }

  private async oldestUnfinished(): Promise<number | undefined> {
    const page = await this.page({ filter: UNFINISHED, limit: 1 });
    const first = page.items[0];
    return first === undefined ? undefined : Number(this.idOf(first.key));
  }

  private async page(query: { filter?: string; limit: number; cursor?: string }) {
    const op: Extract<Operation, { type: 'list' }> = {
      type: 'list',
      namespace: this.namespace,
      prefix: `${this.prefix}t/`,
      limit: query.limit,
    };
    if (query.filter !== undefined) op.filter = query.filter;
    if (query.cursor !== undefined) op.cursor = query.cursor;
    return expect(await this.calls.read(op), 'list');
  }

  async take(options: QueueTakeOptions): Promise<QueueTask | null> {
    const ttl = intIn('ttl', options.ttl, QUEUE_DEFAULTS.ttlSeconds, 1, MAX_TTL_SECONDS);
    const holder = options.holder;
    if (typeof holder !== 'string' || holder.length === 0)
      throw new InvalidArgumentError('holder must be a non-empty string');
    const now = this.clock.nowMs();
    let cursor: string | undefined;
    // At most maxLength unfinished tasks exist: a take looks at each once.
    for (let seen = 0; seen < this.maxLength + PAGE; ) {
      const page = await this.page({ filter: UNFINISHED, limit: PAGE, ...(cursor ? { cursor } : {}) });
      for (const e of page.items) {
        seen++;
        const doc = e.value as unknown as LeaseDocument;
        const s = taskState(e.value);
        if (!s) continue;
        // Held, or backing off after a fail: the strong side's clock decides, this is the hint.
        if (doc.holder !== null && doc.deadlineAt > now) continue;
        const lapsed = s.status === 'taken';
        const error = lapsed ? 'lease expired' : s.error;
        if (s.attempts >= this.maxAttempts) {
          await this.deadLetter(e.key, e.version, holder, { ...s, error });
          continue;
        }
        const next: TaskState = { ...s, status: 'taken', attempts: s.attempts + 1, error };
        let lease: LeaseView;
        try {
          lease = expect(
            await this.write({
              type: 'lease_acquire',
              namespace: this.namespace,
              key: e.key,
              holder,
              ttlSeconds: ttl,
              state: next as unknown as JsonValue,
              ifVersion: e.version,
            }),
            'lease',
          ).lease;
        } catch (err) {
          // Another worker took it (or changed it) first: on to the next one.
          if (isParleyError(err, 'lock_held') || isParleyError(err, 'version_mismatch')) continue;
          throw err;
        }
        return new StrongQueueTask(this, this.idOf(e.key), lease, next, ttl);
      }
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    return null;
  }

  /** Gives up a task that used all its attempts: taken (a new epoch fences out its last holder), then released dead. */
  private async deadLetter(key: string, version: string, holder: string, s: TaskState): Promise<void> {
    try {
      const lease = expect(
        await this.write({
          type: 'lease_acquire',
          namespace: this.namespace,
          key,
          holder,
          ttlSeconds: 1,
          ifVersion: version,
        }),
        'lease',
      ).lease;
      await this.write({
        type: 'lease_release',
        namespace: this.namespace,
        key,
        holder,
        epoch: lease.epoch,
        state: { ...s, status: 'dead' } as unknown as JsonValue,
      });
    } catch (err) {
      if (isParleyError(err, 'lock_held') || isParleyError(err, 'version_mismatch')) return;
      if (isParleyError(err, 'lease_lost')) return;
      throw err;
    }
  }

  task(id: string, options: { holder: string; fence: number; ttl?: number }): QueueTask {
    const key = this.taskKey(id);
    const ttl = intIn('ttl', options.ttl, QUEUE_DEFAULTS.ttlSeconds, 1, MAX_TTL_SECONDS);
    if (!Number.isSafeInteger(options.fence) || options.fence < 0) {
      throw new InvalidArgumentError('fence must be a non-negative integer', { fence: options.fence });
    }
    const lease: LeaseView = {
      namespace: this.namespace,
      key,
      epoch: options.fence,
      holder: options.holder,
      deadlineAt: 0,
      state: null,
      version: '',
      ttlSeconds: ttl,
    };
    return new StrongQueueTask(this, id, lease, undefined, ttl);
  }

  /** The task's lease entry and state, or undefined. */
  async read(id: string): Promise<{ doc: LeaseDocument; state: TaskState } | undefined> {
    try {
      const e = expect(await this.calls.read({ type: 'get', namespace: this.namespace, key: this.taskKey(id) }), 'got');
      const state = taskState(e.entry.value);
      return state ? { doc: e.entry.value as unknown as LeaseDocument, state } : undefined;
    } catch (err) {
      if (isParleyError(err, 'key_not_found')) return undefined;
      throw err;
    }
  }

  async get(id: string): Promise<QueueTaskView | undefined> {
    const r = await this.read(id);
    return r ? view(id, r.doc, r.state) : undefined;
  }

  async list(
    options: { status?: QueueTaskStatus; limit?: number; cursor?: string } = {},
  ): Promise<{ items: QueueTaskView[]; nextCursor: string | null }> {
    const statuses: readonly string[] = ['ready', 'taken', 'done', 'dead'];
    if (options.status !== undefined && !statuses.includes(options.status)) {
      throw new InvalidArgumentError(`status must be one of ${statuses.join(', ')}`, { status: options.status });
    }
    const limit = intIn('limit', options.limit, PAGE, 1, 1000);
    const page = await this.page({
      limit,
      ...(options.status ? { filter: `state.status = "${options.status}"` } : {}),
      ...(options.cursor ? { cursor: options.cursor } : {}),
    });
    const items: QueueTaskView[] = [];
    for (const e of page.items) {
      const s = taskState(e.value);
      if (s) items.push(view(this.idOf(e.key), e.value as unknown as LeaseDocument, s));
    }
    return { items, nextCursor: page.nextCursor };
  }

  async stats(): Promise<QueueStats> {
    const stats: QueueStats = { ready: 0, taken: 0, done: 0, dead: 0 };
    let cursor: string | undefined;
    for (let pages = 0; pages < MAX_LENGTH; pages++) {
      const page = await this.page({ limit: 1000, ...(cursor ? { cursor } : {}) });
      for (const e of page.items) {
        const s = taskState(e.value);
        if (s) stats[s.status]++;
      }
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    return stats;
  }

  /** For a task handle: a fenced lease operation on the task's entry. */
  lease(op: Operation): Promise<LeaseView> {
    return this.write(op).then((r) => expect(r, 'lease').lease);
  }

  get attemptsAllowed(): number {
    return this.maxAttempts;
  }

  checkSize(what: string, value: JsonValue | undefined): JsonValue {
    return sized(what, value, this.maxItemBytes);
  }
}

/** One attempt: every call is a lease operation fenced by (holder, epoch). */
class StrongQueueTask implements QueueTask {
  private current: LeaseView;
  private finished = false;

  constructor(
    private readonly queue: StrongQueueImpl,
    readonly id: string,
    lease: LeaseView,
    /** The state as taken; undefined for a handle rebuilt from (id, holder, fence): read on first need. */
    private state: TaskState | undefined,
    private readonly ttl: number,
  ) {
    this.current = lease;
  }

  get item(): JsonValue {
    return this.state?.item ?? null;
  }
  get attempt(): number {
    return this.state?.attempts ?? 0;
  }
  get holder(): string {
    return this.current.holder ?? '';
  }
  get fence(): number {
    return this.current.epoch;
  }
  get deadlineAt(): number {
    return this.current.deadlineAt;
  }

  private get key(): string {
    return this.current.key;
  }

  private lost(): LeaseLostError {
    return new LeaseLostError(`${this.queue.namespace}/${this.key}`, this.fence, undefined);
  }

  /** The task's state while this attempt still owns it; `lease_lost` once it does not. */
  private async owned(): Promise<TaskState> {
    if (this.finished) throw this.lost();
    if (this.state === undefined) {
      const r = await this.queue.read(this.id);
      if (!r || r.doc.epoch !== this.fence || r.doc.holder !== this.holder) {
        throw new LeaseLostError(`${this.queue.namespace}/${this.key}`, this.fence, r?.doc.epoch);
      }
      this.state = r.state;
    }
    if (this.state.status !== 'taken') throw this.lost();
    return this.state;
  }

  private fenced() {
    return { namespace: this.queue.namespace, key: this.key, holder: this.holder, epoch: this.fence };
  }

  async heartbeat(ttl?: number): Promise<void> {
    await this.owned();
    this.current = await this.queue.lease({ type: 'lease_renew', ...this.fenced(), ttlSeconds: ttl ?? this.ttl });
  }

  async complete(result?: JsonValue): Promise<void> {
    const value = this.queue.checkSize('result', result);
    const s = await this.owned();
    const done: TaskState = { ...s, status: 'done', result: value };
    this.current = await this.queue.lease({
      type: 'lease_release',
      ...this.fenced(),
      state: done as unknown as JsonValue,
    });
    this.state = done;
    this.finished = true;
  }

  async fail(reason: JsonValue, options: { retryAfter?: number } = {}): Promise<void> {
    const error = this.queue.checkSize('reason', reason);
    const s = await this.owned();
    const retryAfter = options.retryAfter;
    if (retryAfter !== undefined) intIn('retryAfter', retryAfter, 0, 0, MAX_TTL_SECONDS);
    const dead = s.attempts >= this.queue.attemptsAllowed;
    const next: TaskState = { ...s, status: dead ? 'dead' : 'ready', error };
    if (!dead && retryAfter !== undefined && retryAfter > 0) {
      // Kept leased (so nobody takes it) until retryAfter, then free: the strong side's clock times the wait.
      this.current = await this.queue.lease({ type: 'lease_renew', ...this.fenced(), ttlSeconds: retryAfter });
      this.current = await this.queue.lease({
        type: 'lease_write',
        ...this.fenced(),
        state: next as unknown as JsonValue,
      });
    } else {
      this.current = await this.queue.lease({
        type: 'lease_release',
        ...this.fenced(),
        state: next as unknown as JsonValue,
      });
    }
    this.state = next;
    this.finished = true;
  }
}
