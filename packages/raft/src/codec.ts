import { ByteReader, ByteWriter, DecodeError, type RaftEntry, type SnapshotMeta } from '@parley/interface';
import type { Message } from './types.js';

/**
 * Deterministic binary codec for Raft messages.
 *
 * Frame: `u8 version (1) | u8 tag | varint term | string from | string to | body`.
 *
 * | tag | type           | body                                                            |
 * | --- | -------------- | --------------------------------------------------------------- |
 * | 1   | prop           | entries                                                         |
 * | 2   | app            | logTerm, index, commit, entries                                 |
 * | 3   | appResp        | index, reject, rejectHint, logTerm                              |
 * | 4   | vote           | logTerm, index, transfer                                        |
 * | 5   | voteResp       | reject                                                          |
 * | 6   | preVote        | logTerm, index, transfer                                        |
 * | 7   | preVoteResp    | reject                                                          |
 * | 8   | heartbeat      | commit, context                                                 |
 * | 9   | heartbeatResp  | context                                                         |
 * | 10  | snap           | meta (index, term, voters, learners), offset, totalBytes, data  |
 * | 11  | snapResp       | index, offset                                                   |
 * | 12  | timeoutNow     | —                                                               |
 * | 13  | readIndex      | context                                                         |
 * | 14  | readIndexResp  | index, context                                                  |
 * | 15  | transferLeader | transferee                                                      |
 *
 * Numbers are unsigned LEB128 varints (≤ 2^53 - 1), booleans one byte (0/1),
 * strings and byte strings a varint length then the bytes. An entry is
 * `varint term | varint index | u8 type (0 normal, 1 conf) | bytes data`.
 * Decoding checks every length and count against the bytes left and throws
 * only DecodeError.
 */
export const RAFT_CODEC_VERSION = 1;

const TAGS = {
  prop: 1,
  app: 2,
  appResp: 3,
  vote: 4,
  voteResp: 5,
  preVote: 6,
  preVoteResp: 7,
  heartbeat: 8,
  heartbeatResp: 9,
  snap: 10,
  snapResp: 11,
  timeoutNow: 12,
  readIndex: 13,
  readIndexResp: 14,
  transferLeader: 15,
} as const satisfies Record<Message['type'], number>;

/** Smallest encoding of one entry: term, index, type, empty data length. */
const MIN_ENTRY_BYTES = 4;
/** Smallest encoding of one peer id. */
const MIN_STRING_BYTES = 1;

function writeEntries(w: ByteWriter, ents: readonly RaftEntry[]): void {
  w.uint(ents.length);
  for (const e of ents) {
    w.uint(e.term);
    w.uint(e.index);
    w.u8(e.type === 'conf' ? 1 : 0);
    w.bytes(e.data);
  }
}

function readEntries(r: ByteReader): RaftEntry[] {
  const n = r.count(MIN_ENTRY_BYTES);
  const out: RaftEntry[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const term = r.uint();
    const index = r.uint();
    const t = r.u8();
    if (t > 1) throw new DecodeError(`unknown entry type ${t}`, r.pos - 1);
    out[i] = { term, index, type: t === 1 ? 'conf' : 'normal', data: r.bytes() };
  }
  return out;
}

function writeMeta(w: ByteWriter, meta: SnapshotMeta): void {
  w.uint(meta.index);
  w.uint(meta.term);
  const voters = [...meta.confState.voters].sort();
  const learners = [...meta.confState.learners].sort();
  w.uint(voters.length);
  for (const v of voters) w.string(v);
  w.uint(learners.length);
  for (const l of learners) w.string(l);
}

function readMeta(r: ByteReader): SnapshotMeta {
  const index = r.uint();
  const term = r.uint();
  const nv = r.count(MIN_STRING_BYTES);
  const voters: string[] = [];
  for (let i = 0; i < nv; i++) voters.push(r.string());
  const nl = r.count(MIN_STRING_BYTES);
  const learners: string[] = [];
  for (let i = 0; i < nl; i++) learners.push(r.string());
  return { index, term, confState: { voters, learners } };
}

function entriesSize(ents: readonly RaftEntry[]): number {
  let n = 0;
  for (const e of ents) n += e.data.byteLength + 24;
  return n;
}

