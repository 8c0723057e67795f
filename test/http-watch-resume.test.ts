/**
 * The watch property over HTTP and through `parley distributed-state watch`:
 * what a reader sees — across cuts (the replay bound, the slow-reader bound,
 * its own disconnects, inside a deleteNamespace's revision) and resumes with
 * `Last-Event-ID` — is exactly the sequence of changes the node applied
 * after the reader's start point, with ids `revision:offset`, or a prefix of
 * it ended by `compacted`. The reference sequence is the node's own watch,
 * which the simulator's watch-strong-* scenarios hold to the applied log.
 * Seeded (PARLEY_SEED replays the workload and the reader's choices); a
 * failure prints its seed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { type Random, SeededRandom } from '@parley/interface';
import type { StrongChange } from '@parley/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARLEY_BIN, parley, type Started, startParley } from './http-harness.js';

const SEED = process.env.PARLEY_SEED ? Number(process.env.PARLEY_SEED) : randomInt(0, 2 ** 31);
const KEYS = Array.from({ length: 150 }, (_, i) => `k${String(i).padStart(3, '0')}`);
const END = 'zz-end';

/** A change as a reader reports it: what, where, and the id it came with. */
interface Seen {
  id: string;
  revision: number;
  type: string;
  key: string;
  version: string | null;
}

let roomy: Started; // the default history: every resume point stays kept
let tight: Started; // 60 changes of history: resume points fall out of it
let tightClosed = false;
beforeAll(async () => {
  [roomy, tight] = await Promise.all([
    startParley({ sse: { maxBufferedBytes: 8 * 1024, maxEarlyEvents: 20, heartbeatMs: 15_000 } }),
    startParley(
      { sse: { maxBufferedBytes: 8 * 1024, maxEarlyEvents: 20, heartbeatMs: 15_000 } },
      {
        raft: { maxWatchHistory: 60 },
      },
    ),
  ]);
});
afterAll(async () => {
  await Promise.all([roomy?.close(), tightClosed ? undefined : tight?.close()]);
});

/** Runs `fn` with seeded random streams (the workload's, the reader's); a failure names the seed. */
async function seeded(salt: number, fn: (rng: Random, readerRng: Random) => Promise<void>): Promise<void> {
  try {
    await fn(new SeededRandom(SEED * 7 + salt), new SeededRandom(SEED * 7 + salt + 1000));
  } catch (err) {
    (err as Error).message =
      `${(err as Error).message}\nPARLEY_SEED=${SEED} (replay: PARLEY_SEED=${SEED} npx vitest run test/http-watch-resume.test.ts)`;
    throw err;
  }
}

/** The node's own watch of `ns` from now on, and the revision of a first write (the readers' start point). */
async function reference(p: Started, ns: string): Promise<{ changes: StrongChange[]; start: number }> {
  const changes: StrongChange[] = [];
  p.node.strong(ns).watch({}, (c) => changes.push(c));
  await p.node.strong(ns).set('start', 0);
  const start = changes[0]?.revision as number;
  changes.length = 0;
  return { changes, start };
}

/** Sets, deletes and whole-namespace deletes (every second round and at random: up to 150 changes at one revision), seeded. */
async function workload(p: Started, ns: string, rng: Random, rounds: number): Promise<void> {
  const strong = p.node.strong(ns);
  for (let r = 0; r < rounds; r++) {
    const sets = 30 + rng.int(40);
    // In batches of 16: a session takes 32 calls in flight, and sessions are picked per call.
    for (let from = 0; from < sets; from += 16) {
      await Promise.all(
        Array.from({ length: Math.min(16, sets - from) }, (_, i) =>
          strong.set(KEYS[rng.int(KEYS.length)] as string, { r, i: from + i, pad: 'x'.repeat(rng.int(3) * 400) }),
        ),
      );
    }
    if (rng.int(3) === 0) {
      await Promise.all(
        Array.from({ length: 5 }, () => strong.delete(KEYS[rng.int(KEYS.length)] as string).catch(() => false)),
      );
    }
    if (r % 2 === 1 || rng.int(5) === 0) await strong.deleteNamespace({ confirm: true });
  }
}

