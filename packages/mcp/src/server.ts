/**
 * `parley mcp`: the Model Context Protocol over stdio, in front of a node's HTTP
 * API — a running node (`endpoint`) or an embedded one (a node with its HTTP server
 * on a free loopback port, closed with the MCP server).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createNode, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer } from '@parley/server';
import { typedArgumentErrors } from './arguments.js';
import { NodeClient } from './http.js';
import { registerQueueTools } from './queue-tools.js';
import { registerResources } from './resources.js';
import { mintSessionHolder } from './session.js';
import { registerTools, type ToolOptions } from './tools.js';
import { registerWatch, type WatchOptions } from './watch.js';

/** The version the MCP server reports to hosts in its `initialize` answer. */
export const MCP_VERSION = '0.1.0';

/** An MCP server (not yet connected) whose tools call the node at `client`. */
export function createMcpServer(client: NodeClient, options: ToolOptions & WatchOptions = {}): McpServer {
  const server = new McpServer(
    { name: 'parley', version: MCP_VERSION },
    {
      instructions:
        'Parley: replicated state shared by agents. Strong tools (state_*, claim, lease_*, lock_*, queue_*) are linearizable; ' +
        'leave holder/owner out to act as this session (a secret only it can use). ' +
        'replicated_* tools are eventual (accepted locally, merged everywhere). Errors are JSON {error, hint, retryable}: ' +
        'follow the hint (version_mismatch: re-read and retry).',
    },
  );
  typedArgumentErrors(server);
  // This session's holder: lease, lock and queue calls that name none act as it (session.ts).
  const sessionHolder = options.sessionHolder ?? mintSessionHolder();
  registerTools(server, client, { ...options, sessionHolder });
  registerQueueTools(server, client, { ...options, sessionHolder });
  registerResources(server, client);
  registerWatch(server, client, options);
  return server;
}

/** How `parley mcp` reaches a node: a running one (`endpoint`) or an embedded one (`dataDir`). */
export interface RunMcpOptions {
  /** A running node's HTTP API. Without it, a node is embedded. */
  endpoint?: string;
  /** Bearer token for `endpoint` (default PARLEY_API_TOKEN). */
  token?: string;
  /** Data dir of the embedded node (default ./.parley). */
  dataDir?: string;
  /** CA certificates (PEM) to trust for an https `endpoint`. */
  ca?: string | Buffer;
}

/** Serves MCP on stdin/stdout until stdin closes. Logs only to stderr. */
export async function runMcp(options: RunMcpOptions = {}): Promise<void> {
  let embedded: { node: ParleyNode; http: ParleyServer } | undefined;
  let endpoint = options.endpoint;
  const token = options.token ?? process.env.PARLEY_API_TOKEN;
  if (endpoint === undefined) {
    const node = await createNode({ dataDir: options.dataDir ?? './.parley' });
    try {
      const http = await createServer({ node, port: 0, host: '127.0.0.1', token, defaultMetrics: false });
      endpoint = await http.listen();
      embedded = { node, http };
    } catch (err) {
      await node.close();
      throw err;
    }
  }
  const client = new NodeClient({ endpoint, token, ...(options.ca === undefined ? {} : { ca: options.ca }) });
  const server = createMcpServer(client);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
  });
  await server.connect(transport);
  process.stderr.write(`parley mcp: serving over stdio, node ${embedded ? `embedded (${endpoint})` : endpoint}\n`);
  try {
    await closed;
    // stdin ended (the host is done): answer the calls still in flight before closing.
    await new Promise((resolve) => setImmediate(resolve)); // requests read with the last bytes start first
    await client.idle();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    await server.close().catch(() => {});
    if (embedded) {
      await embedded.http.close();
      await embedded.node.close();
    }
  }
}
