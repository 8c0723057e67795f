/**
 * Direct fan-out: a node that reaches every recent replica of a namespace
 * sends its gossip to each connected peer as one one-way message; once a
 * recent replica is out of its reach, gossipsub carries it again (and
 * forwards it); with `directFanoutPeers: 0`, always gossipsub.
 */
import { describe, expect, it, vi } from 'vitest';
import { eventually, memoryCluster } from '../testing/testkit.js';

describe('direct fan-out of eventual gossip', () => {
  it('sends one copy to each connected peer while every recent replica is connected, gossipsub otherwise', async () => {
    const c = memoryCluster();
    const quiet = { antiEntropyMs: 3_600_000 }; // after the rounds on connect, gossip only
    const a = await c.start('a', quiet);
    const b = await c.start('b', quiet);
    const d = await c.start('d', quiet);
    for (const n of [a, b, d]) await n.eventualModule.namespace('fan').ready;
    await eventually(() => a.eventualModule.namespace('fan').replication.knownReplicas().length === 2);
    const t = a.context.transport;
    const publish = vi.spyOn(t, 'publish');
    const send = vi.spyOn(t, 'send');

    await a.eventual('fan').set('one', 1);
    await c.time.advance(5); // gossip delay
    await eventually(async () => (await b.eventual('fan').get('one'))?.value === 1);
    await eventually(async () => (await d.eventual('fan').get('one'))?.value === 1);
    const gossipSends = () => send.mock.calls.filter(([, protocol]) => protocol === 'parley/ev/1/fan');
    expect(
      gossipSends()
        .map(([peer]) => peer)
        .sort(),
    ).toEqual(['b', 'd']);
    expect(publish).not.toHaveBeenCalled();

    // d, heard from lately, is out of reach: a's gossip goes through gossipsub, which may forward it.
    c.network.disconnect('a', 'd');
    await a.eventual('fan').set('two', 2);
    await c.time.advance(5);
    await eventually(async () => (await b.eventual('fan').get('two'))?.value === 2);
    expect(publish).toHaveBeenCalledTimes(1);
    expect(gossipSends()).toHaveLength(2);
    for (const id of ['a', 'b', 'd']) await c.stop(id);
  });

  it('with directFanoutPeers 0 always publishes through gossipsub', async () => {
    const c = memoryCluster();
    const a = await c.start('a', { directFanoutPeers: 0, antiEntropyMs: 3_600_000 });
    const b = await c.start('b', { antiEntropyMs: 3_600_000 });
    for (const n of [a, b]) await n.eventualModule.namespace('fan').ready;
    const publish = vi.spyOn(a.context.transport, 'publish');
    await a.eventual('fan').set('k', 1);
    await c.time.advance(5);
    await eventually(async () => (await b.eventual('fan').get('k'))?.value === 1);
    expect(publish).toHaveBeenCalledTimes(1);
    for (const id of ['a', 'b']) await c.stop(id);
  });
});
