/** `parley claim` and `parley lease acquire|renew|write|release|get`: the coordination primitives of seed 003. */
import type { Command } from 'commander';
import { path, UsageError } from '../client.js';
import { ctxOf, parseInteger } from '../context.js';
import { print } from '../output.js';
import { sessionFlag } from '../session-file.js';
import { readJson, VALUE_FORMS, VALUE_HELP } from '../values.js';

type Data = Record<string, unknown>;

const nsKey = (c: Command) =>
  c.requiredOption('-n, --namespace <ns>', 'namespace').requiredOption('-k, --key <key>', 'key');

/** `--holder`, or $PARLEY_OWNER; a usage error without either. */
export function holderOf(opts: { holder?: string }): string {
  const holder = opts.holder ?? process.env.PARLEY_OWNER;
  if (holder === undefined || holder === '') throw new UsageError('--holder is required (or set PARLEY_OWNER)');
  return holder;
}

const leaseLine = (l: Data) =>
  `${l.namespace}/${l.key} epoch ${l.epoch} holder ${l.holder ?? '(released)'} until ${l.deadline_at} state ${JSON.stringify(l.state)}`;

export function coordinationCommands(program: Command): void {
  sessionFlag(nsKey(program.command('claim')))
    .description('claim a key once: exactly one caller wins; the others read the winner value (exit 0 either way)')
    .requiredOption('-v, --value <json>', VALUE_HELP)
    .option('-t, --ttl <seconds>', 'how long the claim lives (default 30 days)')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = { value: await readJson('--value', opts.value) };
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      const { data } = await client.call<Data>('POST', `/api/v1/claims${path(opts.namespace, opts.key)}`, { body });
      print(
        out,
        data,
        (d: Data) => `${d.won ? 'won' : 'lost'} ${opts.namespace}/${opts.key}: ${JSON.stringify(d.value)}`,
      );
    });

  const lease = program.command('lease').description('fenced leases with epochs: acquire, renew, write, release, get');
  const base = (opts: { namespace: string; key: string }) => `/api/v1/leases${path(opts.namespace, opts.key)}`;

  nsKey(lease.command('acquire'))
    .description('acquire a lease (bumps the epoch; exit 4 while another holder has it)')
    .option('--holder <id>', 'who holds it (default $PARLEY_OWNER)')
    .requiredOption('-t, --ttl <seconds>', 'deadline from now')
    .option('-s, --state <json>', `new state, written with the acquisition (${VALUE_FORMS})`)
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = { holder: holderOf(opts), ttl_seconds: parseInteger('--ttl', opts.ttl) };
      if (opts.state !== undefined) body.state = await readJson('--state', opts.state);
      const { data } = await client.call<Data>('POST', base(opts), { body });
      print(out, data, leaseLine);
    });

  nsKey(lease.command('renew'))
    .description('extend the deadline of your ownership period (exit 4: lease_lost)')
    .option('--holder <id>', 'the holder (default $PARLEY_OWNER)')
    .requiredOption('--epoch <n>', 'the epoch acquire returned')
    .option('-t, --ttl <seconds>', 'new deadline from now')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = { holder: holderOf(opts), epoch: parseInteger('--epoch', opts.epoch) };
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      const { data } = await client.call<Data>('POST', `${base(opts)}/renew`, { body });
      print(out, data, leaseLine);
    });

  nsKey(lease.command('write'))
    .description('fenced write of the lease state (exit 4 once the lease moved on)')
    .option('--holder <id>', 'the holder (default $PARLEY_OWNER)')
    .requiredOption('--epoch <n>', 'the epoch acquire returned')
    .requiredOption('-s, --state <json>', `the new state (${VALUE_FORMS})`)
    .option('--if-version <version>', 'only if the lease document is at this version')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = {
        holder: holderOf(opts),
        epoch: parseInteger('--epoch', opts.epoch),
        state: await readJson('--state', opts.state),
      };
      if (opts.ifVersion !== undefined) body.if_version_matches = opts.ifVersion;
      const { data } = await client.call<Data>('POST', `${base(opts)}/write`, { body });
      print(out, data, leaseLine);
    });

  nsKey(lease.command('release'))
    .description('release the lease, optionally recording a final state')
    .option('--holder <id>', 'the holder (default $PARLEY_OWNER)')
    .requiredOption('--epoch <n>', 'the epoch acquire returned')
    .option('-s, --state <json>', `final state (${VALUE_FORMS})`)
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = { holder: holderOf(opts), epoch: parseInteger('--epoch', opts.epoch) };
      if (opts.state !== undefined) body.state = await readJson('--state', opts.state);
      const { data } = await client.call<Data>('POST', `${base(opts)}/release`, { body });
      print(out, data, (d: Data) => `released ${d.namespace}/${d.key}`);
    });

  nsKey(lease.command('get'))
    .description('read the lease document (epoch, holder, deadline, state)')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<Data>('GET', base(opts));
      print(out, data, leaseLine);
    });
}
