/**
 * `@parley/server/testing` — y-websocket clients (a stock provider and a raw
 * socket speaking the protocol by hand) for tests and benchmarks of the Yjs door.
 */
export * from './yjs-clients.js';
