/**
 * `ParleyStore`: LangGraph's `BaseStore` (cross-thread memory) on one Parley
 * eventual namespace. Writes are accepted locally, offline too, and spread to
 * every replica; concurrent writes of one item resolve by last writer wins.
 *
 * An item is one entry: key `JSON.stringify([namespace, key])`, value
 * `{ ns, key, value, createdAt, updatedAt, ttl }`. `search` sends the namespace
 * prefix (`ns.0 = "users" and ns.1 = "42"`) and what it can of the filter to
 * the store in Parley's filter grammar and checks the whole filter on what
 * comes back (store-filter.ts).
 *
 * TTL (LangGraph's `TTLConfig`, in minutes): an item written with a TTL, or
 * with `defaultTtl`, is an entry with that TTL; one without lives the
 * eventual namespace's longest TTL (`maxTtlSeconds`, 30 days by default). With
 * `refreshOnRead` (default true), a get or search that returns an item more
 * than a tenth into its TTL writes it again with a full one. A refresh is a
 * write: like any, it competes with a concurrent write of the same item on a
 * replica that has not yet seen it, by last writer wins.
 */
import {
  BaseStore,
  type GetOperation,
  InvalidNamespaceError,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from '@langchain/langgraph-checkpoint';
import { InvalidArgumentError } from '@parley/interface';
import type { EventualEntry, EventualNamespace, JsonValue, ParleyNode } from '@parley/node';
import { literal } from './keys.js';
import { checkFilter, matches, pushDown } from './store-filter.js';

/** Parley's filter grammar: 32 comparisons, 1024 characters. */
const FILTER_COMPARISONS = 32;
const FILTER_CHARS = 1024;
const MAX_TTL_SECONDS = 30 * 86_400;
const PAGE = 200;

export interface StoreTTLConfig {
  /** Minutes an item lives after its last write (or refreshing read) when `put` names no TTL. Default: none (see `maxTtlSeconds`). */
  defaultTtl?: number;
  /** Reads (get, search) refresh the TTL of what they return. Default true. */
  refreshOnRead?: boolean;
  /** Accepted for compatibility; Parley expires entries itself. */
  sweepIntervalMinutes?: number;
}

export interface ParleyStoreOptions {
  node: ParleyNode;
  /** The eventual namespace holding the items (default `langgraph-store`). */
  namespace?: string;
  ttl?: StoreTTLConfig;
  /** The node's eventual TTL bound (default 30 days): the lifetime of an item with no TTL. */
  maxTtlSeconds?: number;
}

interface Stored {
  ns: string[];
  key: string;
  value: Record<string, JsonValue>;
  createdAt: number;
  updatedAt: number;
  /** Seconds, or null: no TTL of its own (lives maxTtlSeconds from its last write). */
  ttl: number | null;
}

function itemKey(namespace: string[], key: string): string {
  return JSON.stringify([namespace, key]);
}

function isStored(v: unknown): v is Stored {
  const s = v as Partial<Stored> | null;
  return !!s && Array.isArray(s.ns) && typeof s.key === 'string' && typeof s.createdAt === 'number';
}

function toItem(s: Stored): Item {
  return {
    namespace: [...s.ns],
    key: s.key,
    value: s.value,
    createdAt: new Date(s.createdAt),
    updatedAt: new Date(s.updatedAt),
  };
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0)
    throw new InvalidArgumentError('item key must be a non-empty string');
  return key;
}

export class ParleyStore extends BaseStore {
  readonly namespace: string;
  private readonly ns: EventualNamespace;
  private readonly defaultTtlSeconds: number | null;
  private readonly refreshOnRead: boolean;
  private readonly maxTtlSeconds: number;