/** What a correct reader sees of `changes`: each with its id `revision:offset`. */
function expectedOf(changes: StrongChange[]): Seen[] {
  let revision = 0;
  let offset = 0;
  return changes.map((c) => {
    offset = c.revision === revision ? offset + 1 : 0;
    revision = c.revision;
    return {
      id: `${c.revision}:${offset}`,
      revision: c.revision,
      type: c.type,
      key: c.key,
      version: c.entry?.version ?? null,
    };
  });
}

function seenOf(id: string, data: Record<string, unknown>): Seen {
  const entry = data.entry as { version?: string } | null;
  return {
    id,
    revision: data.revision as number,
    type: data.type as string,
    key: data.key as string,
    version: entry?.version ?? null,
  };
}

interface ReaderPlan {
  /** Whether to have enough (then the reader stops). */
  enough: (seen: Seen[]) => boolean;
  /** After how many events of connection `n` (from 1) the reader drops it itself. */
  quitAfter: (n: number) => number;
  /** How long to wait before reconnecting after connection `n`. */
  pauseMs: (n: number) => number | Promise<number>;
}

/** A reader that resumes with Last-Event-ID whenever its stream ends. Ends on `compacted` or once it has enough. */
async function readResuming(
  p: Started,
  ns: string,
  start: number,
  plan: ReaderPlan,
): Promise<{ seen: Seen[]; ended: string | undefined; connections: number }> {
  const { enough } = plan;
  const seen: Seen[] = [];
  let last = String(start);
  let connections = 0;
  const deadline = Date.now() + 30_000;
  while (!enough(seen)) {
    if (Date.now() > deadline) throw new Error(`the reader got ${seen.length} changes in 30 s`);
    connections++;
    const controller = new AbortController();
    const response = await fetch(`${p.url}/api/v1/distributed-state/${ns}?watch=true`, {
      headers: { 'last-event-id': last },
      signal: controller.signal,
    });
    if (response.status === 410)
      return { seen, ended: ((await response.json()) as { error: string }).error, connections };
    expect(response.status).toBe(200);
    const quitAfter = plan.quitAfter(connections);
    let got = 0;
    let buffer = '';
    const decoder = new TextDecoder();
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    reading: for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const lines = buffer.slice(0, end).split('\n');
        buffer = buffer.slice(end + 2);
        const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
        const data = field('data');
        if (data === undefined) continue;
        const parsed = JSON.parse(data) as Record<string, unknown>;
        if (field('event') === 'error') {
          if (parsed.error === 'compacted') return { seen, ended: 'compacted', connections };
          break reading; // cut: resume
        }
        const id = field('id') as string;
        seen.push(seenOf(id, parsed));
        last = id;
        if (++got >= quitAfter || enough(seen)) break reading;
      }
    }
    controller.abort();
    const pause = await plan.pauseMs(connections);
    if (pause > 0) await new Promise((r) => setTimeout(r, pause));
  }
  return { seen, ended: undefined, connections };
}

/** Runs `parley distributed-state watch` until it printed `count` changes (then stops it) or exits. */
function cliWatch(p: Started, ns: string, start: number, enough: (seen: Seen[]) => boolean) {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      PARLEY_BIN,
      '-e',
      p.url,
      '--output',
      'json',
      'distributed-state',
      'watch',
      '-n',
      ns,
      '--from-revision',
      String(start),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  const seen = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => {
        const o = JSON.parse(l) as Record<string, unknown>;
        return seenOf(o.id as string, o);
      });
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.endsWith('\n') && enough(seen())) child.kill('SIGTERM');
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const done = new Promise<{ code: number | null; seen: Seen[]; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, seen: seen(), stderr: err })),
  );
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return done.finally(() => clearTimeout(timer));
}

