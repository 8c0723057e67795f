/**
 * `npm run bench:net [-- --json FILE]`
 *
 * - Request round trip at 1 in flight (p50, p99) and throughput at 32 in
 *   flight, client in this process, server in another, over loopback TCP.
 *   Anchor: a raw node:net socket with the same length-prefixed framing and
 *   the same id-multiplexed echo, measured in the same run.
 * - Gossip delivery latency across 5 processes (this one publishing, four
 *   subscribers) at 100 messages/s, from CLOCK_MONOTONIC stamps (shared by
 *   every process on the machine). Anchor: the same stamped messages written
 *   by this process to four others over raw node:net sockets, which shows
 *   what the machine's scheduling alone costs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  createLibp2pTransport,
  decodeFrameBody,
  encodeFrame,
  FrameReader,
  generatePsk,
  maxFrameBodyBytes,
  silentLogger,
} from '@parley/net';
import { Bench, quantile } from './index.js';

const PAYLOAD = new Uint8Array(64).fill(0x2a);
const RTT_SAMPLES = 20_000;
const THROUGHPUT_REQUESTS = 100_000;
const IN_FLIGHT = 32;
const GOSSIP_PROCESSES = 5;
const GOSSIP_RATE_PER_S = 100;
const GOSSIP_MESSAGES = 600;

const peerScript = fileURLToPath(new URL('./net-peer.js', import.meta.url));
const children: ChildProcess[] = [];

interface Peer {
  child: ChildProcess;
  lines: AsyncIterator<string>;
}

function startPeer(config: Record<string, unknown>): Peer {
  const child = spawn(process.execPath, [peerScript, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return { child, lines };
}

async function nextJson<T>(peer: Peer): Promise<T> {
  const { value, done } = await peer.lines.next();
  if (done) throw new Error('bench peer exited');
  return JSON.parse(value) as T;
}

type Send = (payload: Uint8Array) => Promise<Uint8Array>;

async function roundTrips(send: Send): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 2_000; i++) await send(PAYLOAD);
  const samples = new Array<number>(RTT_SAMPLES);
  for (let i = 0; i < RTT_SAMPLES; i++) {
    const start = performance.now();
    await send(PAYLOAD);
    samples[i] = performance.now() - start;
  }
  return { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99) };
}

async function throughput(send: Send): Promise<number> {
  let issued = 0;
  const worker = async () => {
    while (issued < THROUGHPUT_REQUESTS) {
      issued++;
      await send(PAYLOAD);
    }
  };
  issued = THROUGHPUT_REQUESTS - 5_000;
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker)); // warm-up
  issued = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return THROUGHPUT_REQUESTS / ((performance.now() - start) / 1000);
}

/** The anchor's client: one socket, requests multiplexed by id, same frames as Parley. */
async function rawClient(port: number): Promise<{ send: Send; close(): void }> {
  const socket = connect({ host: '127.0.0.1', port, noDelay: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const pending = new Map<number, (payload: Uint8Array) => void>();
  const reader = new FrameReader(maxFrameBodyBytes(4 * 1024 * 1024));
  socket.on('data', (chunk) => {
    for (const body of reader.push(chunk)) {
      const frame = decodeFrameBody(body);
      if (frame.type !== 'response') continue;
      const resolve = pending.get(frame.id);
      pending.delete(frame.id);
      resolve?.(frame.payload);
    }
  });
  let nextId = 1;
  return {
    send(payload) {
      const id = nextId++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        socket.write(encodeFrame({ type: 'request', id, payload }));
      });
    },
    close: () => socket.destroy(),
  };
}

async function gossipLatencies(pskHex: string, psk: Uint8Array): Promise<number[]> {
  const publisher = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk, logger: silentLogger });
  await publisher.start();
  const subscribers = Array.from({ length: GOSSIP_PROCESSES - 1 }, () =>
    startPeer({ mode: 'gossip', pskHex, bootstrap: publisher.addresses() }),
  );
  // Warm up: publish markers until every subscriber has one (subscriptions propagate).
  const ready = Promise.all(subscribers.map((s) => nextJson<{ ready: boolean }>(s)));
  let settled = false;
  void ready.then(() => {
    settled = true;
  });
  const deadline = Date.now() + 30_000;
  while (!settled) {
    if (Date.now() > deadline) throw new Error('gossip subscribers never became ready');
    await publisher.publish('bench', new Uint8Array([0]));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await paced((message) => publisher.publish('bench', message));
  const all = await reports(subscribers);
  await publisher.stop();
  return all;
}

