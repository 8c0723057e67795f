/**
 * `@parley/net/testing` — the Transport compliance suite (vitest) every
 * implementation runs: libp2p, the in-memory twin, the simulator's transport.
 */
export * from './compliance.js';
