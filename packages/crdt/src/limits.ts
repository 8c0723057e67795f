/**
 * Hard bounds on what a replica accepts, from local calls, from the decoder and
 * from `merge` alike. Every replica of a namespace applies the same ones, so a
 * state one replica holds never makes another refuse a delta.
 */

/** Largest TTL any write may carry, and largest `maxTtlSeconds` a replica may be configured with: 30 days. */
export const MAX_TTL_SECONDS = 30 * 24 * 3600;

/**
 * Largest sequence number (dot) of an origin: 2^48 − 1. At a million writes a
 * second one replica needs nine years to reach it; below it every range
 * arithmetic (hi + 1, lo − hi − 1) stays within the safe integers. A replica
 * that reaches it refuses further writes with InvalidArgumentError and must
 * continue under a new replica id.
 */
export const MAX_SEQ = 2 ** 48 - 1;

/**
 * Largest physical time (ms since the epoch) a stamp may carry: 2^48 − 1, the
 * year 10889. Keeps every difference the codec writes within the safe integers.
 */
export const MAX_WALL_MS = 2 ** 48 - 1;

/** Deepest nesting of arrays and objects a value may have (the same bound as the strong tier's). */
export const MAX_VALUE_DEPTH = 64;

/**
 * Largest logical counter a stamp may carry: 2^32 − 1. A clock that would pass
 * it moves its wall time on by one millisecond instead, so stamps stay ordered.
 */
export const MAX_LOGICAL = 2 ** 32 - 1;

/** Longest node (replica) id in UTF-8 bytes. */
export const MAX_NODE_ID_BYTES = 255;

/**
 * Most origins the causal dependencies of one delta may name: the session
 * token's bound per namespace (a write carries its session's frontier).
 */
export const MAX_DEPS = 256;
