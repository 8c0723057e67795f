/** `parley distributed-state set|get|delete|list|delete-namespace|watch`: strong entries (seed 000). */
import type { Command } from 'commander';
import { path, UsageError } from '../client.js';
import { confirmOrRefuse } from '../confirm.js';
import { ctxOf, parseInteger } from '../context.js';
import { entryRows, fields, print } from '../output.js';
import { sessionFlag } from '../session-file.js';
import { streamEvents } from '../sse-client.js';
import { noteShortenedTtl, ttlBefore } from '../ttl-note.js';
import { readJson, VALUE_HELP } from '../values.js';

const BASE = '/api/v1/distributed-state';

type Entry = Record<string, unknown>;

/** `-c/--consistency`, `--max-staleness-ms`, `--max-lag-entries` of a strong read (docs/cli.md). */
const readFlags = (c: Command) =>
  c
    .option('-c, --consistency <level>', 'linearizable (default), serializable or bounded')
    .option('--max-staleness-ms <ms>', "bounded: hold every write acknowledged this long before (implies 'bounded')")
    .option(
      '--max-lag-entries <n>',
      "bounded: miss at most this many log entries committed by then (implies 'bounded')",
    );

/** The read flags as the HTTP query parameters (the node checks the mix). */
function readQuery(opts: { consistency?: string; maxStalenessMs?: string; maxLagEntries?: string }) {
  return {
    consistency: opts.consistency,
    max_staleness_ms:
      opts.maxStalenessMs === undefined ? undefined : parseInteger('--max-staleness-ms', opts.maxStalenessMs),
    max_lag_entries:
      opts.maxLagEntries === undefined ? undefined : parseInteger('--max-lag-entries', opts.maxLagEntries),
  };
}

