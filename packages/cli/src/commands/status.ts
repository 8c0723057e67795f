/** `parley status`: the node (peers, namespaces) and the Raft group (leader, term, indexes). */
import type { Command } from 'commander';
import { ctxOf } from '../context.js';
import { print, table } from '../output.js';

interface StatusData {
  node: {
    peerId: string;
    dataDir: string | null;
    listen: string[];
    peers: string[];
    namespaces: Array<{ name: string; kind: string; keys: number; bytes: number }>;
  };
  cluster: {
    leader: string | null;
    term: number;
    voters: string[];
    learners: string[];
    commitIndex: number;
    appliedIndex: number;
  } | null;
}

export function statusCommand(program: Command): void {
  program
    .command('status')
    .description('node and cluster status')
    .action(async (_opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<StatusData>('GET', '/api/v1/status');
      print(out, data, (d: StatusData) => {
        const lines = [
          `peer id   ${d.node.peerId}`,
          `data dir  ${d.node.dataDir ?? '(in memory)'}`,
          `listen    ${d.node.listen.join(' ') || '-'}`,
          `peers     ${d.node.peers.length}`,
        ];
        if (d.cluster !== null) {
          lines.push(
            `leader    ${d.cluster.leader ?? '(none)'}  term ${d.cluster.term}`,
            `voters    ${d.cluster.voters.join(' ')}`,
            `commit    ${d.cluster.commitIndex}  applied ${d.cluster.appliedIndex}`,
          );
        }
        if (d.node.namespaces.length > 0) {
          lines.push(
            '',
            table(
              ['NAMESPACE', 'KIND', 'KEYS', 'BYTES'],
              d.node.namespaces.map((n) => [n.name, n.kind, n.keys, n.bytes]),
            ),
          );
        }
        return lines.join('\n');
      });
    });
}
