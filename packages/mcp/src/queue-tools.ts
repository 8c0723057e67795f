/**
 * The work-queue tools (docs/queue.md): enqueue, take, heartbeat, complete,
 * fail, get and stats, over the node's /api/v1/queues routes. A take's holder
 * defaults to the session's secret (session.ts), so another agent cannot
 * complete or fail this session's task by naming its holder.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { NAMESPACE_NAME_RE } from '@parley/node';
import * as z from 'zod';
import { strict } from './arguments.js';
import { type NodeClient, path, query } from './http.js';
import { holderFor } from './session.js';
import { answer, DEFAULT_PROGRESS_INTERVAL_MS, HOLDER } from './tools.js';

const NAME = z.string().regex(NAMESPACE_NAME_RE);
const NAMESPACE = NAME.describe('Namespace the queue lives in');
const QUEUE = NAME.describe('Queue name: letters, digits, ".", "_", "-"');
const ID = z
  .string()
  .regex(/^[0-9]{1,16}$/)
  .describe('The task id (queue_take or queue_enqueue answered it)');
const TTL = z.number().int().min(1).max(2_592_000);
const MAX_ATTEMPTS = z
  .number()
  .int()
  .min(1)
  .max(1000)
  .optional()
  .describe('Attempts before dead-lettering (default 5)');

export interface QueueToolOptions {
  sessionHolder: string;
  progressIntervalMs?: number;
}

export function registerQueueTools(server: McpServer, node: NodeClient, options: QueueToolOptions): void {
  const every = options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  const as = (named: string | undefined) => holderFor(options.sessionHolder, named);
  const base = (namespace: string, queue: string, ...rest: string[]) =>
    path('queues', namespace, queue, rest.map((r) => `/${r}`).join(''));

  server.registerTool(
    'queue_enqueue',
    {
      description:
        'Add a task to a work queue: {id, created}. With key, a second enqueue of the key answers the first task (created: false).',
      inputSchema: strict({
        namespace: NAMESPACE,
        queue: QUEUE,
        item: z.unknown().describe('The task: any JSON value, at most 64 KiB'),
        key: z.string().min(1).max(256).optional().describe('De-duplication key'),
      }),
    },
    ({ namespace, queue, item, key }, extra) =>
      answer(node, every, extra, (call) => call('POST', base(namespace, queue, 'tasks'), { item: item ?? null, key })),
  );
  server.registerTool(
    'queue_take',
    {
      description:
        'Take the oldest ready task with a lease: {task: {id, item, attempt, holder, fence, deadline_at}} or {task: null}. ' +
        'Heartbeat before deadline_at; complete it with its id and fence. Subscribe to parley://queue/{namespace}/{queue} to hear of new tasks.',
      inputSchema: strict({
        namespace: NAMESPACE,
        queue: QUEUE,
        holder: HOLDER,
        ttl_seconds: TTL.optional().describe('Lease length without a heartbeat (default 60)'),
        max_attempts: MAX_ATTEMPTS,
      }),
    },
    ({ namespace, queue, holder, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', base(namespace, queue, 'take'), { holder: as(holder), ...body }),
      ),
  );
  const TASK = { namespace: NAMESPACE, queue: QUEUE, id: ID, holder: HOLDER, fence: z.number().int().min(1) };
  server.registerTool(
    'queue_heartbeat',
    {
      description:
        'Extend the lease of your task. Error lease_lost if another worker took it over: stop working on it.',
      inputSchema: strict({ ...TASK, ttl_seconds: TTL.optional() }),
    },
    ({ namespace, queue, id, holder, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', base(namespace, queue, 'tasks', id, 'heartbeat'), { holder: as(holder), ...body }),
      ),
  );
  server.registerTool(
    'queue_complete',
    {
      description:
        'Finish your task with a result; it completes once. Error lease_lost if another worker took it over or it is finished.',
      inputSchema: strict({ ...TASK, result: z.unknown().optional() }),
    },
    ({ namespace, queue, id, holder, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', base(namespace, queue, 'tasks', id, 'complete'), { holder: as(holder), ...body }),
      ),
  );
  server.registerTool(
    'queue_fail',
    {
      description:
        'Give your task back with a reason: ready again (after retry_after_seconds), or dead after its last attempt.',
      inputSchema: strict({
        ...TASK,
        reason: z.unknown(),
        retry_after_seconds: z.number().int().min(0).max(2_592_000).optional(),
        max_attempts: MAX_ATTEMPTS,
      }),
    },
    ({ namespace, queue, id, holder, reason, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', base(namespace, queue, 'tasks', id, 'fail'), {
          holder: as(holder),
          reason: reason ?? null,
          ...body,
        }),
      ),
  );
  server.registerTool(
    'queue_get',
    {
      description: 'Read a task: {id, status: ready|taken|done|dead, item, attempts, holder, fence, result, error}.',
      inputSchema: strict({ namespace: NAMESPACE, queue: QUEUE, id: ID }),
      annotations: { readOnlyHint: true },
    },
    ({ namespace, queue, id }, extra) =>
      answer(node, every, extra, (call) => call('GET', base(namespace, queue, 'tasks', id))),
  );
  server.registerTool(
    'queue_list',
    {
      description: 'List tasks in queue order: {items, next_cursor}, optionally of one status.',
      inputSchema: strict({
        namespace: NAMESPACE,
        queue: QUEUE,
        status: z.enum(['ready', 'taken', 'done', 'dead']).optional(),
        limit: z.number().int().min(1).max(1000).optional(),
        cursor: z.string().optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    ({ namespace, queue, ...q }, extra) =>
      answer(node, every, extra, (call) => call('GET', base(namespace, queue, 'tasks') + query(q))),
  );
  server.registerTool(
    'queue_stats',
    {
      description: 'Count a queue’s tasks: {ready, taken, done, dead}.',
      inputSchema: strict({ namespace: NAMESPACE, queue: QUEUE }),
      annotations: { readOnlyHint: true },
    },
    ({ namespace, queue }, extra) => answer(node, every, extra, (call) => call('GET', base(namespace, queue))),
  );
}
