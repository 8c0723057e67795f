/**
 * `set` answers one shape in both tiers: the entry as written, with `operation`,
 * so `(await ns.set(k, v)).version` works on eventual and strong namespaces alike.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ParleyNode } from './api.js';
import { createNode } from './node.js';
import { silentNodeLogger } from './testing/testkit.js';

let dir: string;
let node: ParleyNode;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-set-shape-'));
  node = await createNode({ dataDir: dir, logger: silentNodeLogger });
});
afterAll(async () => {
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('set answers the entry with operation, in both tiers', () => {
  it('has the fields of a read plus operation; the strong entry adds only its kind', async () => {
    const strong = await node.strong('shape').set('k', { n: 1 }, { ttl: 60 });
    const eventual = await node.eventual('shape').set('k', { n: 1 }, { ttl: 60 });
    expect([strong.operation, eventual.operation]).toEqual(['created', 'created']);
    expect((await node.strong('shape').get('k'))?.version).toBe(strong.version);
    expect((await node.eventual('shape').get('k'))?.version).toBe(eventual.version);
    const { operation: _s, ...strongEntry } = strong;
    const { operation: _e, ...eventualEntry } = eventual;
    expect(strongEntry).toEqual(await node.strong('shape').get('k'));
    expect(eventualEntry).toEqual(await node.eventual('shape').get('k'));
    expect(Object.keys(strong).sort()).toEqual([...Object.keys(eventual), 'kind'].sort());
    expect((await node.strong('shape').set('k', 2, { ifVersion: strong.version })).operation).toBe('updated');
    expect((await node.eventual('shape').set('k', 2)).operation).toBe('updated');
  });

  it('eventual set says created again after a delete', async () => {
    const ns = node.eventual('shape-again');
    expect((await ns.set('k', 1)).operation).toBe('created');
    await ns.delete('k');
    expect((await ns.set('k', 2)).operation).toBe('created');
    expect((await ns.set('k', 3)).operation).toBe('updated');
  });
});
