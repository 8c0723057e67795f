import { encodeDigest, type NamespaceReplica } from '@parley/crdt';
import { bytesEqual } from '../bytes.js';

/** Whether every replica's digest (its dot context) encodes to the same bytes: they hold the same writes. */
export function digestsAgree(replicas: readonly NamespaceReplica[]): boolean {
  const [first, ...rest] = replicas.map((r) => encodeDigest(r.digest()));
  return first === undefined || rest.every((d) => bytesEqual(d, first));
}
