/**
 * Three OS processes on 127.0.0.1 run the libp2p transport (the built
 * package, test/fixtures/net-peer.mjs): they exchange requests and gossip, an
 * outsider without the cluster key cannot join, a `kill -9` is seen as a
 * disconnect within a bound, and the restarted process reconnects and resumes.
 * Every wait is on an event with a bounded timeout.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { generatePrivateKey, generatePsk, peerIdOf, savePrivateKey, savePsk } from '@parley/net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const fixture = join(root, 'test/fixtures/net-peer.mjs');
/** How long the survivors may take to notice a killed peer: the kernel closes its sockets, so they read end-of-stream at once. */
const DISCONNECT_BOUND_MS = 5_000;

type PeerEvent = { type: string; [key: string]: unknown };

class PeerProcess {
  readonly events: PeerEvent[] = [];
  readonly stderr: string[] = [];
  private wakeups: Array<() => void> = [];
  private nextId = 1;
  peerId = '';
  addresses: string[] = [];

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        this.events.push(JSON.parse(line) as PeerEvent);
      } catch {
        this.stderr.push(`(stdout) ${line}`);
      }
      for (const wake of this.wakeups.splice(0)) wake();
    });
    createInterface({ input: child.stderr! }).on('line', (line) => this.stderr.push(line));
    child.on('exit', () => {
      for (const wake of this.wakeups.splice(0)) wake();
    });
  }

  static async spawn(name: string, config: Record<string, unknown>): Promise<PeerProcess> {
    const child = spawn(process.execPath, [fixture, JSON.stringify({ name, ...config })], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const peer = new PeerProcess(name, child);
    const ready = await peer.waitFor((e) => e.type === 'ready', 20_000);
    peer.peerId = ready.peerId as string;
    peer.addresses = ready.addresses as string[];
    return peer;
  }

  /** The first event (from index `since`) matching `match`, waiting at most `maxMs`. */
  async waitFor(match: (e: PeerEvent) => boolean, maxMs: number, since = 0): Promise<PeerEvent> {
    const deadline = Date.now() + maxMs;
    for (;;) {
      const found = this.events.slice(since).find(match);
      if (found) return found;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`${this.name} exited; stderr:\n${this.stderr.join('\n')}`);
      }
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`${this.name}: no matching event within ${maxMs} ms; stderr:\n${this.stderr.join('\n')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wakeups.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  send(command: Record<string, unknown>): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  async call(command: Record<string, unknown>, maxMs = 10_000): Promise<PeerEvent> {
    const id = this.nextId++;
    this.send({ ...command, id });
    return this.waitFor((e) => e.type === 'reply' && e.id === id, maxMs);
  }

  async request(peer: PeerProcess, text: string): Promise<PeerEvent> {
    return this.call({ cmd: 'request', peer: peer.peerId, protocol: 'whoami', text, timeoutMs: 5_000 });
  }

  async peers(): Promise<string[]> {
    return JSON.parse((await this.call({ cmd: 'peers' })).text as string) as string[];
  }

  kill9(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.kill('SIGKILL');
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.send({ cmd: 'stop' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

/** Publishes from `from` until every one of `to` has received a message from it (bounded). */
async function gossipReaches(from: PeerProcess, to: PeerProcess[], label: string): Promise<void> {
  const marks = to.map((p) => p.events.length);
  for (let attempt = 0; attempt < 100; attempt++) {
    from.send({ cmd: 'publish', topic: 'chat', text: `${label} #${attempt}` });
    const all = await Promise.all(
      to.map((p, i) =>
        p
          .waitFor(
            (e) => e.type === 'gossip' && e.from === from.peerId && String(e.text).startsWith(label),
            100,
            marks[i],
          )
          .then(
            () => true,
            () => false,
          ),
      ),
    );
    if (all.every(Boolean)) return;
  }
  throw new Error(`gossip '${label}' from ${from.name} did not reach everyone`);
}