describe('watch streams across cuts and resumes', () => {
  it('an SSE reader and `parley distributed-state watch` see exactly the applied changes, ids naming each', async () => {
    await seeded(1, async (rng, readerRng) => {
      const ns = `prop-${SEED % 1000}`;
      const ref = await reference(roomy, ns);
      // The workload ends with a write of END: a reader that has seen it has had its chance at everything.
      const complete = (seen: Seen[]) => seen[seen.length - 1]?.key === END;
      const sse = readResuming(roomy, ns, ref.start, {
        enough: complete,
        quitAfter: () => (readerRng.int(3) === 0 ? 1 + readerRng.int(120) : Number.POSITIVE_INFINITY),
        pauseMs: () => readerRng.int(4) * 20,
      });
      sse.catch(() => {}); // awaited below; a workload failure must not leave it unhandled
      await workload(roomy, ns, rng, 2);
      // Started now, the CLI first replays more than the replay bound (20): it is cut and must resume.
      const cli = cliWatch(roomy, ns, ref.start, complete);
      cli.catch(() => {});
      await workload(roomy, ns, rng, 4);
      await roomy.node.strong(ns).set(END, true);
      const expected = expectedOf(ref.changes);
      const [reader, viaCli] = await Promise.all([sse, cli]);
      expect(expected.length).toBeGreaterThan(100);
      expect(
        Math.max(
          ...[...new Set(ref.changes.map((c) => c.revision))].map(
            (r) => ref.changes.filter((c) => c.revision === r).length,
          ),
        ),
      ).toBeGreaterThan(20); // a revision longer than the replay bound
      expect(reader.ended).toBeUndefined();
      expect(reader.seen).toEqual(expected);
      expect(reader.connections).toBeGreaterThan(1);
      expect(viaCli.seen).toEqual(expected);
      expect(viaCli.stderr).toContain('resuming after'); // the replay bound cut it at least once
    });
  }, 90_000);

  it('a resume point that fell out of the history ends the reader with compacted, after an exact prefix', async () => {
    await seeded(2, async (rng, readerRng) => {
      const ns = `gone-${SEED % 1000}`;
      const ref = await reference(tight, ns);
      let writing = true;
      // The reader leaves after a few events and comes back only once the workload is done.
      const sse = readResuming(tight, ns, ref.start, {
        enough: (s) => !writing && s.length >= ref.changes.length,
        quitAfter: (n) => (n === 1 ? 1 + readerRng.int(30) : Number.POSITIVE_INFINITY),
        pauseMs: async () => {
          while (writing) await new Promise((r) => setTimeout(r, 20));
          return 0;
        },
      });
      sse.catch(() => {});
      await workload(tight, ns, rng, 6);
      writing = false;
      const reader = await sse;
      const expected = expectedOf(ref.changes);
      expect(reader.ended).toBe('compacted');
      expect(reader.seen).toEqual(expected.slice(0, reader.seen.length));
      const cli = await parley([
        '-e',
        tight.url,
        'distributed-state',
        'watch',
        '-n',
        ns,
        '--from-revision',
        String(ref.start),
      ]);
      expect(cli.code).toBe(3);
      expect(cli.stderr).toContain('410 compacted');
      expect(cli.stdout).toBe('');
    });
  }, 90_000);

  it('a replicated watch (no ids to resume from) that the server ends exits 6 and says so', async () => {
    const child = spawn(process.execPath, [PARLEY_BIN, '-e', tight.url, 'replicated', 'watch', '-n', 'r'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const streams = async () =>
      Number(/^parley_http_watch_streams (\d+)$/m.exec(await (await fetch(`${tight.url}/metrics`)).text())?.[1]);
    const deadline = Date.now() + 20_000;
    while ((await streams()) < 1) {
      if (Date.now() > deadline) throw new Error('the watch did not open');
      await new Promise((r) => setTimeout(r, 50));
    }
    tightClosed = true;
    const closing = tight.close();
    expect(await exited).toBe(6);
    expect(stderr).toContain('may have been missed');
    await closing;
  }, 60_000);
});
