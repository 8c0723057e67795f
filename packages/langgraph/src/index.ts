/**
 * @parley/langgraph — LangGraph.js persistence on Parley.
 *
 * - `ParleySaver`: a checkpoint saver on strong namespaces, with single-writer
 *   ownership of a thread (`ownThread`): a writer that lost the thread has its
 *   writes refused by the store (`fence_stale`), so a thread's checkpoint chain
 *   never forks.
 * - `ParleyStore`: a `BaseStore` for cross-thread memory on an eventual
 *   namespace (works offline, replicated), with LangGraph's TTL settings.
 *
 * @example
 * ```ts
 * import { createNode } from '@parley/node';
 * import { ParleySaver } from '@parley/langgraph';
 * const node = await createNode();
 * const saver = new ParleySaver({ node });
 * const lease = await saver.ownThread('thread-1', { holder: 'worker-a', ttl: 10 });
 * const graph = builder.compile({ checkpointer: saver });
 * await graph.invoke(input, { configurable: { thread_id: 'thread-1' } });
 * await lease.release();
 * ```
 */

export { type OwnThreadOptions, ThreadLease } from './ownership.js';
export {
  DEFAULT_CHECKPOINT_TTL_SECONDS,
  DEFAULT_CHUNK_BYTES,
  ParleySaver,
  type ParleySaverOptions,
} from './saver.js';
export { ParleyStore, type ParleyStoreOptions, type StoreTTLConfig } from './store.js';
