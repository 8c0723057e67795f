/**
 * @parley/raft: messages (codec.ts) and conf changes (confchange.ts).
 */
import type { RaftEntry, SnapshotMeta } from '@parley/interface';
import {
  type ConfChange,
  decodeConfChange,
  decodeMessage,
  encodeConfChange,
  encodeMessage,
  type Message,
} from '@parley/raft';
import type { Gen } from '../gen.js';
import type { Target } from '../target.js';

const TYPES: readonly Message['type'][] = [
  'prop',
  'app',
  'appResp',
  'vote',
  'voteResp',
  'preVote',
  'preVoteResp',
  'heartbeat',
  'heartbeatResp',
  'snap',
  'snapResp',
  'timeoutNow',
  'readIndex',
  'readIndexResp',
  'transferLeader',
];

function peer(g: Gen): string {
  return g.bool(0.7) ? `n${g.int(7)}` : g.string(40);
}

function entries(g: Gen): RaftEntry[] {
  const n = g.bool(0.01) ? g.int(2000) : g.size(32);
  const out: RaftEntry[] = [];
  const first = g.uint();
  const term = g.uint();
  for (let i = 0; i < n; i++) {
    out.push({
      term: g.bool(0.9) ? term : g.uint(),
      index: g.bool(0.9) ? Math.min(first + i, Number.MAX_SAFE_INTEGER) : g.uint(),
      type: g.bool(0.1) ? 'conf' : 'normal',
      data: g.bool(0.002) ? g.bytes(g.int(1 << 20)) : g.blob(512),
    });
  }
  return out;
}

function meta(g: Gen): SnapshotMeta {
  const voters = Array.from({ length: g.size(9) }, () => peer(g));
  const learners = Array.from({ length: g.size(9) }, () => peer(g));
  return { index: g.uint(), term: g.uint(), confState: { voters, learners } };
}

function message(g: Gen): Message {
  const base = { from: peer(g), to: peer(g), term: g.uint() };
  const type = g.pick(TYPES);
  switch (type) {
    case 'prop':
      return { ...base, type, entries: entries(g) };
    case 'app':
      return { ...base, type, logTerm: g.uint(), index: g.uint(), commit: g.uint(), entries: entries(g) };
    case 'appResp':
      return { ...base, type, index: g.uint(), reject: g.bool(), rejectHint: g.uint(), logTerm: g.uint() };
    case 'vote':
    case 'preVote':
      return { ...base, type, logTerm: g.uint(), index: g.uint(), transfer: g.bool() };
    case 'voteResp':
    case 'preVoteResp':
      return { ...base, type, reject: g.bool() };
    case 'heartbeat':
      return { ...base, type, commit: g.uint(), context: g.blob(64) };
    case 'heartbeatResp':
    case 'readIndex':
      return { ...base, type, context: g.blob(64) };
    case 'snap': {
      const data = g.bool(0.002) ? g.bytes(g.int(1 << 20)) : g.blob(4096);
      const offset = g.uint(Number.MAX_SAFE_INTEGER - data.length);
      const totalBytes = g.uintIn(offset + data.length, Number.MAX_SAFE_INTEGER);
      return { ...base, type, meta: meta(g), offset, totalBytes, data };
    }
    case 'snapResp':
      return { ...base, type, index: g.uint(), offset: g.uint() };
    case 'timeoutNow':
      return { ...base, type };
    case 'readIndexResp':
      return { ...base, type, index: g.uint(), context: g.blob(64) };
    case 'transferLeader':
      return { ...base, type, transferee: peer(g) };
  }
}

/** The encoder writes voters and learners sorted: they are sets. */
function normalizeMessage(m: Message): unknown {
  if (m.type !== 'snap') return m;
  const { voters, learners } = m.meta.confState;
  return { ...m, meta: { ...m.meta, confState: { voters: [...voters].sort(), learners: [...learners].sort() } } };
}

export const raftTargets: Target[] = [
  {
    name: 'raft.decodeMessage',
    codes: ['decode_error'],
    generate: message,
    encode: (m: Message) => encodeMessage(m),
    decode: decodeMessage,
    normalize: normalizeMessage,
  } satisfies Target<Message>,
  {
    name: 'raft.decodeConfChange',
    codes: ['decode_error'],
    generate: (g: Gen): ConfChange => ({
      type: g.pick(['addVoter', 'addLearner', 'removeNode'] as const),
      node: g.bool(0.05) ? g.string(5000, 1) || 'x' : g.id(40),
    }),
    encode: (c: ConfChange) => encodeConfChange(c),
    decode: decodeConfChange,
  } satisfies Target<ConfChange>,
];
