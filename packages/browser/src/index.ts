/**
 * @parley/browser — a browser tab as a Parley peer: eventual namespaces kept
 * in IndexedDB, writable offline, synced with one node over a WebSocket
 * (docs/browser.md); strong calls through that node's HTTP API.
 *
 * @example
 * ```ts
 * import { createBrowserNode } from '@parley/browser';
 * const node = await createBrowserNode({ url: 'http://127.0.0.1:4000' });
 * const flags = node.eventual('deploy');
 * await flags.set('rollout', { pct: 25 }, { ttl: 600 }); // durable in IndexedDB, sent when online
 * flags.watch({ prefix: 'roll' }, (change) => console.log(change.type, change.key, change.origin));
 * const doc = await flags.yjs('notes');                  // a Y.Doc, synced with the node's
 * ```
 */
import { InvalidArgumentError, isNamespaceName, MAX_NAMESPACE_LENGTH } from '@parley/interface';
import type * as Y from 'yjs';
import { BrowserNamespace } from './namespace.js';
import {
  type BrowserNodeOptions,
  type ReplicaDb,
  type ResolvedBrowserOptions,
  resolveBrowserOptions,
} from './options.js';
import { WriteQueue } from './store.js';
import { BrowserStrong } from './strong.js';
import type { BrowserDoc } from './yjs.js';

export type { BrowserNamespace } from './namespace.js';
export type { BrowserNodeOptions, ReplicaDb, WebSocketConstructor } from './options.js';
export type { BrowserStrong, StrongEntry, StrongWriteOptions } from './strong.js';
export type * from './types.js';

/** Yjs documents open at once per browser node. */
export const MAX_DOCS = 256;

export interface BrowserNode {
  /** The eventual namespace `name` (opened, restored from the database and synced on first use). */
  eventual(name: string): BrowserNamespace;
  /** The strong namespace `name`, through the node's HTTP API (a client, not a voter). */
  strong(name: string): BrowserStrong;
  /** Stops syncing and closes the database (what is written stays). */
  close(): Promise<void>;
}

function randomId(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return `browser-${hex}`;
}

class Node implements BrowserNode {
  private readonly namespaces = new Map<string, BrowserNamespace>();
  private readonly docs = new Map<string, Promise<BrowserDoc>>();
  private readonly opened: Promise<{ db: ReplicaDb; queue: WriteQueue }>;
  private closed = false;

  constructor(readonly options: ResolvedBrowserOptions) {
    this.opened = this.openDb();
  }

  private async openDb(): Promise<{ db: ReplicaDb; queue: WriteQueue }> {
    let db = this.options.db;
    if (db === undefined) {
      const { BrowserLevel } = await import('browser-level');
      db = new BrowserLevel<string, Uint8Array>(this.options.name, { keyEncoding: 'utf8', valueEncoding: 'view' });
    }
    await db.open();
    const queue = new WriteQueue(db);
    queue.onFailure = () => {
      for (const ns of this.namespaces.values()) ns.discardPrepared();
    };
    return { db, queue };
  }

  eventual(name: string): BrowserNamespace {
    if (this.closed) throw new InvalidArgumentError('the browser node is closed');
    if (!isNamespaceName(name)) {
      throw new InvalidArgumentError(
        `namespace must be 1..${MAX_NAMESPACE_LENGTH} letters, digits, ".", "_" or "-", starting alphanumeric`,
      );
    }
    let ns = this.namespaces.get(name);
    if (!ns) {
      if (this.namespaces.size >= this.options.maxNamespaces) {
        throw new InvalidArgumentError(`a browser node opens at most ${this.options.maxNamespaces} namespaces`);
      }
      ns = new BrowserNamespace(name, {
        options: this.options,
        db: async () => (await this.opened).db,
        queue: async () => (await this.opened).queue,
        newReplicaId: randomId,
        yjs: (n, key) => this.yjs(n, key),
      });
      this.namespaces.set(name, ns);
    }
    return ns;
  }

  strong(name: string): BrowserStrong {
    if (!isNamespaceName(name)) throw new InvalidArgumentError('not a namespace name');
    return new BrowserStrong(name, this.options);
  }

  private async yjs(ns: BrowserNamespace, key: string): Promise<Y.Doc> {
    const id = `${ns.name}\u0000${key}`;
    let doc = this.docs.get(id);
    if (!doc) {
      if (this.docs.size >= MAX_DOCS)
        throw new InvalidArgumentError(`a browser node opens at most ${MAX_DOCS} documents`);
      const { BrowserDoc } = await import('./yjs.js');
      const { db, queue } = await this.opened;
      doc = this.docs.get(id) ?? BrowserDoc.open(ns.name, key, this.options, db, queue);
      this.docs.set(id, doc);
      doc.catch(() => this.docs.delete(id));
    }
    return (await doc).doc;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.namespaces.values()].map((ns) => ns.close()));
    for (const d of this.docs.values()) await d.then((x) => x.close()).catch(() => {});
    const { db, queue } = await this.opened;
    await queue.idle();
    await db.close();
  }
}

/**
 * A browser node: eventual namespaces in IndexedDB (or `options.db`), synced
 * with the node at `options.url` (default: the page's origin). Ready at once;
 * works offline (every write is kept and sent when the node is reachable).
 */
export async function createBrowserNode(options: BrowserNodeOptions = {}): Promise<BrowserNode> {
  const node = new Node(resolveBrowserOptions(options));
  await (node as unknown as { opened: Promise<unknown> }).opened;
  return node;
}
