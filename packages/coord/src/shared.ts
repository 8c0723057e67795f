/**
 * `@parley/coord/shared` — what a second implementation of the strong side
 * (the etcd backend) shares with the state machine, so both apply one copy of
 * each rule: argument validation, the canonical JSON and its sizes, list
 * cursors, lock names and the version hash.
 */
export { type CursorPosition, decodeCursor, encodeCursor } from './cursor.js';
export { base64UrlDecode, base64UrlEncode, canonicalJson, deepFreeze, type JsonValue, MAX_JSON_DEPTH } from './json.js';
export { jsonBytes, lockName } from './machine-state.js';
export {
  checkFenceToken,
  checkId,
  checkIntInRange,
  checkKey,
  checkNamespace,
  checkOptionalBool,
  checkOptionalString,
  checkValue,
} from './validate.js';
export { hash128 } from './version.js';
