/**
 * Eventual namespaces across OS processes on 127.0.0.1: five node processes
 * (the built node, packages/node/dist/eventual/peer.js: libp2p, LevelDB with
 * fsync) write everywhere; one is killed with SIGKILL and restarted from its
 * data directory; all converge to byte-identical states with exact counters.
 * Then one node is stopped while the others change 1% of the keys, and on
 * its return it receives only the difference: the anti-entropy bytes it
 * exchanges are measured against the size of the whole state. Every wait is
 * bounded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreatePsk } from '@parley/net';
import type { EventualPeerConfig } from '@parley/node/testing';
import { EventualPeer } from '@parley/node/testing';
import { afterAll, describe, expect, it } from 'vitest';

const NS = 'mp';
const COUNTER = 'hits';
const dirs: string[] = [];
const procs: Array<EventualPeer | undefined> = [];

afterAll(async () => {
  await Promise.allSettled(procs.map((p) => p?.kill()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type State = { hash: string; stateBytes: number; keys: number; counter: number | null };
type Traffic = { aeBytes: number; aeRounds: number; repaired: number; gossipIn: number };

describe('eventual namespaces across processes', () => {
  it('five processes converge after writes everywhere and kill -9; a returning node receives only the difference', async () => {
    const dataDirs = Array.from({ length: 5 }, () => {
      const d = mkdtempSync(join(tmpdir(), 'parley-ev-mp-'));
      dirs.push(d);
      return d;
    });
    const psk = join(dataDirs[0] as string, 'cluster.psk');
    await loadOrCreatePsk(psk);
    const addresses = () => procs.flatMap((p) => (p && !p.exited ? p.addresses : []));
    const config = (i: number): EventualPeerConfig => ({
      dataDir: dataDirs[i] as string,
      listen: ['/ip4/127.0.0.1/tcp/0'],
      bootstrap: addresses(),
      psk,
      namespaces: [NS],
      antiEntropyMs: 500,
    });
    const start = async (i: number) => {
      procs[i] = await EventualPeer.start(config(i));
    };
    for (let i = 0; i < 5; i++) await start(i);
    const live = () => procs.filter((p): p is EventualPeer => p !== undefined && !p.exited);

    /** Waits (at most `ms`) until every live process holds the same state; returns it. */
    const converged = async (ms: number): Promise<State> => {
      const deadline = Date.now() + ms;
      for (;;) {
        const states = await Promise.all(
          live().map((p) => p.run<State>({ kind: 'state', namespace: NS, counter: COUNTER })),
        );
        if (states.every((s) => s.hash === states[0]?.hash)) return states[0] as State;
        if (Date.now() > deadline)
          throw new Error(`no convergence within ${ms} ms: ${states.map((s) => `${s.keys}/${s.counter}`).join(' ')}`);
        await sleep(200);
      }
    };

    // Writes everywhere: 200 keys and 20 increments per process.
    let increments = 0;
    await Promise.all(
      live().map((p, i) =>
        p.run({
          kind: 'write',
          namespace: NS,
          prefix: `p${i}-`,
          start: 0,
          count: 200,
          counter: COUNTER,
          increments: 20,
        }),
      ),
    );
    increments += 100;
    let state = await converged(20_000);
    expect(state.keys).toBe(1_000 + 1);
    expect(state.counter).toBe(increments);

    // kill -9 one process in the middle of more writes, restart it from its data directory.
    const victim = procs[2] as EventualPeer;
    const victimId = victim.peerId;
    const during = live()
      .filter((p) => p !== victim)
      .map((p, i) =>
        p.run({
          kind: 'write',
          namespace: NS,
          prefix: `q${i}-`,
          start: 0,
          count: 100,
          counter: COUNTER,
          increments: 10,
        }),
      );
    await victim.kill();
    await Promise.all(during);
    increments += 40;
    await start(2);
    expect(procs[2]?.peerId).toBe(victimId);
    state = await converged(20_000);
    expect(state.keys).toBe(1_000 + 400 + 1);
    expect(state.counter).toBe(increments);

    // A node away while 1% of the keys change gets only the difference back.
    const away = procs[4] as EventualPeer;
    await away.close();
    const writer = procs[0] as EventualPeer;
    await writer.run({
      kind: 'write',
      namespace: NS,
      prefix: 'p1-',
      start: 0,
      count: 14,
      counter: COUNTER,
      increments: 0,
    });
    await start(4);
    state = await converged(20_000);
    const traffic = await (procs[4] as EventualPeer).run<Traffic>({ kind: 'traffic', namespace: NS });
    // The changed payload: 14 register states of ~20 bytes each; the whole state is tens of kB.
    expect(traffic.repaired).toBeGreaterThanOrEqual(14);
    expect(traffic.repaired).toBeLessThan(100);
    expect(traffic.aeBytes).toBeLessThan(state.stateBytes / 5);
    console.log(
      `[node-eventual-multiprocess] returning node: ${traffic.repaired} entries repaired in ${traffic.aeRounds} anti-entropy rounds, ${traffic.aeBytes} bytes (digests + replies) vs a full state of ${state.stateBytes} bytes`,
    );
    await Promise.all(live().map((p) => p.close()));
  }, 120_000);
});
