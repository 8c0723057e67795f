/** @parley/sim — under construction in this session. */
export {};
