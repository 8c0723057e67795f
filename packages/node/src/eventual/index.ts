/**
 * The eventual module of a node: opens namespaces on first use (restoring
 * them from the node's KV store, joining their gossip topic and pulling their
 * state from connected peers) and closes them with the node.
 */
import type { EventualNamespace, NamespaceStatus } from '../api.js';
import type { NodeContext } from '../context.js';
import type { GroupCommit } from '../group-commit.js';
import { checkNamespaceName, EventualNamespaceImpl } from './namespace.js';
import { type EventualOptions, type ResolvedEventualOptions, resolveEventualOptions } from './options.js';

export { EventualNamespaceImpl } from './namespace.js';
export type { EventualOptions } from './options.js';

export class EventualModule {
  readonly options: ResolvedEventualOptions;
  private readonly namespaces = new Map<string, EventualNamespaceImpl>();
  private closed = false;

  constructor(
    private readonly ctx: NodeContext,
    options: EventualOptions | undefined,
    private readonly commit: GroupCommit,
  ) {
    this.options = resolveEventualOptions(options);
  }

  /** The namespace `name`, opened on first use. */
  namespace(name: string): EventualNamespaceImpl {
    checkNamespaceName(name);
    let ns = this.namespaces.get(name);
    if (!ns) {
      ns = new EventualNamespaceImpl(name, this.ctx, this.options, this.commit);
      if (this.closed) void ns.close();
      this.namespaces.set(name, ns);
    }
    return ns;
  }

  /** Opened namespaces. */
  opened(): EventualNamespaceImpl[] {
    return [...this.namespaces.values()];
  }

  status(): NamespaceStatus[] {
    return this.opened()
      .map((ns) => ns.status())
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.opened().map((ns) => ns.close()));
  }
}

export type { EventualNamespace };
