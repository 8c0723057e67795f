/**
 * `@parley/storage/codec` — the on-disk formats, for the decoder fuzzer and
 * the benchmarks: checksummed records, order-preserving keys, the Raft log's
 * key and value encodings, the columnar entry log.
 */
export { EntryColumns } from './arena.js';
export * from './key-codec.js';
export * from './raft-codec.js';
export * from './record.js';
