/**
 * A benchmark peer in its own process (spawned by net.ts). argv[2] is JSON:
 * - `{ mode: 'rpc', pskHex }`: a libp2p transport answering 'echo'; prints `{ addresses }`.
 * - `{ mode: 'raw' }`: a node:net server echoing length-prefixed frames; prints `{ port }`.
 * - `{ mode: 'fanout', port }`: the gossip anchor; connects to a node:net
 *   publisher and records latency like 'gossip' does, from raw frames.
 * - `{ mode: 'gossip', pskHex, bootstrap }`: subscribes to 'bench'; records
 *   delivery latency from the CLOCK_MONOTONIC stamp in each message; prints
 *   `{ ready }` once connected, and `{ latenciesMs }` on the 'report' stdin line.
 */
import { connect, createServer } from 'node:net';
import { createInterface } from 'node:readline';
import {
  createLibp2pTransport,
  decodeFrameBody,
  encodeFrame,
  FrameReader,
  maxFrameBodyBytes,
  silentLogger,
} from '@parley/net';

const config = JSON.parse(process.argv[2] ?? '{}') as {
  mode: string;
  pskHex?: string;
  bootstrap?: string[];
  port?: number;
};
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const psk = () => new Uint8Array(Buffer.from(config.pskHex ?? '', 'hex'));

if (config.mode === 'raw') {
  const server = createServer({ noDelay: true }, (socket) => {
    const reader = new FrameReader(maxFrameBodyBytes(4 * 1024 * 1024));
    socket.on('data', (chunk) => {
      for (const body of reader.push(chunk)) {
        const frame = decodeFrameBody(body);
        if (frame.type === 'request')
          socket.write(encodeFrame({ type: 'response', id: frame.id, payload: frame.payload }));
      }
    });
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    print({ port: typeof address === 'object' && address ? address.port : 0 });
  });
} else if (config.mode === 'rpc') {
  const transport = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk: psk(), logger: silentLogger });
  transport.handle('echo', (_from, request) => request);
  await transport.start();
  print({ addresses: transport.addresses() });
} else if (config.mode === 'fanout') {
  const latenciesMs: number[] = [];
  const reader = new FrameReader(maxFrameBodyBytes(1024 * 1024));
  const socket = connect({ host: '127.0.0.1', port: config.port ?? 0, noDelay: true });
  socket.on('data', (chunk) => {
    for (const body of reader.push(chunk)) {
      const frame = decodeFrameBody(body);
      if (frame.type !== 'request') continue;
      const view = new DataView(frame.payload.buffer, frame.payload.byteOffset, frame.payload.byteLength);
      latenciesMs.push(Number(process.hrtime.bigint() - view.getBigUint64(1)) / 1e6);
    }
  });
  socket.once('connect', () => print({ ready: true }));
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'report') print({ latenciesMs });
  });
} else if (config.mode === 'gossip') {
  const transport = await createLibp2pTransport({
    listen: ['/ip4/127.0.0.1/tcp/0'],
    bootstrap: config.bootstrap ?? [],
    psk: psk(),
    logger: silentLogger,
  });
  const latenciesMs: number[] = [];
  let warm = false;
  transport.subscribe('bench', (_from, message) => {
    const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
    const kind = view.getUint8(0);
    if (kind === 0) {
      if (!warm) print({ ready: true });
      warm = true;
      return;
    }
    const sentNs = view.getBigUint64(1);
    latenciesMs.push(Number(process.hrtime.bigint() - sentNs) / 1e6);
  });
  await transport.start();
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'report') print({ latenciesMs });
  });
}
