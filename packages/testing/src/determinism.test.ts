/**
 * Same seed, same run: the recorded history is byte-identical across two runs
 * in this process and a run in a child `node` process (the built package,
 * imported as `@parley/testing`).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { testSeed } from '@parley/interface';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript fixture (shared with the child process)
import { workload } from './fixtures/workload.mjs';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const fixture = fileURLToPath(new URL('./fixtures/workload.mjs', import.meta.url));

describe('simulate determinism', () => {
  it('gives the same history, byte for byte, for the same seed: twice here and once in another process', async () => {
    const seed = testSeed(20261130);
    const a = await workload(seed);
    const b = await workload(seed);
    expect(a.history.length).toBeGreaterThan(1_000);
    expect(b.history).toBe(a.history);
    expect(b.fingerprint).toBe(a.fingerprint);
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { workload } = await import(${JSON.stringify(fixture)});
         const { createHash } = await import('node:crypto');
         const r = await workload(${seed});
         console.log(JSON.stringify({ fingerprint: r.fingerprint, sha: createHash('sha256').update(r.history).digest('hex') }));`,
      ],
      { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PARLEY_SEED: '' } },
    );
    expect(child.stderr + child.stdout).toMatch(/^\{"fingerprint"/);
    const out = JSON.parse(child.stdout) as { fingerprint: string; sha: string };
    expect(out).toEqual({ fingerprint: a.fingerprint, sha: sha(a.history) });
  }, 60_000);

  it('gives a different history for a different seed', async () => {
    const a = await workload(1, { nemesis: false });
    const b = await workload(2, { nemesis: false });
    expect(b.history).not.toBe(a.history);
  }, 60_000);
});
