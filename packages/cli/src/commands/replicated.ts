/** `parley replicated set|get|delete|increment|list|watch`: eventual (CRDT) entries. */
import type { Command } from 'commander';
import { path } from '../client.js';
import { ctxOf, parseInteger } from '../context.js';
import { entryRows, print } from '../output.js';
import { sessionFlag } from '../session-file.js';
import { streamEvents } from '../sse-client.js';
import { noteShortenedTtl, ttlBefore } from '../ttl-note.js';
import { readJson, VALUE_HELP } from '../values.js';

const BASE = '/api/v1/replicated';

type Entry = Record<string, unknown>;

const nsKey = (c: Command) =>
  c.requiredOption('-n, --namespace <ns>', 'namespace').requiredOption('-k, --key <key>', 'key');
const consistency = (c: Command) => c.option('-c, --consistency <level>', 'local (default) or majority');

export function replicatedCommands(program: Command): void {
  const rep = program
    .command('replicated')
    .description('eventual (CRDT) entries: accepted locally even offline, spread by gossip');

  sessionFlag(consistency(nsKey(rep.command('set'))))
    .description('set a last-writer-wins entry')
    .requiredOption('-v, --value <json>', VALUE_HELP)
    .option('-t, --ttl <seconds>', 'TTL in seconds (default 3600)')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Record<string, unknown> = { value: await readJson('--value', opts.value) };
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      if (opts.consistency !== undefined) body.consistency = opts.consistency;
      const entryPath = `${BASE}${path(opts.namespace, opts.key)}`;
      const before = opts.ttl === undefined ? await ttlBefore(client, entryPath) : undefined;
      const { data } = await client.call<Entry>('POST', entryPath, { body });
      print(out, data, (e: Entry) => `${e.operation} ${e.namespace}/${e.key} version ${e.version}`);
      noteShortenedTtl(out, before, data.ttl_seconds);
    });

  sessionFlag(consistency(nsKey(rep.command('increment'))))
    .description('add to a counter (negative --by decrements)')
    .option('-b, --by <n>', 'amount (default 1)')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Record<string, unknown> = {};
      if (opts.by !== undefined) body.by = parseInteger('--by', opts.by);
      if (opts.consistency !== undefined) body.consistency = opts.consistency;
      const { data } = await client.call<Entry>('POST', `${BASE}${path(opts.namespace, opts.key)}/increment`, { body });
      print(out, data, (e: Entry) => `${e.namespace}/${e.key} = ${JSON.stringify(e.value)}`);
    });

  sessionFlag(consistency(nsKey(rep.command('get'))))
    .description("read this replica's entry (exit 3 when absent)")
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<Entry>('GET', `${BASE}${path(opts.namespace, opts.key)}`, {
        query: { consistency: opts.consistency as string | undefined },
      });
      print(out, data);
    });

  sessionFlag(consistency(nsKey(rep.command('delete'))))
    .description('delete an entry')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<Entry>('DELETE', `${BASE}${path(opts.namespace, opts.key)}`, {
        query: { consistency: opts.consistency as string | undefined },
      });
      print(out, data, (d: Entry) => `deleted ${d.namespace}/${d.key}`);
    });

  rep
    .command('list')
    .description("list this replica's live entries")
    .requiredOption('-n, --namespace <ns>', 'namespace')
    .option('--prefix <prefix>', 'only keys that start with this (case-sensitive, as watch --prefix)')
    .option('-q, --query <text>', 'case-insensitive substring match anywhere in the key')
    .option('--filter <expr>', 'filter on the value, e.g. \'status = "open"\'')
    .option('--sort-by <field>', 'key, created_at or updated_at')
    .option('--sort-order <order>', 'asc or desc')
    .option('-l, --limit <n>', 'page size (1..1000, default 100)')
    .option('--cursor <cursor>', 'next_cursor of a previous page')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<{ items: Entry[]; next_cursor: string | null }>(
        'GET',
        `${BASE}${path(opts.namespace)}`,
        {
          query: {
            q: opts.query as string | undefined,
            prefix: opts.prefix as string | undefined,
            filter: opts.filter as string | undefined,
            sort_by: opts.sortBy as string | undefined,
            sort_order: opts.sortOrder as string | undefined,
            limit: opts.limit === undefined ? undefined : parseInteger('--limit', opts.limit),
            cursor: opts.cursor as string | undefined,
          },
        },
      );
      print(out, data, (d: { items: Entry[] }) => entryRows(d.items));
    });

  rep
    .command('watch')
    .description(
      'print every change (local and remote) as one JSON line; a cut stream exits 6 (list, then watch again)',
    )
    .requiredOption('-n, --namespace <ns>', 'namespace')
    .option('--prefix <prefix>', 'only keys starting with this')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      await streamEvents(client, `${BASE}${path(opts.namespace)}`, { watch: 'true', prefix: opts.prefix }, out);
    });
}
