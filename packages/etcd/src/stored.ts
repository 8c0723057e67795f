/**
 * A stored entry's record read back from etcd: a record that does not decode
 * is corruption of Parley's keys (`storage_corrupt`), never a missing entry.
 */
import { DecodeError, StorageCorruptError } from '@parley/interface';
import type { IKeyValue } from 'etcd3';
import type { EtcdContext } from './context.js';
import { decodeEntryRecord, type EntryRecord } from './record.js';

/** The record in `kv`; throws StorageCorruptError when it does not decode. */
export function decodeKv(ctx: EtcdContext, kv: IKeyValue): EntryRecord {
  try {
    return decodeEntryRecord(kv.value, ctx.maxRecordBytes);
  } catch (err) {
    if (err instanceof DecodeError) {
      throw new StorageCorruptError('etcd', `entry ${kv.key.toString('utf8')}: ${err.message}`);
    }
    throw err;
  }
}
