import { describe, expect, it } from 'vitest';
import { eventually, memoryCluster, settle } from '../testing/testkit.js';
import { MAX_EPHEMERAL_BYTES } from './ephemeral.js';

describe('ephemeral channels', () => {
  it('reach the other subscribed nodes of the namespace, never the sender', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const d = await c.start('d');
    const got: Record<string, string[]> = { a: [], b: [], d: [] };
    const text = (m: Uint8Array) => new TextDecoder().decode(m);
    a.eventual('ns')
      .ephemeral('room.1')
      .subscribe((from, m) => got.a!.push(`${from}:${text(m)}`));
    b.eventual('ns')
      .ephemeral('room.1')
      .subscribe((from, m) => got.b!.push(`${from}:${text(m)}`));
    // Another channel and another namespace with the same channel name are separate topics.
    d.eventual('ns')
      .ephemeral('room.2')
      .subscribe((from, m) => got.d!.push(`${from}:${text(m)}`));
    d.eventual('other')
      .ephemeral('room.1')
      .subscribe((from, m) => got.d!.push(`${from}:${text(m)}`));
    await a.eventual('ns').ephemeral('room.1').publish(new TextEncoder().encode('hi'));
    await eventually(() => got.b!.length === 1);
    await settle();
    expect(got).toEqual({ a: [], b: ['a:hi'], d: [] });

    c.network.partition(['a'], ['b', 'd']);
    await a.eventual('ns').ephemeral('room.1').publish(new TextEncoder().encode('apart'));
    c.network.heal();
    await b.eventual('ns').ephemeral('room.1').publish(new TextEncoder().encode('back'));
    await eventually(() => got.a!.length === 1);
    await settle();
    expect(got.a).toEqual(['b:back']);
    expect(got.b).toEqual(['a:hi']); // what was sent across the cut is gone, not repaired
    await Promise.all([a.close(), b.close(), d.close()]);
  });

  it('refuses bad channel names and oversized messages with typed errors', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const ns = a.eventual('ns');
    for (const bad of ['', 'a/b', 'x'.repeat(129), 'sp ace']) {
      expect(() => ns.ephemeral(bad)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
    await expect(ns.ephemeral('ok').publish(new Uint8Array(MAX_EPHEMERAL_BYTES + 1))).rejects.toMatchObject({
      code: 'value_too_large',
    });
    await a.close();
  });
});
