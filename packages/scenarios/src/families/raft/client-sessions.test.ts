/**
 * The raft-* value machine's client sessions: the envelope round-trips, and a
 * retried command applies at most once.
 */
import { testSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ClientSessions, decodeSessionEnvelope, encodeSessionEnvelope } from './client-sessions.js';

const params = { seed: testSeed(4242), numRuns: 300 };
const bytes = fc.uint8Array({ maxLength: 64 });

describe('session envelopes', () => {
  it('round-trips session envelopes', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        bytes,
        (clientId, seq, payload) => {
          expect(decodeSessionEnvelope(encodeSessionEnvelope({ clientId, seq, payload }))).toEqual({
            clientId,
            seq,
            payload,
          });
        },
      ),
      params,
    );
  });

  it('client sessions apply a retried command at most once (thesis §6.3)', () => {
    const s = new ClientSessions<string>(2);
    expect(s.check('c1', 1)).toEqual({ type: 'apply' });
    s.record('c1', 1, 10, 'ok-1');
    expect(s.check('c1', 1)).toEqual({ type: 'duplicate', result: 'ok-1' });
    expect(s.check('c1', 2)).toEqual({ type: 'apply' });
    s.record('c1', 2, 11, 'ok-2');
    expect(s.check('c1', 1)).toEqual({ type: 'stale' });
    s.record('c2', 1, 12, 'a');
    s.record('c3', 1, 13, 'b'); // evicts c1 (least recently applied)
    expect(s.size()).toBe(2);
    expect(s.check('c1', 3)).toEqual({ type: 'expired' });
  });
});