export function encodeMessage(m: Message): Uint8Array {
  let hint = 64 + m.from.length * 3 + m.to.length * 3;
  if (m.type === 'app' || m.type === 'prop') hint += entriesSize(m.entries);
  else if (m.type === 'snap') hint += m.data.byteLength + 64;
  const w = new ByteWriter(hint);
  w.u8(RAFT_CODEC_VERSION);
  w.u8(TAGS[m.type]);
  w.uint(m.term);
  w.string(m.from);
  w.string(m.to);
  switch (m.type) {
    case 'prop':
      writeEntries(w, m.entries);
      break;
    case 'app':
      w.uint(m.logTerm);
      w.uint(m.index);
      w.uint(m.commit);
      writeEntries(w, m.entries);
      break;
    case 'appResp':
      w.uint(m.index);
      w.bool(m.reject);
      w.uint(m.rejectHint);
      w.uint(m.logTerm);
      break;
    case 'vote':
    case 'preVote':
      w.uint(m.logTerm);
      w.uint(m.index);
      w.bool(m.transfer);
      break;
    case 'voteResp':
    case 'preVoteResp':
      w.bool(m.reject);
      break;
    case 'heartbeat':
      w.uint(m.commit);
      w.bytes(m.context);
      break;
    case 'heartbeatResp':
      w.bytes(m.context);
      break;
    case 'snap':
      writeMeta(w, m.meta);
      w.uint(m.offset);
      w.uint(m.totalBytes);
      w.bytes(m.data);
      break;
    case 'snapResp':
      w.uint(m.index);
      w.uint(m.offset);
      break;
    case 'timeoutNow':
      break;
    case 'readIndex':
      w.bytes(m.context);
      break;
    case 'readIndexResp':
      w.uint(m.index);
      w.bytes(m.context);
      break;
    case 'transferLeader':
      w.string(m.transferee);
      break;
  }
  return w.finish();
}

/** Decodes one message; throws DecodeError (only) on any malformed input. */
export function decodeMessage(bytes: Uint8Array): Message {
  const r = new ByteReader(bytes);
  const version = r.u8();
  if (version !== RAFT_CODEC_VERSION) throw new DecodeError(`unsupported raft codec version ${version}`, 0);
  const tag = r.u8();
  const term = r.uint();
  const from = r.string();
  const to = r.string();
  let m: Message;
  switch (tag) {
    case TAGS.prop:
      m = { type: 'prop', from, to, term, entries: readEntries(r) };
      break;
    case TAGS.app: {
      const logTerm = r.uint();
      const index = r.uint();
      const commit = r.uint();
      m = { type: 'app', from, to, term, logTerm, index, commit, entries: readEntries(r) };
      break;
    }
    case TAGS.appResp: {
      const index = r.uint();
      const reject = r.bool();
      const rejectHint = r.uint();
      const logTerm = r.uint();
      m = { type: 'appResp', from, to, term, index, reject, rejectHint, logTerm };
      break;
    }
    case TAGS.vote:
    case TAGS.preVote: {
      const logTerm = r.uint();
      const index = r.uint();
      const transfer = r.bool();
      m = { type: tag === TAGS.vote ? 'vote' : 'preVote', from, to, term, logTerm, index, transfer };
      break;
    }
    case TAGS.voteResp:
    case TAGS.preVoteResp:
      m = { type: tag === TAGS.voteResp ? 'voteResp' : 'preVoteResp', from, to, term, reject: r.bool() };
      break;
    case TAGS.heartbeat: {
      const commit = r.uint();
      m = { type: 'heartbeat', from, to, term, commit, context: r.bytes() };
      break;
    }
    case TAGS.heartbeatResp:
      m = { type: 'heartbeatResp', from, to, term, context: r.bytes() };
      break;
    case TAGS.snap: {
      const meta = readMeta(r);
      const offset = r.uint();
      const totalBytes = r.uint();
      const data = r.bytes();
      if (offset + data.byteLength > totalBytes) throw new DecodeError('snapshot chunk past its total size', r.pos);
      m = { type: 'snap', from, to, term, meta, offset, totalBytes, data };
      break;
    }
    case TAGS.snapResp: {
      const index = r.uint();
      m = { type: 'snapResp', from, to, term, index, offset: r.uint() };
      break;
    }
    case TAGS.timeoutNow:
      m = { type: 'timeoutNow', from, to, term };
      break;
    case TAGS.readIndex:
      m = { type: 'readIndex', from, to, term, context: r.bytes() };
      break;
    case TAGS.readIndexResp: {
      const index = r.uint();
      m = { type: 'readIndexResp', from, to, term, index, context: r.bytes() };
      break;
    }
    case TAGS.transferLeader:
      m = { type: 'transferLeader', from, to, term, transferee: r.string() };
      break;
    default:
      throw new DecodeError(`unknown raft message tag ${tag}`, 1);
  }
  r.end();
  return m;
}
