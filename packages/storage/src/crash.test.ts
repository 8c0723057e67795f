/**
 * Crash consistency of the level stores against a real crash: a child process writes as fast as it can and is
 * killed with SIGKILL right after a write is acknowledged, usually in the middle of the next one. Reopening must
 * show every acknowledged write and each batch entirely or not at all.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SeededRandom, testSeed, withSeed } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import { openLevelKV } from './level-kv.js';
import { openLevelRaftLog } from './level-raft-log.js';
import { KV_BATCH_KEYS, pad, RAFT_BATCH_ENTRIES } from './testing/fixtures/crash-writer.js';

const fixtures = fileURLToPath(new URL('./testing/fixtures/', import.meta.url));
const seed = testSeed(9);
const ROUNDS = 2;

/** Starts the writer; resolves with the last acknowledged write number once it has been killed after `acks`. */
function runAndKill(mode: 'kv' | 'raft', path: string, acks: number, children: ChildProcess[]): Promise<number> {
  const child = spawn(process.execPath, ['--import', './register-ts.mjs', 'crash-writer.ts', mode, path], {
    cwd: fixtures,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let acked = -1;
    let buffered = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`writer made only ${acked + 1} writes in 20 s: ${stderr}`));
    }, 20_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) acked = Number(line);
      if (acked + 1 >= acks && child.exitCode === null && !child.killed) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') resolve(acked);
      else reject(new Error(`writer exited with ${code}: ${stderr}`));
    });
  });
}

describe('level stores survive SIGKILL mid-write', () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });

  it('KV: every acknowledged batch is there, and every batch is whole or absent', async () => {
    await withSeed(seed, async (s) => {
      const rng = new SeededRandom(s);
      for (let round = 0; round < ROUNDS; round++) {
        const path = await mkdtemp(join(tmpdir(), 'parley-crash-kv-'));
        dirs.push(path);
        const acked = await runAndKill('kv', path, 2 + rng.int(6), children);
        const kv = await openLevelKV({ path, verifyOnOpen: true });
        const chunks = await kv.loadRange(['b']);
        const perBatch = new Map<string, number>();
        for (const c of chunks) perBatch.set(c.key[1]!, (perBatch.get(c.key[1]!) ?? 0) + 1);
        const batches = [...perBatch.keys()].sort();
        expect(batches.length).toBeGreaterThanOrEqual(acked + 1);
        expect(batches).toEqual(Array.from({ length: batches.length }, (_, n) => pad(n)));
        for (const [batch, count] of perBatch) expect(count, `batch ${batch}`).toBe(KV_BATCH_KEYS);
        const last = new TextDecoder().decode(await kv.load(['last']));
        expect(Number(last)).toBe(batches.length - 1);
        await kv.close();
      }
    });
  });

  it('Raft log: every acknowledged save is there, and the log and hard state agree', async () => {
    await withSeed(seed + 1, async (s) => {
      const rng = new SeededRandom(s);
      for (let round = 0; round < ROUNDS; round++) {
        const path = await mkdtemp(join(tmpdir(), 'parley-crash-raft-'));
        dirs.push(path);
        const acked = await runAndKill('raft', path, 2 + rng.int(6), children);
        const log = await openLevelRaftLog({ path });
        const saves = log.lastIndex() / RAFT_BATCH_ENTRIES;
        expect(Number.isInteger(saves), `last index ${log.lastIndex()}`).toBe(true);
        expect(saves).toBeGreaterThanOrEqual(acked + 1);
        expect(log.initialState().hardState).toEqual({
          term: saves,
          vote: 'w',
          commit: (saves - 1) * RAFT_BATCH_ENTRIES,
        });
        const entries = log.entries(1, log.lastIndex() + 1);
        entries.forEach((e, i) => {
          expect(e.index).toBe(i + 1);
          expect(e.term).toBe(Math.floor(i / RAFT_BATCH_ENTRIES) + 1);
          expect(e.data[0]).toBe(Math.floor(i / RAFT_BATCH_ENTRIES) & 0xff);
        });
        await log.close();
      }
    });
  });
});
