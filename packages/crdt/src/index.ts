/** @parley/crdt — under construction in this session. */
export {};
