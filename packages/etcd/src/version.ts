/**
 * Entry versions on etcd: the key's `mod_revision`, written as an opaque
 * token of the same shape as coord's (16 base64url characters, 12 bytes):
 * the revision as 8 big-endian bytes, then a 32-bit check bound to the
 * namespace and key. The check makes a token of one key never pass as a
 * version of another (two keys written by one transaction share a revision),
 * and makes a mistyped or foreign token a plain `version_mismatch`, as on the
 * built-in backend. Callers must treat tokens as opaque: the revision inside
 * is an implementation detail, not an API.
 */
import { base64UrlDecode, base64UrlEncode, hash128 } from '@parley/coord/shared';

function check(namespace: string, key: string, revision: number): number {
  return hash128(`etcd-version|${revision}|${namespace.length}:${namespace}|${key}`)[0];
}

/** The version token of `namespace/key` at etcd mod_revision `revision` (≥ 1). */
export function versionOf(namespace: string, key: string, revision: number): string {
  const bytes = new Uint8Array(12);
  const view = new DataView(bytes.buffer);
  view.setBigUint64(0, BigInt(revision));
  view.setUint32(8, check(namespace, key, revision));
  return base64UrlEncode(bytes);
}

/** The mod_revision a token names for `namespace/key`, or undefined when it is not one of its tokens. */
export function revisionOf(namespace: string, key: string, token: string): number | undefined {
  if (typeof token !== 'string' || token.length !== 16) return undefined;
  const bytes = base64UrlDecode(token);
  if (bytes?.length !== 12) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const big = view.getBigUint64(0);
  if (big < 1n || big > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const revision = Number(big);
  if (view.getUint32(8) !== check(namespace, key, revision)) return undefined;
  return revision;
}
