/**
 * `@parley/node/codec` — the node's wire and record formats, for the decoder
 * fuzzer: the eventual protocol (gossip batches, requests, checksummed records)
 * and the strong-call protocol (requests, change pages).
 */
export { appendChecksum, stripChecksum } from './eventual/persist.js';
export {
  decodeGossip,
  decodeRequest as decodeEventualRequest,
  encodeGossip,
  encodeRequest as encodeEventualRequest,
} from './eventual/wire.js';
export {
  type ChangesPage,
  decodeChanges,
  decodeRequest as decodeStrongRequest,
  encodeChanges,
  encodeRequest as encodeStrongRequest,
  MAX_CHANGES_PER_PAGE,
  MAX_WAIT_MS,
  type StrongRequest,
} from './strong/wire.js';