describe('libp2p transport across OS processes', { timeout: 120_000 }, () => {
  let dir: string;
  let pskPath: string;
  const keyPaths: Record<string, string> = {};
  const running: PeerProcess[] = [];
  let a: PeerProcess;
  let b: PeerProcess;
  let c: PeerProcess;

  const ports: Record<string, number> = {};
  const ids: Record<string, string> = {};
  const addressOf = (name: string) => `/ip4/127.0.0.1/tcp/${ports[name]}/p2p/${ids[name]}`;
  const start = async (name: string, bootstrap: string[], psk = pskPath) => {
    const peer = await PeerProcess.spawn(name, { pskPath: psk, keyPath: keyPaths[name], port: ports[name], bootstrap });
    running.push(peer);
    return peer;
  };
  const connected = (peer: PeerProcess, other: PeerProcess, since = 0) =>
    peer.waitFor((e) => e.type === 'peer:connect' && e.peer === other.peerId, 30_000, since);

  beforeAll(async () => {
    // The fixture runs the built package; make sure it is current.
    await promisify(execFile)('npx', ['tsc', '-b', 'packages/net'], { cwd: root });
    dir = await mkdtemp(join(tmpdir(), 'parley-net-mp-'));
    pskPath = join(dir, 'cluster.psk');
    await savePsk(pskPath, generatePsk());
    await savePsk(join(dir, 'other.psk'), generatePsk());
    for (const name of ['A', 'B', 'C', 'D']) {
      keyPaths[name] = join(dir, `${name}.key`);
      const key = await generatePrivateKey();
      await savePrivateKey(keyPaths[name], key);
      ids[name] = peerIdOf(key);
      ports[name] = await freePort();
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(running.map((p) => p.stop()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('forms a cluster of three processes from bootstrap lists', async () => {
    // Every process lists the other two and they start together: whoever comes
    // up first keeps redialling until the others listen.
    [a, b, c] = await Promise.all([
      start('A', [addressOf('B'), addressOf('C')]),
      start('B', [addressOf('A'), addressOf('C')]),
      start('C', [addressOf('A'), addressOf('B')]),
    ]);
    expect(a.addresses).toContain(addressOf('A'));
    await Promise.all([
      connected(a, b),
      connected(a, c),
      connected(b, a),
      connected(b, c),
      connected(c, a),
      connected(c, b),
    ]);
    expect(new Set(await a.peers())).toEqual(new Set([b.peerId, c.peerId]));
  });

  it('exchanges requests between every pair', async () => {
    const pairs: Array<[PeerProcess, PeerProcess]> = [
      [a, b],
      [b, c],
      [c, a],
      [a, c],
    ];
    for (const [from, to] of pairs) {
      const reply = await from.request(to, `hi from ${from.name}`);
      expect(reply).toMatchObject({ ok: true, text: `${to.name} answers hi from ${from.name}` });
    }
  });

  it('spreads gossip from each process to the other two', async () => {
    await gossipReaches(a, [b, c], 'from-A');
    await gossipReaches(c, [a, b], 'from-C');
  });

  it('keeps out a process that lacks the cluster key', async () => {
    const marks = [a.events.length, b.events.length];
    const outsider = await start('D', [], join(dir, 'other.psk'));
    const attempt = await outsider.call({ cmd: 'connect', address: a.addresses[0] }, 15_000);
    expect(attempt).toMatchObject({ ok: false, code: 'unavailable' });
    expect(await a.peers()).not.toContain(outsider.peerId);
    expect(await outsider.peers()).toEqual([]);
    const fromOutsider = (e: PeerEvent) => e.type === 'peer:connect' && e.peer === outsider.peerId;
    expect(a.events.slice(marks[0]).some(fromOutsider)).toBe(false);
    expect(b.events.slice(marks[1]).some(fromOutsider)).toBe(false);
    await outsider.stop();
  });

  it('sees a kill -9 as a disconnect within the bound, then reconnects the restarted process', async () => {
    const marks = [a.events.length, b.events.length];
    const killedAt = Date.now();
    await c.kill9();
    await Promise.all([
      a.waitFor((e) => e.type === 'peer:disconnect' && e.peer === c.peerId, DISCONNECT_BOUND_MS, marks[0]),
      b.waitFor((e) => e.type === 'peer:disconnect' && e.peer === c.peerId, DISCONNECT_BOUND_MS, marks[1]),
    ]);
    expect(Date.now() - killedAt).toBeLessThan(DISCONNECT_BOUND_MS);
    const down = await a.request(c, 'anyone there?');
    expect(down).toMatchObject({ ok: false, code: 'unavailable' });

    const restartMarks = [a.events.length, b.events.length];
    // C comes back on its port with its key; A and B also keep redialling it.
    const restarted = await start('C', [addressOf('A'), addressOf('B')]);
    expect(restarted.peerId).toBe(c.peerId);
    c = restarted;
    await Promise.all([connected(a, c, restartMarks[0]), connected(b, c, restartMarks[1])]);
    expect(await a.request(c, 'welcome back')).toMatchObject({ ok: true, text: 'C answers welcome back' });
    expect(await c.request(b, 'resumed')).toMatchObject({ ok: true, text: 'B answers resumed' });
    await gossipReaches(c, [a, b], 'C-again');
    await gossipReaches(b, [a, c], 'B-after');
  });
});
