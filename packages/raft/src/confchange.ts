import { ByteReader, ByteWriter, DecodeError, type PeerId } from '@parley/interface';
import type { ConfChange, ConfChangeType } from './types.js';

/**
 * Conf change payload of a `conf` entry.
 *
 * | byte | meaning                                        |
 * | ---- | ---------------------------------------------- |
 * | 0    | version (1)                                    |
 * | 1    | type: 1 addVoter, 2 addLearner, 3 removeNode   |
 * | 2..  | node id (varint length + UTF-8)                |
 */
const CONF_VERSION = 1;
const TYPE_TAGS: Record<ConfChangeType, number> = { addVoter: 1, addLearner: 2, removeNode: 3 };
const TAG_TYPES: Record<number, ConfChangeType> = { 1: 'addVoter', 2: 'addLearner', 3: 'removeNode' };

export function encodeConfChange(cc: ConfChange): Uint8Array {
  const w = new ByteWriter(16 + cc.node.length * 3);
  w.u8(CONF_VERSION);
  w.u8(TYPE_TAGS[cc.type]);
  w.string(cc.node);
  return w.finish();
}

export function decodeConfChange(bytes: Uint8Array): ConfChange {
  const r = new ByteReader(bytes);
  const version = r.u8();
  if (version !== CONF_VERSION) throw new DecodeError(`unknown conf change version ${version}`, 0);
  const tag = r.u8();
  const type = TAG_TYPES[tag];
  if (!type) throw new DecodeError(`unknown conf change type ${tag}`, 1);
  const node: PeerId = r.string();
  if (node === '') throw new DecodeError('empty node id', 2);
  r.end();
  return { type, node };
}
