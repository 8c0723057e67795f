/** @parley/coord — under construction in this session. */
export {};
