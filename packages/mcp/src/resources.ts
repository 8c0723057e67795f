/**
 * Namespaces as MCP resources: `parley://strong/{namespace}` and
 * `parley://replicated/{namespace}`, listed from the node's status; reading one
 * answers the first page of its listing (at most 100 entries).
 */
import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type NodeClient, path } from './http.js';

interface StatusData {
  node: { namespaces: Array<{ name: string; kind: 'eventual' | 'strong'; keys: number }> };
}

const KINDS = { strong: 'distributed-state', replicated: 'replicated' } as const;

export function registerResources(server: McpServer, node: NodeClient): void {
  for (const [kind, route] of Object.entries(KINDS) as Array<[keyof typeof KINDS, string]>) {
    server.registerResource(
      `${kind}-namespace`,
      new ResourceTemplate(`parley://${kind}/{namespace}`, {
        list: async (extra) => {
          const status = await node.call<StatusData>('GET', '/api/v1/status', undefined, { signal: extra.signal });
          const want = kind === 'strong' ? 'strong' : 'eventual';
          return {
            resources: status.node.namespaces
              .filter((n) => n.kind === want)
              .map((n) => ({
                uri: `parley://${kind}/${n.name}`,
                name: `${kind}/${n.name}`,
                description: `${kind} namespace ${n.name} (${n.keys} keys)`,
                mimeType: 'application/json',
              })),
          };
        },
      }),
      { description: `A ${kind} namespace: its first 100 entries`, mimeType: 'application/json' },
      async (uri, { namespace }, extra) => {
        const ns = (Array.isArray(namespace) ? namespace[0] : namespace) ?? '';
        const page = await node.call('GET', `${path(route, ns)}?limit=100`, undefined, { signal: extra.signal });
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(page) }] };
      },
    );
  }
}
