/**
 * @parley/node — the peer node every Parley process embeds.
 */
export type * from './api.js';
