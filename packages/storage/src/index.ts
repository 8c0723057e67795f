/** @parley/storage — under construction in this session. */
export {};