  constructor(options: ParleyStoreOptions) {
    super();
    if (!options?.node) throw new InvalidArgumentError('ParleyStore needs a node');
    this.namespace = options.namespace ?? 'langgraph-store';
    this.ns = options.node.eventual(this.namespace);
    this.maxTtlSeconds = options.maxTtlSeconds ?? MAX_TTL_SECONDS;
    if (!Number.isSafeInteger(this.maxTtlSeconds) || this.maxTtlSeconds < 1) {
      throw new InvalidArgumentError('maxTtlSeconds must be a positive integer');
    }
    this.defaultTtlSeconds = options.ttl?.defaultTtl === undefined ? null : this.ttlSeconds(options.ttl.defaultTtl);
    this.refreshOnRead = options.ttl?.refreshOnRead ?? true;
  }

  /** LangGraph TTL minutes as Parley seconds (whole, at least 1, at most the bound). */
  private ttlSeconds(minutes: unknown): number {
    if (typeof minutes !== 'number' || !Number.isFinite(minutes) || minutes <= 0) {
      throw new InvalidArgumentError('ttl must be a positive number of minutes');
    }
    const seconds = Math.ceil(minutes * 60);
    if (seconds > this.maxTtlSeconds) {
      throw new InvalidArgumentError(`ttl of ${minutes} minutes is over the store's bound of ${this.maxTtlSeconds} s`);
    }
    return seconds;
  }

  override async put(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    index?: false | string[],
    options?: { ttl?: number | null },
  ): Promise<void> {
    validateNamespace(namespace);
    await this.batch([{ namespace, key, value, index, ...(options ? { options } : {}) } as PutOperation]);
  }

  override async get(namespace: string[], key: string, options?: { refreshTtl?: boolean }): Promise<Item | null> {
    validateNamespace(namespace, { allowEmpty: true, allowReservedRoot: true });
    return this.getOne({ namespace, key }, options?.refreshTtl);
  }

