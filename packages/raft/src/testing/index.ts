/**
 * `@parley/raft/testing` — the in-memory test cluster that drives `RawNode`s
 * step by step (deliver, drop, partition, tick) and the readers that print
 * entries, messages and `Ready`s, for tests of Raft itself.
 */
export * from './cluster.js';
