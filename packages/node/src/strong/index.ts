/**
 * The strong side of the node: strong namespaces, locks and leases through a
 * Raft group (see module.ts).
 */
export { type ChangeFilter, ChangeLog } from './changes.js';
export { createStrongModule, type StrongModule, type StrongModuleExtras } from './module.js';
export { type ResolvedStrongOptions, resolveStrongOptions, type StrongOptions } from './options.js';
export {
  MAX_PENDING_READS,
  type MemberOptions,
  type MemberSeams,
  type Pending,
  type ReplicaHooks,
  StrongReplica,
} from './replica.js';
export { STRONG_PROTOCOL } from './wire.js';
