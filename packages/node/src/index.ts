/**
 * @parley/node — the peer node every Parley process embeds.
 *
 * @example
 * ```ts
 * import { createNode } from '@parley/node';
 * const node = await createNode();                 // ./.parley, loopback, ready at once
 * const flags = node.eventual('deploy');
 * await flags.set('rollout', { pct: 25 }, { ttl: 600 });
 * flags.watch({ prefix: 'roll' }, (change) => console.log(change.type, change.key));
 * await flags.increment('restarts');
 * await node.close();
 * ```
 */

/** The namespace-name rule (of @parley/interface), for doors that check names before calling a node. */
export { isNamespaceName, MAX_NAMESPACE_LENGTH, NAMESPACE_NAME_PATTERN, NAMESPACE_NAME_RE } from '@parley/interface';
export type * from './api.js';
export type { NodeContext, NodeEvents, NodeLogger, NodeStorage } from './context.js';
export { DataDirLockedError } from './data-dir-lock.js';
export { type ClientReplication, clientReplication } from './eventual/client-replication.js';
export type { EventualOptions } from './eventual/options.js';
export { loadDocumentEngines } from './eventual/rich-loader.js';
export { createNode } from './node.js';
export type { NodeOptions } from './options.js';
export type * from './queue-api.js';
export {
  decodeSessionToken,
  encodeSessionToken,
  SESSION_LIMITS,
  Session,
  type SessionFrontier,
} from './session/index.js';
export type { StrongOptions } from './strong/options.js';
export { raftStrong } from './strong/provider.js';
export type { StrongProvider, StrongSide } from './strong-side.js';
