/**
 * @parley/raft — Raft consensus as a pure state machine (etcd-raft's shape):
 * `step`, `tick`, `propose`, `readIndex`, then `ready()` / `advance()`.
 * No timers, sockets or disks inside; time is `tick()`, randomness is injected.
 *
 * @example
 * ```ts
 * import { SeededRandom } from '@parley/interface';
 * import { MemoryRaftStorage, RawNode } from '@parley/raft';
 *
 * const storage = new MemoryRaftStorage();
 * const node = new RawNode({ id: 'a', storage, random: new SeededRandom(1), voters: ['a'] });
 * node.campaign();
 * for (;;) {
 *   if (!node.hasReady()) break;
 *   const rd = node.ready();
 *   await storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState });
 *   send([...rd.messages, ...rd.messagesAfterPersist]);
 *   for (const e of rd.committedEntries) apply(e);
 *   node.advance();
 * }
 * node.propose(new TextEncoder().encode('set x=1'));
 * ```
 */
export { decodeMessage, encodeMessage, RAFT_CODEC_VERSION } from './codec.js';
export { decodeConfChange, encodeConfChange } from './confchange.js';
export { RAFT_PROTOCOL, RaftDriver, type RaftDriverOptions, type RaftStateMachine } from './driver.js';
export { ENTRY_OVERHEAD_BYTES, entryBytes } from './log.js';
export { type ProgressView, RaftProbe } from './probe.js';
export type { ProposalResult, RaftConfig } from './raft.js';
export { RawNode } from './rawnode.js';
export { MemoryRaftStorage } from './storage.js';
export * from './types.js';
