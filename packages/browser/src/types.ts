/**
 * The shapes a browser node hands out. Entries, pages and changes are a node's
 * (`@parley/interface`'s api-shapes.ts, which `@parley/node` hands out too);
 * what is the tab's own is here.
 */
export type {
  EventualChange,
  EventualEntry,
  EventualSetResult,
  JsonValue,
  ListPage,
  ListQuery,
  Unsubscribe,
  WatchOptions,
  WriteOperation,
} from '@parley/interface';

/** A tab's writes have no consistency levels: a write is this tab's, and reaches the node when it syncs. */
export interface EventualWriteOptions {
  /** Seconds, 1 .. 30 days; default 3600. */
  ttl?: number;
}

/**
 * Where a namespace's sync with the node stands: `offline` (no connection; writes are
 * kept and sent on reconnect), `connecting`, `syncing` (connected, exchanging what each
 * side lacks), `synced` (the node holds every write of this tab, and this tab every write
 * the node had at the last exchange), `refused` (the node refused this client: a bad
 * token or namespace; no retry).
 */
export type SyncState = 'offline' | 'connecting' | 'syncing' | 'synced' | 'refused';
