import { describe, expect, it } from 'vitest';
import { silentLogger } from './logger.js';
import { createMemoryNetwork } from './memory.js';

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('memory network', () => {
  it('partitions and heals with disconnect/connect events, failing requests across the cut', async () => {
    const network = createMemoryNetwork();
    const [a, b, c] = [0, 1, 2].map(() => network.createTransport({ logger: silentLogger }));
    if (!a || !b || !c) throw new Error('unreachable');
    const events: string[] = [];
    a.on('peer:connect', (p) => events.push(`+${p}`));
    a.on('peer:disconnect', (p) => events.push(`-${p}`));
    for (const t of [a, b, c]) await t.start();
    b.handle('echo', (_from, r) => r);
    expect(events).toEqual([`+${b.peerId}`, `+${c.peerId}`]);

    network.partition([a.peerId], [b.peerId, c.peerId]);
    expect(events.slice(2)).toEqual([`-${b.peerId}`, `-${c.peerId}`]);
    expect(a.peers()).toEqual([]);
    expect(b.peers()).toEqual([c.peerId]);
    await expect(a.request(b.peerId, 'echo', new Uint8Array([1]))).rejects.toMatchObject({ code: 'unavailable' });
    const got: string[] = [];
    b.subscribe('t', (from) => got.push(from));
    await a.publish('t', new Uint8Array([1]));
    await c.publish('t', new Uint8Array([1]));
    await settle();
    expect(got).toEqual([c.peerId]);

    network.heal();
    expect(events.slice(4).sort()).toEqual([`+${b.peerId}`, `+${c.peerId}`].sort());
    expect([...(await a.request(b.peerId, 'echo', new Uint8Array([5])))]).toEqual([5]);
  });

  it('fails a request whose link is cut while it is in flight', async () => {
    const network = createMemoryNetwork();
    const a = network.createTransport({ logger: silentLogger });
    const b = network.createTransport({ logger: silentLogger });
    await a.start();
    await b.start();
    let entered = false;
    b.handle('slow', () => {
      entered = true;
      return new Promise<Uint8Array>(() => {});
    });
    const pending = a.request(b.peerId, 'slow', new Uint8Array(), { timeoutMs: 30_000 });
    pending.catch(() => {});
    for (let i = 0; i < 100 && !entered; i++) await settle();
    expect(entered).toBe(true);
    network.disconnect(a.peerId, b.peerId);
    await expect(pending).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('keeps clusters with different keys apart, and copies payloads at each hop', async () => {
    const network = createMemoryNetwork();
    const a = network.createTransport({ cluster: 'one', logger: silentLogger });
    const b = network.createTransport({ cluster: 'one', logger: silentLogger });
    const outsider = network.createTransport({ cluster: 'two', logger: silentLogger });
    for (const t of [a, b, outsider]) await t.start();
    expect(a.peers()).toEqual([b.peerId]);
    expect(outsider.peers()).toEqual([]);
    let seen: Uint8Array | undefined;
    b.handle('keep', (_from, r) => {
      seen = r;
      return r;
    });
    const payload = new Uint8Array([1, 2, 3]);
    const reply = await a.request(b.peerId, 'keep', payload);
    payload[0] = 99;
    expect(seen?.[0]).toBe(1);
    expect(reply[0]).toBe(1);
    expect(() => network.createTransport({ peerId: a.peerId })).toThrow(/taken/);
  });
});
