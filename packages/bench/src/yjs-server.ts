/**
 * One server of the y-websocket benchmark (./yjs.ts), in a process of its own
 * so that its CPU time is its own: `parley` (a node with LevelDB and this
 * door) or `reference` (`@y/websocket-server`, documents in memory). Reports
 * its port, answers `cpu` with its CPU time, exits on `stop`.
 */
import '@parley/net/polyfill';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNode } from '@parley/node';
import { silentNodeLogger } from '@parley/node/testing';
import { createServer } from '@parley/server';
import { setupWSConnection } from '@y/websocket-server/utils';
import { WebSocketServer } from 'ws';

type Stop = () => Promise<void>;

async function parley(): Promise<{ port: number; stop: Stop }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'parley-bench-yjs-'));
  const node = await createNode({ dataDir, listen: ['/ip4/127.0.0.1/tcp/0'], logger: silentNodeLogger });
  const server = await createServer({ node, port: 0, defaultMetrics: false });
  const url = await server.listen();
  return {
    port: Number(new URL(url).port),
    async stop() {
      await server.close();
      await node.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function reference(): Promise<{ port: number; stop: Stop }> {
  const http = createHttpServer((_req, res) => res.end('okay'));
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (request, socket, head) => {
    wss.handleUpgrade(request, socket, head, (ws) => setupWSConnection(ws, request));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const address = http.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    async stop() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

const kind = process.argv[2];
const running = kind === 'parley' ? await parley() : kind === 'reference' ? await reference() : undefined;
if (!running) throw new Error(`usage: yjs-server.js parley|reference, got ${kind}`);
process.on('message', (m: { type: string }) => {
  if (m.type === 'cpu') process.send?.({ type: 'cpu', usage: process.cpuUsage(), rss: process.memoryUsage().rss });
  if (m.type === 'stop') void running.stop().then(() => process.exit(0));
});
process.send?.({ type: 'ready', port: running.port });
