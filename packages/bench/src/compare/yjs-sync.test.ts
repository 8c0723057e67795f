import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { circulantEdges } from './yjs-propagation.js';
import { YjsSyncEndpoint } from './yjs-sync.js';

describe('Yjs propagation anchor', () => {
  const dirs: string[] = [];
  const endpoints: YjsSyncEndpoint[] = [];
  afterEach(async () => {
    await Promise.allSettled(endpoints.splice(0).map((e) => e.close()));
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const open = async () => {
    const d = mkdtempSync(join(tmpdir(), 'parley-yjs-sync-test-'));
    dirs.push(d);
    const e = await YjsSyncEndpoint.open(d);
    endpoints.push(e);
    return e;
  };
  const arrived = (e: YjsSyncEndpoint, key: string, value: unknown) =>
    new Promise<void>((resolve, reject) => {
      const map = e.doc.getMap('m');
      const timer = setTimeout(() => reject(new Error(`${key} did not arrive`)), 5_000);
      const check = () => {
        if (map.get(key) !== value) return;
        clearTimeout(timer);
        map.unobserve(check);
        resolve();
      };
      map.observe(check);
      check();
    });

  it('links each pair of the non-writer nodes once, about 6 neighbours each', () => {
    const edges = circulantEdges(19);
    expect(new Set(edges.map(([a, b]) => `${a}-${b}`)).size).toBe(edges.length);
    expect(edges.every(([a, b]) => a < b)).toBe(true);
    const degree = new Array(19).fill(0);
    for (const [a, b] of edges) {
      degree[a]++;
      degree[b]++;
    }
    expect(degree.every((d) => d === 6)).toBe(true);
    expect(circulantEdges(3)).toEqual([
      [0, 1],
      [0, 2],
      [1, 2],
    ]);
    expect(circulantEdges(1)).toEqual([]);
  });

  it('syncs what each side had before connecting, then relays updates over a chain', async () => {
    const a = await open();
    const b = await open();
    const c = await open();
    a.doc.getMap('m').set('before', 1);
    await a.connect(await b.listen());
    await arrived(b, 'before', 1); // sync step 1 / step 2
    await b.connect(await c.listen());
    await arrived(c, 'before', 1);
    a.doc.getMap('m').set('after', 2); // a → b → c: b relays what changed its doc
    await arrived(c, 'after', 2);
    expect(a.connections).toBe(1);
    expect(b.connections).toBe(2);
    expect(a.bytesOut).toBeGreaterThan(0);
  });
});
