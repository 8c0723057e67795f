/** `parley lock acquire|renew|release|inspect`: fenced locks with FIFO waits and TTL auto-release. */
import type { Command } from 'commander';
import { type ApiClient, ApiError, path, UsageError } from '../client.js';
import { ctxOf, parseInteger } from '../context.js';
import { print } from '../output.js';
import { readJson, VALUE_FORMS } from '../values.js';

const BASE = '/api/v1/locks';

type Grant = Record<string, unknown>;

function ownerOf(opts: { owner?: string }): string {
  const owner = opts.owner ?? process.env.PARLEY_OWNER;
  if (owner === undefined || owner === '') throw new UsageError('--owner is required (or set PARLEY_OWNER)');
  return owner;
}

const nsKey = (c: Command) =>
  c.requiredOption('-n, --namespace <ns>', 'namespace').requiredOption('-k, --key <key>', 'key');

/**
 * Why a release freed nothing, as the error `lock renew` would give (exit 4): `lock_held` naming
 * the holder when someone else holds the lock, else `lease_lost` (this grant expired or was
 * released already). The server answers such a release 200 `released: false` (a retried release
 * must not fail); the command line makes it an error, so a script sees it did not hold the lock.
 */
async function notReleased(
  client: ApiClient,
  lockPath: string,
  lock: string,
  grant: { owner: string; fence: number },
): Promise<ApiError> {
  const holder = await client
    .call<{ holder: { owner: string; fence: number; expires_at: string } | null }>('GET', lockPath)
    .then((r) => r.data.holder)
    .catch(() => null);
  if (holder !== null && (holder.owner !== grant.owner || holder.fence !== grant.fence)) {
    return new ApiError({
      status: 0,
      error: 'lock_held',
      msg: `lock '${lock}' is held by '${holder.owner}' (fence ${holder.fence}, until ${holder.expires_at}); nothing was released`,
    });
  }
  return new ApiError({
    status: 0,
    error: 'lease_lost',
    msg: `lock '${lock}': the grant of fence ${grant.fence} to '${grant.owner}' has ended (expired or released); nothing was released`,
  });
}

export function lockCommands(program: Command): void {
  const lock = program
    .command('lock')
    .description('fenced locks: acquire (optionally waiting), renew, release, inspect');

  nsKey(lock.command('acquire'))
    .description('acquire a lock and print its fence (exit 4 when held and not granted within --wait)')
    .option('-o, --owner <owner>', 'who holds it (default $PARLEY_OWNER)')
    .option('-t, --ttl <seconds>', 'auto-release after this long without renewal (default 60, at most 3600)')
    .option('-w, --wait <seconds>', 'wait this long in the FIFO queue (default 0: fail at once)')
    .option('-m, --metadata <json>', `JSON stored with the grant, at most 16 KB (${VALUE_FORMS})`)
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Record<string, unknown> = { owner: ownerOf(opts) };
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      const wait = opts.wait === undefined ? 0 : parseInteger('--wait', opts.wait);
      if (opts.wait !== undefined) body.wait_seconds = wait;
      if (opts.metadata !== undefined) body.metadata = await readJson('--metadata', opts.metadata);
      const { data } = await client.call<Grant>('POST', `${BASE}${path(opts.namespace, opts.key)}`, {
        body,
        extraTimeoutMs: wait * 1000,
      });
      print(out, data, (g: Grant) => `acquired ${g.namespace}/${g.key} fence ${g.fence} (expires ${g.expires_at})`);
    });

  nsKey(lock.command('renew'))
    .description("extend the holder's TTL")
    .option('-o, --owner <owner>', 'the holder (default $PARLEY_OWNER)')
    .requiredOption('-f, --fence <n>', 'the fence the grant returned')
    .option('-t, --ttl <seconds>', 'new TTL from now')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Record<string, unknown> = { owner: ownerOf(opts), fence: parseInteger('--fence', opts.fence) };
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      const { data } = await client.call<Grant>('POST', `${BASE}${path(opts.namespace, opts.key)}/renew`, { body });
      print(out, data, (g: Grant) => `renewed ${g.namespace}/${g.key} fence ${g.fence} (expires ${g.expires_at})`);
    });

  nsKey(lock.command('release'))
    .description('release a lock; the next waiter gets a higher fence (exit 4 if this grant did not hold it)')
    .option('-o, --owner <owner>', 'the holder (default $PARLEY_OWNER)')
    .requiredOption('-f, --fence <n>', 'the fence the grant returned')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body = { owner: ownerOf(opts), fence: parseInteger('--fence', opts.fence) };
      const lockPath = `${BASE}${path(opts.namespace, opts.key)}`;
      const { data } = await client.call<Grant>('POST', `${lockPath}/release`, { body });
      if (data.released !== true) throw await notReleased(client, lockPath, `${opts.namespace}/${opts.key}`, body);
      print(out, data, (d: Grant) => `released ${d.namespace}/${d.key}`);
    });

  nsKey(lock.command('inspect'))
    .description('show the holder, the last fence and the number of waiters')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<Grant>('GET', `${BASE}${path(opts.namespace, opts.key)}`);
      print(out, data, (d: Grant) => {
        const h = d.holder as Grant | null;
        const who = h === null ? 'free' : `held by ${h.owner} fence ${h.fence} until ${h.expires_at}`;
        return `${d.namespace}/${d.key}: ${who}; last fence ${d.last_fence}; ${d.waiters} waiting`;
      });
    });
}