export function stateCommands(program: Command): void {
  const state = program
    .command('distributed-state')
    .alias('state')
    .description('strong (Raft) entries: CAS with version tokens, TTL leases, namespaces');

  sessionFlag(state.command('set'))
    .description('create or replace an entry (prints the new version)')
    .requiredOption('-n, --namespace <ns>', 'namespace')
    .requiredOption('-k, --key <key>', 'key')
    .requiredOption('-v, --value <json>', VALUE_HELP)
    .option('-t, --ttl <seconds>', 'TTL in seconds (default 3600, at most 30 days)')
    .option('--if-version <version>', 'compare-and-swap: write only if the entry is at this version')
    .option('--if-not-exists', 'create-only: fail if the key exists')
    .option('--fence <n>', 'fence token of the lock on the same namespace/key')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Record<string, unknown> = { value: await readJson('--value', opts.value) };
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      if (opts.ifVersion !== undefined) body.if_version_matches = opts.ifVersion;
      if (opts.ifNotExists === true) body.if_not_exists = true;
      if (opts.fence !== undefined) body.fence = parseInteger('--fence', opts.fence);
      const entryPath = `${BASE}${path(opts.namespace, opts.key)}`;
      const before =
        opts.ttl === undefined && opts.ifNotExists !== true ? await ttlBefore(client, entryPath) : undefined;
      const { data } = await client.call<Entry>('POST', entryPath, { body });
      print(
        out,
        data,
        (e: Entry) => `${e.operation} ${e.namespace}/${e.key} version ${e.version} (expires ${e.expires_at})`,
      );
      noteShortenedTtl(out, before, data.ttl_seconds);
    });

  readFlags(
    sessionFlag(state.command('get'))
      .description('read an entry (exit 3 when absent or expired)')
      .requiredOption('-n, --namespace <ns>', 'namespace')
      .requiredOption('-k, --key <key>', 'key'),
  ).action(async (opts, command: Command) => {
    const { client, out } = ctxOf(command);
    const { data } = await client.call<Entry>('GET', `${BASE}${path(opts.namespace, opts.key)}`, {
      query: readQuery(opts),
    });
    print(out, data);
  });

  sessionFlag(state.command('delete'))
    .description('delete an entry')
    .requiredOption('-n, --namespace <ns>', 'namespace')
    .requiredOption('-k, --key <key>', 'key')
    .option('--if-version <version>', 'delete only if the entry is at this version')
    .option('--fence <n>', 'fence token of the lock on the same namespace/key')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const query = {
        if_version_matches: opts.ifVersion as string | undefined,
        fence: opts.fence === undefined ? undefined : parseInteger('--fence', opts.fence),
      };
      const { data } = await client.call<Entry>('DELETE', `${BASE}${path(opts.namespace, opts.key)}`, { query });
      print(out, data, (d: Entry) => `deleted ${d.namespace}/${d.key}`);
    });

  readFlags(
    sessionFlag(state.command('list')).description(
      'list full entries (search grammar: -q, --filter, --sort-by, --sort-order, -l, --cursor)',
    ),
  )
    .requiredOption('-n, --namespace <ns>', 'namespace')
    .option('--prefix <prefix>', 'only keys that start with this (case-sensitive, as watch --prefix)')
    .option('-q, --query <text>', 'case-insensitive substring match anywhere in the key')
    .option('--filter <expr>', 'filter on the value, e.g. \'status = "open" and attempts >= 3\'')
    .option('--sort-by <field>', 'key, created_at or updated_at')
    .option('--sort-order <order>', 'asc or desc')
    .option('-l, --limit <n>', 'page size (1..1000, default 100)')
    .option('--cursor <cursor>', 'next_cursor of a previous page')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const query = {
        q: opts.query as string | undefined,
        prefix: opts.prefix as string | undefined,
        filter: opts.filter as string | undefined,
        sort_by: opts.sortBy as string | undefined,
        sort_order: opts.sortOrder as string | undefined,
        limit: opts.limit === undefined ? undefined : parseInteger('--limit', opts.limit),
        cursor: opts.cursor as string | undefined,
        ...readQuery(opts),
      };
      const { data } = await client.call<{ items: Entry[]; next_cursor: string | null }>(
        'GET',
        `${BASE}${path(opts.namespace)}`,
        { query },
      );
      print(out, data, (d: { items: Entry[]; next_cursor: string | null }) =>
        d.next_cursor === null ? entryRows(d.items) : `${entryRows(d.items)}\nnext page: --cursor ${d.next_cursor}`,
      );
    });

  state
    .command('delete-namespace')
    .description('delete every entry of a namespace (or those matching --pattern); asks unless --confirm')
    .requiredOption('-n, --namespace <ns>', 'namespace')
    .option('-p, --pattern <glob>', 'only keys matching this glob (default *)')
    .option('--confirm', 'do not ask: there is no undo')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      await confirmOrRefuse(
        `Delete ${opts.pattern === undefined ? 'every key' : `keys matching '${opts.pattern}'`} in namespace '${opts.namespace}'? There is no undo.`,
        opts.confirm,
      );
      const { data } = await client.call<Entry>('DELETE', `${BASE}${path(opts.namespace)}`, {
        query: { confirm: 'true', pattern: opts.pattern as string | undefined },
      });
      print(out, data, (d: Entry) => fields(d));
    });

  state
    .command('watch')
    .description(
      'print every change of a namespace as it commits (one JSON line each); a cut stream resumes after its last id',
    )
    .requiredOption('-n, --namespace <ns>', 'namespace')
    .option('--prefix <prefix>', 'only keys starting with this')
    .option('--from-revision <n>', 'resume after this revision, or after an event id (42:3) a watch printed')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const after = opts.fromRevision as string | undefined;
      if (after !== undefined && !/^\d{1,16}(:\d{1,9})?$/.test(after)) {
        throw new UsageError('--from-revision must be a revision (42) or an event id (42:3)');
      }
      await streamEvents(
        client,
        `${BASE}${path(opts.namespace)}`,
        { watch: 'true', prefix: opts.prefix as string | undefined },
        out,
        { resume: true, ...(after !== undefined ? { after } : {}), note: (text) => out.stderr(text) },
      );
    });
}