  override async search(
    namespacePrefix: string[],
    options: {
      filter?: Record<string, unknown>;
      limit?: number;
      offset?: number;
      query?: string;
      refreshTtl?: boolean;
    } = {},
  ): Promise<SearchItem[]> {
    validateNamespace(namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
    const { refreshTtl, ...op } = options;
    return this.searchOne({ namespacePrefix, limit: 10, offset: 0, ...op }, refreshTtl);
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = new Array(operations.length).fill(null);
    // Reads first, then the writes (the last write of a key wins), as LangGraph's stores do.
    const writes = new Map<string, PutOperation>();
    for (const [i, op] of operations.entries()) {
      if ('namespacePrefix' in op) results[i] = await this.searchOne(op as SearchOperation);
      else if ('matchConditions' in op || ('limit' in op && !('namespace' in op))) {
        results[i] = await this.listNamespacesOne(op as ListNamespacesOperation);
      } else if ('value' in op) {
        const put = op as PutOperation;
        this.checkPut(put);
        writes.set(itemKey(put.namespace, put.key), put);
      } else if ('namespace' in op && 'key' in op) results[i] = await this.getOne(op as GetOperation);
      else throw new InvalidArgumentError('unknown store operation');
    }
    for (const put of writes.values()) await this.putOne(put);
    return results as OperationResults<Op>;
  }

  private checkPut(op: PutOperation): void {
    if (op.value !== null) {
      validateNamespace(op.namespace);
      if (typeof op.value !== 'object' || Array.isArray(op.value)) {
        throw new InvalidArgumentError('an item value must be an object (or null to delete)');
      }
    } else if (!Array.isArray(op.namespace)) throw new InvalidNamespaceError('namespace must be an array');
    checkKey(op.key);
    const ttl = (op as PutOperation & { options?: { ttl?: number | null } }).options?.ttl;
    if (ttl !== undefined && ttl !== null) this.ttlSeconds(ttl);
  }

  private async putOne(op: PutOperation): Promise<void> {
    const k = itemKey(op.namespace, op.key);
    if (op.value === null) {
      await this.ns.delete(k);
      return;
    }
    const ttlMinutes = (op as PutOperation & { options?: { ttl?: number | null } }).options?.ttl;
    const ttl =
      ttlMinutes === undefined ? this.defaultTtlSeconds : ttlMinutes === null ? null : this.ttlSeconds(ttlMinutes);
    const existing = await this.ns.get(k);
    const now = Date.now();
    const stored: Stored = {
      ns: [...op.namespace],
      key: op.key,
      value: op.value as Record<string, JsonValue>,
      createdAt: isStored(existing?.value) ? existing.value.createdAt : now,
      updatedAt: now,
      ttl,
    };
    await this.ns.set(k, stored as unknown as JsonValue, { ttl: ttl ?? this.maxTtlSeconds });
  }

  private async getOne(op: GetOperation, refreshTtl?: boolean): Promise<Item | null> {
    checkKey(op.key);
    const e = await this.ns.get(itemKey(op.namespace, op.key));
    if (!e || !isStored(e.value)) return null;
    await this.refresh(e, refreshTtl);
    return toItem(e.value);
  }

  private async searchOne(op: SearchOperation, refreshTtl?: boolean): Promise<SearchItem[]> {
    const filter = op.filter as Record<string, unknown> | undefined;
    checkFilter(filter);
    const limit = op.limit ?? 10;
    const offset = op.offset ?? 0;
    if (!Number.isSafeInteger(limit) || limit < 0 || !Number.isSafeInteger(offset) || offset < 0) {
      throw new InvalidArgumentError('search limit and offset must be non-negative integers');
    }
    const prefix = op.namespacePrefix.slice(0, FILTER_COMPARISONS);
    const conditions = prefix.map((label, i) => `ns.${i} = ${literal(label)}`);
    const used = conditions.join(' and ').length;
    conditions.push(...pushDown(filter, FILTER_COMPARISONS - prefix.length, FILTER_CHARS - used - 16));
    const out: SearchItem[] = [];
    let skipped = 0;
    for await (const e of this.entries(conditions.length > 0 ? conditions.join(' and ') : undefined)) {
      if (out.length >= limit) break;
      const s = e.value;
      if (!isStored(s)) continue;
      if (op.namespacePrefix.some((label, i) => s.ns[i] !== label)) continue;
      if (!matches(s.value, filter)) continue;
      if (skipped < offset) {
        skipped++;
        continue;
      }
      await this.refresh(e, refreshTtl);
      out.push({ ...toItem(s), score: undefined });
    }
    return out;
  }

  private async listNamespacesOne(op: ListNamespacesOperation): Promise<string[][]> {
    const seen = new Map<string, string[]>();
    for await (const e of this.entries(undefined)) {
      const s = e.value;
      if (!isStored(s)) continue;
      const ns = s.ns;
      const ok = (op.matchConditions ?? []).every(({ matchType, path }) => {
        if (path.length > ns.length) return false;
        const at = matchType === 'prefix' ? 0 : ns.length - path.length;
        return path.every((p, i) => p === '*' || ns[at + i] === p);
      });
      if (!ok) continue;
      const cut = op.maxDepth === undefined ? ns : ns.slice(0, op.maxDepth);
      seen.set(JSON.stringify(cut), cut);
    }
    const all = [...seen.values()].sort((a, b) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) {
        const x = a[i] as string;
        const y = b[i] as string;
        if (x !== y) return x < y ? -1 : 1;
      }
      return a.length - b.length;
    });
    const offset = op.offset ?? 0;
    return all.slice(offset, offset + (op.limit ?? 100));
  }

  private async *entries(filter: string | undefined): AsyncGenerator<EventualEntry & { value: JsonValue }> {
    let cursor: string | undefined;
    do {
      const page = await this.ns.list({
        limit: PAGE,
        sortBy: 'key',
        ...(filter !== undefined ? { filter } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const e of page.items) yield e;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Writes a returned item again with a full TTL once more than a tenth of it has passed. */
  private async refresh(e: EventualEntry, refreshTtl: boolean | undefined): Promise<void> {
    if (!(refreshTtl ?? this.refreshOnRead) || !isStored(e.value)) return;
    const ttl = e.value.ttl ?? this.maxTtlSeconds;
    const remaining = e.expiresAt - Date.now();
    if (remaining > ttl * 900) return;
    await this.ns.set(e.key, e.value as unknown as JsonValue, { ttl });
  }
}
