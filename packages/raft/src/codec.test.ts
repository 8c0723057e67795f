import { isParleyError, type RaftEntry, testSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeMessage } from './codec.js';
import { decodeConfChange, encodeConfChange } from './confchange.js';
import type { Message } from './types.js';

const SEED = testSeed(4242);
const params = { seed: SEED, numRuns: 300 };

const peer = fc.string({ minLength: 0, maxLength: 12 });
const u = fc.nat({ max: Number.MAX_SAFE_INTEGER });
const small = fc.nat({ max: 1_000_000 });
const bytes = fc.uint8Array({ maxLength: 64 });
const entry: fc.Arbitrary<RaftEntry> = fc.record({
  term: small,
  index: u,
  type: fc.constantFrom('normal' as const, 'conf' as const),
  data: bytes,
});
const base = { from: peer, to: peer, term: u };

const message: fc.Arbitrary<Message> = fc.oneof(
  fc.record({ type: fc.constant('prop' as const), ...base, entries: fc.array(entry, { maxLength: 5 }) }),
  fc.record({
    type: fc.constant('app' as const),
    ...base,
    logTerm: u,
    index: u,
    commit: u,
    entries: fc.array(entry, { maxLength: 5 }),
  }),
  fc.record({
    type: fc.constant('appResp' as const),
    ...base,
    index: u,
    reject: fc.boolean(),
    rejectHint: u,
    logTerm: u,
  }),
  fc.record({
    type: fc.constantFrom('vote' as const, 'preVote' as const),
    ...base,
    logTerm: u,
    index: u,
    transfer: fc.boolean(),
  }),
  fc.record({ type: fc.constantFrom('voteResp' as const, 'preVoteResp' as const), ...base, reject: fc.boolean() }),
  fc.record({ type: fc.constant('heartbeat' as const), ...base, commit: u, context: bytes }),
  fc.record({ type: fc.constant('heartbeatResp' as const), ...base, context: bytes }),
  fc
    .record({
      ...base,
      index: u,
      mterm: u,
      voters: fc.array(peer, { maxLength: 4 }),
      learners: fc.array(peer, { maxLength: 2 }),
      offset: small,
      extra: small,
      data: bytes,
    })
    .map(
      (r): Message => ({
        type: 'snap',
        from: r.from,
        to: r.to,
        term: r.term,
        meta: {
          index: r.index,
          term: r.mterm,
          confState: { voters: [...r.voters].sort(), learners: [...r.learners].sort() },
        },
        offset: r.offset,
        totalBytes: r.offset + r.data.byteLength + r.extra,
        data: r.data,
      }),
    ),
  fc.record({ type: fc.constant('snapResp' as const), ...base, index: u, offset: u }),
  fc.record({ type: fc.constant('timeoutNow' as const), ...base }),
  fc.record({ type: fc.constant('readIndex' as const), ...base, context: bytes }),
  fc.record({ type: fc.constant('readIndexResp' as const), ...base, index: u, context: bytes }),
  fc.record({ type: fc.constant('transferLeader' as const), ...base, transferee: peer }),
);

describe('raft message codec', () => {
  it(`round-trips every message type (PARLEY_SEED=${SEED})`, () => {
    fc.assert(
      fc.property(message, (m) => {
        const b = encodeMessage(m);
        expect(decodeMessage(b)).toEqual(m);
        // Deterministic: the same message always encodes to the same bytes.
        expect(encodeMessage(decodeMessage(b))).toEqual(b);
      }),
      params,
    );
  });

  it(`throws only DecodeError on truncated, mutated or random bytes (PARLEY_SEED=${SEED})`, () => {
    const onlyDecodeErrors = (b: Uint8Array) => {
      try {
        decodeMessage(b);
      } catch (err) {
        if (!isParleyError(err, 'decode_error')) throw err;
      }
    };
    fc.assert(
      fc.property(message, fc.nat(), fc.nat({ max: 255 }), (m, at, v) => {
        const b = encodeMessage(m);
        onlyDecodeErrors(b.subarray(0, at % (b.length + 1)));
        const mutated = b.slice();
        mutated[at % b.length] = v;
        onlyDecodeErrors(mutated);
      }),
      params,
    );
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), onlyDecodeErrors), params);
  });

  it('rejects a huge declared count without allocating for it', () => {
    // version 1, tag app, term 1, from "", to "", logTerm, index, commit, then a count of 2^40 entries.
    const b = new Uint8Array([1, 2, 1, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
    expect(() => decodeMessage(b)).toThrow(expect.objectContaining({ code: 'decode_error' }));
  });
});

describe('conf change envelopes', () => {
  it('round-trips conf changes and rejects garbage', () => {
    for (const type of ['addVoter', 'addLearner', 'removeNode'] as const) {
      expect(decodeConfChange(encodeConfChange({ type, node: 'peer-7' }))).toEqual({ type, node: 'peer-7' });
    }
    expect(() => decodeConfChange(new Uint8Array([1, 9, 1, 65]))).toThrow(
      expect.objectContaining({ code: 'decode_error' }),
    );
    expect(() => decodeConfChange(new Uint8Array([1, 1, 0]))).toThrow(
      expect.objectContaining({ code: 'decode_error' }),
    );
  });
});
