import { describe, expect, it } from 'vitest';
import { HistoryRecorder, type HistoryValue } from './history.js';
import { checkLinearizability } from './linearizability.js';
import type { Model } from './model.js';
import { parleyLeaseModel, parleyLockModel } from './models/index.js';

/** Calls at given times: [process, f, input, invoke ms, complete ms, ok value or {err}]. */
type Call = readonly [string, string, HistoryValue, number, number, HistoryValue | { err: string }];

function verdict(model: Model, calls: readonly Call[]) {
  const rec = new HistoryRecorder();
  const events = calls.flatMap((c) => [
    { at: c[3], run: () => rec.invoke(c[0], c[1], c[2], 'k', { timeMs: c[3] }) },
    {
      at: c[4],
      run: () => {
        const r = c[5];
        if (r !== null && typeof r === 'object' && 'err' in r)
          rec.fail(c[0], null, { error: String(r.err), timeMs: c[4] });
        else rec.ok(c[0], r, { timeMs: c[4] });
      },
    },
  ]);
  for (const e of events.sort((a, b) => a.at - b.at)) e.run();
  return checkLinearizability(model, rec.events()).verdict;
}

const lease = parleyLeaseModel as unknown as Model;
const lock = parleyLockModel as unknown as Model;
const TTL = { ttlMs: 3_000, skewMs: 200 };

describe('time-aware leases and locks (ttlMs, skewMs)', () => {
  it('a takeover completed before acquire + TTL − ε is not linearizable; after it, it is', () => {
    const first: Call = ['a', 'acquire', { holder: 'a', ...TTL }, 1_000, 1_010, { epoch: 1 }];
    // Two holders inside one TTL: b's acquire completed at 2,500 < 1,000 + 3,000 − 200.
    expect(verdict(lease, [first, ['b', 'acquire', { holder: 'b', ...TTL }, 2_400, 2_500, { epoch: 2 }]])).toBe(
      'not linearizable',
    );
    // The same takeover completing after 3,800 may follow an expiry.
    expect(verdict(lease, [first, ['b', 'acquire', { holder: 'b', ...TTL }, 3_700, 3_900, { epoch: 2 }]])).toBe(
      'linearizable',
    );
    // Without TTLs in the history the model cannot tell: any takeover with a newer token passes.
    expect(
      verdict(lease, [
        ['a', 'acquire', { holder: 'a' }, 1_000, 1_010, { epoch: 1 }],
        ['b', 'acquire', { holder: 'b' }, 2_400, 2_500, { epoch: 2 }],
      ]),
    ).toBe('linearizable');
  });

  it('a renewal extends the grant from its own invocation', () => {
    const calls: Call[] = [
      ['a', 'acquire', { owner: 'a', ...TTL }, 0, 10, { fence: 1 }],
      ['a', 'renew', { owner: 'a', fence: 1, ...TTL }, 2_000, 2_010, {}],
      // 4,000 is past the first grant's bound (2,800) but inside the renewal's (4,800).
      ['b', 'acquire', { owner: 'b', ...TTL }, 3_900, 4_000, { fence: 2 }],
    ];
    expect(verdict(lock, calls)).toBe('not linearizable');
    expect(verdict(lock, calls.slice(0, 1).concat([calls[2] as Call]))).toBe('linearizable');
  });

  it('a lease read free, or lost by its holder, before its TTL ran out is not linearizable', () => {
    const first: Call = ['a', 'acquire', { holder: 'a', ...TTL }, 0, 10, { epoch: 1 }];
    expect(verdict(lease, [first, ['c', 'get', null, 1_000, 1_010, null]])).toBe('not linearizable');
    expect(verdict(lease, [first, ['c', 'get', null, 2_900, 2_910, null]])).toBe('linearizable');
    expect(
      verdict(lease, [first, ['a', 'renew', { holder: 'a', epoch: 1, ...TTL }, 500, 510, { err: 'lease_lost' }]]),
    ).toBe('not linearizable');
    // Released: free at once.
    expect(
      verdict(lease, [
        first,
        ['a', 'release', { holder: 'a', epoch: 1 }, 100, 110, {}],
        ['b', 'acquire', { holder: 'b', ...TTL }, 200, 210, { epoch: 2 }],
      ]),
    ).toBe('linearizable');
  });

  it('a read may find a grant over while a later call, judged at a clock behind, still finds it held', () => {
    // coord-5-lease-drift seed 400663, in small: c3 holds the lock (TTL 1 s) and renews it before
    // its deadline; the renewal commits late (its leader was cut off), and meanwhile a reader whose
    // clock is ahead finds the lock free. The renewal counts from its stamp, so later calls find
    // c3 holding it: expiry is not one instant for every caller, only bounded by ε each way.
    const ONE = { ttlMs: 1_000, skewMs: 200 };
    const calls: Call[] = [
      ['c3', 'acquire', { owner: 'c3', ...ONE }, 0, 10, { fence: 5 }],
      ['c3', 'renew', { owner: 'c3', fence: 5, ...ONE }, 600, 1_700, {}],
      ['c8', 'get', null, 1_250, 1_260, null],
      ['c4', 'acquire', { owner: 'c4', ...ONE }, 1_600, 1_650, { err: 'lock_held' }],
    ];
    expect(verdict(lock, calls)).toBe('linearizable');
    // The bounds still hold: a free read before acquire + TTL − ε, or a takeover inside the
    // renewal's bound, is refused.
    expect(verdict(lock, [calls[0] as Call, ['c8', 'get', null, 500, 510, null]])).toBe('not linearizable');
    expect(
      verdict(lock, [
        calls[0] as Call,
        ['c3', 'renew', { owner: 'c3', fence: 5, ...ONE }, 600, 610, {}],
        ['c8', 'get', null, 1_250, 1_260, null],
        ['c4', 'acquire', { owner: 'c4', ...ONE }, 1_300, 1_310, { fence: 6 }],
      ]),
    ).toBe('not linearizable');
  });

  it('without TTLs too, a free read does not end the grant for later calls (clock jumps)', () => {
    // node-strong-5-chaos seed 400048, in small: a reader whose clock jumped ahead finds the lock
    // free while the holder's renewal, concurrent with the read, keeps it.
    const calls: Call[] = [
      ['c4', 'acquire', { owner: 'c4' }, 0, 10, { fence: 10 }],
      ['c4', 'renew', { owner: 'c4', fence: 10 }, 100, 300, {}],
      ['c3', 'get', null, 150, 200, null],
      ['c3', 'get', null, 400, 410, { owner: 'c4', fence: 10 }],
    ];
    expect(verdict(lock, calls)).toBe('linearizable');
    // Tokens still order everything: a read of an older fence after a newer grant is refused.
    expect(
      verdict(lock, [
        calls[0] as Call,
        ['c5', 'acquire', { owner: 'c5' }, 100, 110, { fence: 11 }],
        ['c3', 'get', null, 400, 410, { owner: 'c4', fence: 10 }],
      ]),
    ).toBe('not linearizable');
  });
});
