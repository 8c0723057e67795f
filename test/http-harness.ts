/**
 * A real Parley node (LevelDB in a temp dir, libp2p on loopback) behind a real
 * HTTP server on 127.0.0.1 port 0, for the http-* and cli-* tests. The HTTP
 * call, the `parley` binary runner and the polling helper are the conformance
 * suite's (`@parley/conformance/http`), re-exported here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNode, type NodeOptions, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer, type ServerOptions } from '@parley/server';

export {
  type ApiResponse,
  api,
  type CliResult,
  eventually,
  ISO_MICROS,
  PARLEY_BIN,
  parley,
  ROOT,
} from '@parley/conformance/http';

export interface Started {
  url: string;
  node: ParleyNode;
  server: ParleyServer;
  dataDir: string;
  close(): Promise<void>;
}

export async function startParley(
  options: Partial<Omit<ServerOptions, 'node'>> = {},
  nodeOptions: Omit<NodeOptions, 'dataDir'> = {},
): Promise<Started> {
  const dataDir = await mkdtemp(join(tmpdir(), 'parley-http-'));
  const node = await createNode({ listen: ['/ip4/127.0.0.1/tcp/0'], ...nodeOptions, dataDir });
  let server: ParleyServer;
  try {
    server = await createServer({ port: 0, defaultMetrics: false, ...options, node });
  } catch (err) {
    await node.close();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const url = await server.listen();
  return {
    url,
    node,
    server,
    dataDir,
    async close() {
      await server.close();
      await node.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
