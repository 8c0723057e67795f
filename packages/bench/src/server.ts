/**
 * What the HTTP door costs: the same operations through `@parley/server` over
 * loopback HTTP (keep-alive, one client) and through the node API in the same
 * process, on one node with fsync. The anchor is the direct call, so the ratio
 * is the door's overhead. Run: `npm run bench:server [-- --json FILE]`.
 */
import '@parley/net/polyfill';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNode } from '@parley/node';
import { createServer } from '@parley/server';
import { Bench, quantile } from './index.js';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);

/**
 * Runs the HTTP op and its direct twin alternately, `n` times each after a warm-up, so both see
 * the same machine (this one is shared and its load moves): returns both latency samples in ms.
 */
async function paired(
  http: (i: number) => Promise<unknown>,
  direct: (i: number) => Promise<unknown>,
  n: number,
): Promise<{ http: number[]; direct: number[] }> {
  for (let i = 0; i < Math.max(10, n / 10); i++) {
    await http(i);
    await direct(i);
  }
  const out = { http: [] as number[], direct: [] as number[] };
  for (let i = 0; i < n; i++) {
    let start = performance.now();
    await http(i);
    out.http.push(performance.now() - start);
    start = performance.now();
    await direct(i);
    out.direct.push(performance.now() - start);
  }
  return out;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'parley-bench-http-'));
  const node = await createNode({ dataDir, listen: ['/ip4/127.0.0.1/tcp/0'] });
  const server = await createServer({ node, port: 0, defaultMetrics: false });
  const url = await server.listen();
  const post = async (path: string, body: unknown) => {
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  const get = async (path: string) => {
    const res = await fetch(url + path);
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    await res.arrayBuffer();
  };
  const value = { phase: 'deploying', pct: 25, by: 'bench' };
  const bench = new Bench('@parley/server: the HTTP door against the node API in the same process');
  try {
    const row = (name: string, anchor: string, sample: { http: number[]; direct: number[] }) =>
      bench.add({
        name,
        unit: 'ms p50',
        value: quantile(sample.http, 0.5),
        anchor,
        anchorValue: quantile(sample.direct, 0.5),
      });
    const strong = node.strong('bench');
    row(
      'strong set (1 node, fsync)',
      'node.strong().set, same process',
      await paired(
        (i) => post(`/api/v1/distributed-state/bench/h${i & 63}`, { value }),
        (i) => strong.set(`d${i & 63}`, value),
        SAMPLES,
      ),
    );
    row(
      'strong get (linearizable)',
      'node.strong().get, same process',
      await paired(
        (i) => get(`/api/v1/distributed-state/bench/h${i & 63}`),
        (i) => strong.get(`d${i & 63}`),
        SAMPLES,
      ),
    );
    const eventual = node.eventual('bench');
    row(
      'replicated set (durable locally)',
      'node.eventual().set, same process',
      await paired(
        (i) => post(`/api/v1/replicated/bench/h${i & 63}`, { value }),
        (i) => eventual.set(`d${i & 63}`, value),
        SAMPLES,
      ),
    );
    const locks = node.locks('bench');
    row(
      'lock acquire + release',
      'node.locks() acquire + release, same process',
      await paired(
        async (i) => {
          const res = await fetch(`${url}/api/v1/locks/bench/h${i & 7}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ owner: 'bench', ttl_seconds: 30 }),
          });
          const { data } = (await res.json()) as { data: { fence: number } };
          await post(`/api/v1/locks/bench/h${i & 7}/release`, { owner: 'bench', fence: data.fence });
        },
        async (i) => {
          const grant = await locks.acquire(`d${i & 7}`, { owner: 'bench', ttl: 30 });
          await locks.release(`d${i & 7}`, { owner: 'bench', fence: grant.fence });
        },
        SAMPLES / 2,
      ),
    );
  } finally {
    await server.close();
    await node.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  await bench.finish();
}

await main();
