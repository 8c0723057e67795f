import type { Transport } from '@parley/interface';
import { encodeMessage, RAFT_PROTOCOL } from '@parley/raft';
import { Simulation } from '@parley/sim';
import { describe, expect, it } from 'vitest';
import { PersistProbe } from './persist-probe.js';

const entry = (index: number, term: number) => ({ index, term, type: 'normal' as const, data: new Uint8Array([1]) });

describe('PersistProbe (persist before send)', () => {
  it('flags an acknowledgement or a vote that leaves before the write holding it is durable', async () => {
    const sim = new Simulation({ seed: 7 });
    const breaches: string[] = [];
    let inFlight = 0;
    let probe: PersistProbe | undefined;
    let transport: Transport | undefined;
    let storage: ReturnType<PersistProbe['wrapStorage']> | undefined;
    sim.addHost(
      'a',
      async (ctx) => {
        const disk = ctx.raftLog('raft');
        probe = new PersistProbe('a', disk, {
          breach: (m) => breaches.push(m),
          replyWithWriteInFlight: () => inFlight++,
        });
        storage = probe.wrapStorage();
        transport = probe.wrapTransport(ctx.transport);
        await ctx.transport.start();
      },
      { disk: { writeLatencyMs: { min: 20, max: 20 } } },
    );
    sim.addHost('b', async (ctx) => {
      ctx.transport.handle(RAFT_PROTOCOL, () => new Uint8Array());
      await ctx.transport.start();
    });
    await sim.runFor(5);
    const ack = (index: number) =>
      encodeMessage({ type: 'appResp', from: 'a', to: 'b', term: 1, index, reject: false, rejectHint: 0, logTerm: 0 });
    const vote = encodeMessage({ type: 'voteResp', from: 'a', to: 'b', term: 2, reject: false });

    // The save takes 20 ms: replies sent before it resolves promise what the disk lacks.
    const saved = storage!.save({ entries: [entry(1, 1), entry(2, 1)], hardState: { term: 2, vote: 'b', commit: 0 } });
    void transport!.send('b', RAFT_PROTOCOL, ack(2)).catch(() => {});
    void transport!.send('b', RAFT_PROTOCOL, vote).catch(() => {});
    expect(breaches).toEqual([
      'a acknowledged index 2 to b while its disk holds 0',
      "a granted its vote in term 2 to b while its disk records term 0, vote ''",
    ]);
    expect(inFlight).toBe(2);

    // Once durable, the same replies are fine.
    await sim.runFor(25);
    await saved;
    expect(probe!.durableLast).toBe(2);
    void transport!.send('b', RAFT_PROTOCOL, ack(2)).catch(() => {});
    void transport!.send('b', RAFT_PROTOCOL, vote).catch(() => {});
    expect(breaches).toHaveLength(2);

    // A truncated suffix: index 2 rewritten in term 3, acknowledged before the rewrite is durable.
    void storage!.save({ entries: [entry(2, 3)] });
    void transport!.send('b', RAFT_PROTOCOL, ack(2)).catch(() => {});
    expect(breaches[2]).toBe('a acknowledged index 2 (term 3) to b while its disk holds term 1 there');
    await sim.runFor(25);

    // A snapshot at index 3 of term 5 that disagrees with the log there replaces the whole
    // log, even though the disk held a longer one: once durable, acknowledging 3 is fine,
    // acknowledging 4 is not (PARLEY_SEED=200076 of raft-5-figure8-random reported the first).
    await Promise.all([sim.runFor(25), storage!.save({ entries: [entry(3, 3), entry(4, 3)] })]);
    expect(probe!.durableLast).toBe(4);
    const snapshot = {
      meta: { index: 3, term: 5, confState: { voters: ['a', 'b'], learners: [] } },
      data: new Uint8Array(),
    };
    await Promise.all([sim.runFor(25), storage!.save({ snapshot, hardState: { term: 5, vote: '', commit: 3 } })]);
    expect(probe!.durableLast).toBe(3);
    void transport!.send('b', RAFT_PROTOCOL, ack(3)).catch(() => {});
    expect(breaches).toHaveLength(3);
    void transport!.send('b', RAFT_PROTOCOL, ack(4)).catch(() => {});
    expect(breaches[3]).toBe('a acknowledged index 4 to b while its disk holds 3');
  });
});
