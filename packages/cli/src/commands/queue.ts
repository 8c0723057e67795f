/** `parley queue enqueue|take|heartbeat|complete|fail|get|list|stats`: the fenced work queue (docs/queue.md). */
import type { Command } from 'commander';
import { path } from '../client.js';
import { ctxOf, parseInteger } from '../context.js';
import { print } from '../output.js';
import { readJson, VALUE_FORMS } from '../values.js';
import { holderOf } from './coordination.js';

type Data = Record<string, unknown>;

const nsQueue = (c: Command) =>
  c.requiredOption('-n, --namespace <ns>', 'namespace').requiredOption('-q, --queue <name>', 'queue name');

const base = (opts: { namespace: string; queue: string }) => `/api/v1/queues${path(opts.namespace, opts.queue)}`;

const taskLine = (t: Data) =>
  `task ${t.id} ${t.status} attempts ${t.attempts} holder ${t.holder ?? '-'} fence ${t.fence} item ${JSON.stringify(t.item)}` +
  (t.result !== null ? ` result ${JSON.stringify(t.result)}` : '') +
  (t.error !== null ? ` error ${JSON.stringify(t.error)}` : '');

/** The options every call on a taken task names: its id and the (holder, fence) of the take. */
const onTask = (c: Command) =>
  nsQueue(c)
    .requiredOption('--id <id>', 'the task id take answered')
    .option('--holder <id>', 'the holder (default $PARLEY_OWNER)')
    .requiredOption('--fence <n>', 'the fence take answered');

const fenced = (opts: { id: string; holder?: string; fence: string }) => ({
  holder: holderOf(opts),
  fence: parseInteger('--fence', opts.fence),
});

export function queueCommands(program: Command): void {
  const queue = program
    .command('queue')
    .description('a fenced work queue: enqueue, take with a lease, heartbeat, complete once, fail');

  nsQueue(queue.command('enqueue'))
    .description('add a task (with --key a second enqueue of the key answers the first task)')
    .requiredOption('-i, --item <json>', `the task (${VALUE_FORMS})`)
    .option('-k, --key <key>', 'de-duplication key')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = { item: await readJson('--item', opts.item) };
      if (opts.key !== undefined) body.key = opts.key;
      const { data } = await client.call<Data>('POST', `${base(opts)}/tasks`, { body });
      print(out, data, (d: Data) => `${d.created ? 'enqueued' : 'already enqueued'} task ${d.id}`);
    });

  nsQueue(queue.command('take'))
    .description('take the oldest ready task with a lease (exit 0 with "none" when the queue has none ready)')
    .option('--holder <id>', 'who takes it (default $PARLEY_OWNER)')
    .option('-t, --ttl <seconds>', 'lease length without a heartbeat (default 60)')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = { holder: holderOf(opts) };
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      const { data } = await client.call<{ task: Data | null }>('POST', `${base(opts)}/take`, { body });
      print(out, data, (d: { task: Data | null }) =>
        d.task === null
          ? 'none'
          : `task ${d.task.id} attempt ${d.task.attempt} fence ${d.task.fence} until ${d.task.deadline_at} item ${JSON.stringify(d.task.item)}`,
      );
    });

  onTask(queue.command('heartbeat'))
    .description('extend the lease of a taken task (exit 4: lease_lost, another worker has it)')
    .option('-t, --ttl <seconds>', 'new lease length from now')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = fenced(opts);
      if (opts.ttl !== undefined) body.ttl_seconds = parseInteger('--ttl', opts.ttl);
      const { data } = await client.call<Data>('POST', `${base(opts)}/tasks${path(opts.id)}/heartbeat`, { body });
      print(out, data, taskLine);
    });

  onTask(queue.command('complete'))
    .description('finish a taken task, once (exit 4: lease_lost, another worker took it or it is finished)')
    .option('-r, --result <json>', `the result (${VALUE_FORMS})`)
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = fenced(opts);
      if (opts.result !== undefined) body.result = await readJson('--result', opts.result);
      const { data } = await client.call<Data>('POST', `${base(opts)}/tasks${path(opts.id)}/complete`, { body });
      print(out, data, taskLine);
    });

  onTask(queue.command('fail'))
    .description('give a taken task back: ready again (after --retry-after), or dead after its last attempt')
    .requiredOption('--reason <json>', `why (${VALUE_FORMS})`)
    .option('--retry-after <seconds>', 'not taken again before this')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const body: Data = { ...fenced(opts), reason: await readJson('--reason', opts.reason) };
      if (opts.retryAfter !== undefined) body.retry_after_seconds = parseInteger('--retry-after', opts.retryAfter);
      const { data } = await client.call<Data>('POST', `${base(opts)}/tasks${path(opts.id)}/fail`, { body });
      print(out, data, taskLine);
    });

  nsQueue(queue.command('get'))
    .description('read a task: status, attempts, holder, fence, result')
    .requiredOption('--id <id>', 'task id')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<Data>('GET', `${base(opts)}/tasks${path(opts.id)}`);
      print(out, data, taskLine);
    });

  nsQueue(queue.command('list'))
    .description('list tasks in queue order')
    .option('-s, --status <status>', 'only ready, taken, done or dead')
    .option('-l, --limit <n>', 'page size (default 100)')
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const query: Record<string, string> = {};
      if (opts.status !== undefined) query.status = opts.status;
      if (opts.limit !== undefined) query.limit = String(parseInteger('--limit', opts.limit));
      if (opts.cursor !== undefined) query.cursor = opts.cursor;
      const { data } = await client.call<{ items: Data[]; next_cursor: string | null }>('GET', `${base(opts)}/tasks`, {
        query,
      });
      print(out, data, (d: { items: Data[]; next_cursor: string | null }) =>
        [...d.items.map(taskLine), ...(d.next_cursor ? [`next cursor: ${d.next_cursor}`] : [])].join('\n'),
      );
    });

  nsQueue(queue.command('stats'))
    .description('count the tasks by status')
    .action(async (opts, command: Command) => {
      const { client, out } = ctxOf(command);
      const { data } = await client.call<Data>('GET', base(opts));
      print(out, data, (d: Data) => `ready ${d.ready} taken ${d.taken} done ${d.done} dead ${d.dead}`);
    });
}
