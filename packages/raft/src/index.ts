/** @parley/raft — under construction in this session. */
export {};