/** Publishes GOSSIP_MESSAGES stamped messages at GOSSIP_RATE_PER_S. */
async function paced(send: (message: Uint8Array) => Promise<void> | void): Promise<void> {
  const intervalMs = 1000 / GOSSIP_RATE_PER_S;
  const start = performance.now();
  for (let i = 0; i < GOSSIP_MESSAGES; i++) {
    const due = start + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const message = new Uint8Array(64);
    const view = new DataView(message.buffer);
    view.setUint8(0, 1);
    view.setBigUint64(1, process.hrtime.bigint());
    await send(message);
  }
  await new Promise((resolve) => setTimeout(resolve, 500)); // let the last messages land
}

async function reports(subscribers: Peer[]): Promise<number[]> {
  const all: number[] = [];
  for (const s of subscribers) {
    s.child.stdin!.write('report\n');
    const { latenciesMs } = await nextJson<{ latenciesMs: number[] }>(s);
    process.stderr.write(`  subscriber received ${latenciesMs.length}/${GOSSIP_MESSAGES}\n`);
    all.push(...latenciesMs);
  }
  return all;
}

/** The gossip anchor: the publisher writes each frame to 4 other processes over raw node:net sockets. */
async function fanoutLatencies(): Promise<number[]> {
  const sockets: Socket[] = [];
  const server = createServer({ noDelay: true }, (socket) => {
    socket.on('error', () => {});
    sockets.push(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const subscribers = Array.from({ length: GOSSIP_PROCESSES - 1 }, () => startPeer({ mode: 'fanout', port }));
  await Promise.all(subscribers.map((s) => nextJson<{ ready: boolean }>(s)));
  let id = 1;
  await paced((payload) => {
    const frame = encodeFrame({ type: 'request', id: id++, payload });
    for (const socket of sockets) socket.write(frame);
  });
  const all = await reports(subscribers);
  for (const socket of sockets) socket.destroy();
  server.close();
  return all;
}

async function main(): Promise<void> {
  const bench = new Bench('@parley/net — loopback TCP, client and server in separate processes');
  process.stderr.write(`  machine: ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(2)} at start\n`);
  const psk = generatePsk();
  const pskHex = Buffer.from(psk).toString('hex');

  const rawPeer = startPeer({ mode: 'raw' });
  const { port } = await nextJson<{ port: number }>(rawPeer);
  const raw = await rawClient(port);

  const rpcPeer = startPeer({ mode: 'rpc', pskHex });
  const { addresses } = await nextJson<{ addresses: string[] }>(rpcPeer);
  const client = await createLibp2pTransport({
    listen: ['/ip4/127.0.0.1/tcp/0'],
    psk,
    limits: { maxInFlightPerPeer: 256 },
    logger: silentLogger,
  });
  await client.start();
  const server = await client.connect(addresses[0] as string);
  const parley: Send = (payload) => client.request(server, 'echo', payload);

  const rawRtt = await roundTrips(raw.send);
  const parleyRtt = await roundTrips(parley);
  bench.add({
    name: 'request round trip p50, 1 in flight (64 B)',
    unit: 'ms',
    value: parleyRtt.p50,
    anchor: 'node:net raw TCP',
    anchorValue: rawRtt.p50,
  });
  bench.add({
    name: 'request round trip p99, 1 in flight (64 B)',
    unit: 'ms',
    value: parleyRtt.p99,
    anchor: 'node:net raw TCP',
    anchorValue: rawRtt.p99,
  });
  const rawRate = await throughput(raw.send);
  const parleyRate = await throughput(parley);
  bench.add({
    name: `requests/s, ${IN_FLIGHT} in flight (64 B)`,
    unit: 'req/s',
    value: parleyRate,
    anchor: 'node:net raw TCP',
    anchorValue: rawRate,
  });
  raw.close();
  await client.stop();

  const fanout = await fanoutLatencies();
  const latencies = await gossipLatencies(pskHex, psk);
  const expected = GOSSIP_MESSAGES * (GOSSIP_PROCESSES - 1);
  const fanoutAnchor = 'node:net raw TCP fan-out';
  bench.add({
    name: `gossip delivery p50, ${GOSSIP_PROCESSES} processes, ${GOSSIP_RATE_PER_S} msg/s`,
    unit: 'ms',
    value: quantile(latencies, 0.5),
    anchor: fanoutAnchor,
    anchorValue: quantile(fanout, 0.5),
  });
  bench.add({
    name: `gossip delivery p99, ${GOSSIP_PROCESSES} processes, ${GOSSIP_RATE_PER_S} msg/s`,
    unit: 'ms',
    value: quantile(latencies, 0.99),
    anchor: fanoutAnchor,
    anchorValue: quantile(fanout, 0.99),
  });
  bench.add({ name: 'gossip messages delivered', unit: '%', value: (100 * latencies.length) / expected });
  await bench.finish();
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const child of children) child.kill();
  });
