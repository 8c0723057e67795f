/**
 * The fenced work queue over HTTP: /api/v1/queues/{ns}/{queue}/…. HTTP callers
 * hold no task handle, so each call on a task names its (holder, fence), the
 * pair `take` answered; a fence another take superseded is `lease_lost`.
 */
import { KeyNotFoundError } from '@parley/interface';
import type { JsonValue, QueueTaskStatus, QueueTaskView } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import { sendOk } from '../envelope.js';
import {
  completeBody,
  enqueueBody,
  enqueuedSchema,
  failBody,
  heartbeatBody,
  queueParams,
  statsSchema,
  takeBody,
  takenSchema,
  taskListQuery,
  taskParams,
  taskViewSchema,
} from '../queue-schemas.js';
import { commonErrors, okEnvelope } from '../schemas.js';
import { isoMicros } from '../time.js';
import { intInRange } from './query.js';
import type { RouteDeps } from './types.js';

const BASE = '/api/v1/queues/:ns/:queue';
const tags = ['queues'];

interface QueueParams {
  ns: string;
  queue: string;
}
interface TaskParams extends QueueParams {
  id: string;
}
interface Fenced {
  holder: string;
  fence: number;
}

function wireTask(t: QueueTaskView) {
  return {
    id: t.id,
    status: t.status,
    item: t.item,
    attempts: t.attempts,
    key: t.key,
    holder: t.holder,
    fence: t.fence,
    deadline_at: isoMicros(t.deadlineAt),
    result: t.result,
    error: t.error,
  };
}

export function registerQueueRoutes(app: FastifyInstance, { node }: RouteDeps): void {
  const queue = (
    p: QueueParams,
    options: { max_attempts?: number; max_length?: number; max_item_bytes?: number } = {},
  ) =>
    node.strong(p.ns).queue(p.queue, {
      ...(options.max_attempts !== undefined ? { maxAttempts: options.max_attempts } : {}),
      ...(options.max_length !== undefined ? { maxLength: options.max_length } : {}),
      ...(options.max_item_bytes !== undefined ? { maxItemBytes: options.max_item_bytes } : {}),
    });

  app.post(
    `${BASE}/tasks`,
    {
      schema: {
        tags,
        summary: 'Enqueue a task: 201 created, or 200 with the earlier task of the same key',
        params: queueParams,
        body: enqueueBody,
        response: {
          200: okEnvelope(enqueuedSchema, 'Already enqueued under this key'),
          201: okEnvelope(enqueuedSchema, 'Enqueued'),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const p = request.params as QueueParams;
      const body = request.body as {
        item: JsonValue;
        key?: string;
        key_ttl_seconds?: number;
        max_length?: number;
        max_item_bytes?: number;
      };
      const r = await queue(p, body).enqueue(body.item, {
        ...(body.key !== undefined ? { key: body.key } : {}),
        ...(body.key_ttl_seconds !== undefined ? { keyTtl: body.key_ttl_seconds } : {}),
      });
      return sendOk(reply, r.created ? 201 : 200, r);
    },
  );

  app.post(
    `${BASE}/take`,
    {
      schema: {
        tags,
        summary: 'Take the oldest available task with a lease (task: null when none)',
        params: queueParams,
        body: takeBody,
        response: { 200: okEnvelope(takenSchema, 'The task taken, or null'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const p = request.params as QueueParams;
      const body = request.body as { holder: string; ttl_seconds?: number; max_attempts?: number };
      const t = await queue(p, body).take({
        holder: body.holder,
        ...(body.ttl_seconds ? { ttl: body.ttl_seconds } : {}),
      });
      const task = t && {
        id: t.id,
        item: t.item,
        attempt: t.attempt,
        holder: t.holder,
        fence: t.fence,
        deadline_at: isoMicros(t.deadlineAt),
      };
      return sendOk(reply, 200, { task });
    },
  );

  const fencedRoute = (
    verb: 'heartbeat' | 'complete' | 'fail',
    summary: string,
    body: object,
    run: (p: TaskParams, b: Fenced & Record<string, unknown>) => Promise<void>,
  ) =>
    app.post(
      `${BASE}/tasks/:id/${verb}`,
      {
        schema: {
          tags,
          summary,
          params: taskParams,
          body,
          response: { 200: okEnvelope(taskViewSchema, 'The task after the call'), ...commonErrors },
        },
      },
      async (request, reply) => {
        const p = request.params as TaskParams;
        await run(p, request.body as Fenced & Record<string, unknown>);
        const view = await queue(p).get(p.id);
        if (view === undefined) throw new KeyNotFoundError(p.ns, `q/${p.queue}/t/${p.id}`);
        return sendOk(reply, 200, wireTask(view));
      },
    );

  fencedRoute('heartbeat', 'Extend the lease of a taken task (409 lease_lost once taken over)', heartbeatBody, (p, b) =>
    queue(p)
      .task(p.id, { holder: b.holder, fence: b.fence })
      .heartbeat(b.ttl_seconds as number | undefined),
  );
  fencedRoute('complete', 'Finish a taken task once (409 lease_lost if another worker took it)', completeBody, (p, b) =>
    queue(p)
      .task(p.id, { holder: b.holder, fence: b.fence })
      .complete(b.result as JsonValue | undefined),
  );
  fencedRoute('fail', 'Give a taken task back: ready again (after retry_after_seconds), or dead', failBody, (p, b) => {
    const retryAfter = b.retry_after_seconds as number | undefined;
    return queue(p, { max_attempts: b.max_attempts as number | undefined })
      .task(p.id, { holder: b.holder, fence: b.fence })
      .fail(b.reason as JsonValue, retryAfter !== undefined ? { retryAfter } : {});
  });

  app.get(
    `${BASE}/tasks/:id`,
    {
      schema: {
        tags,
        summary: 'Read a task (status, attempts, holder, fence, result)',
        params: taskParams,
        response: { 200: okEnvelope(taskViewSchema, 'The task'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const p = request.params as TaskParams;
      const view = await queue(p).get(p.id);
      if (view === undefined) throw new KeyNotFoundError(p.ns, `q/${p.queue}/t/${p.id}`);
      return sendOk(reply, 200, wireTask(view));
    },
  );

  app.get(
    `${BASE}/tasks`,
    {
      schema: {
        tags,
        summary: 'List tasks in queue order, optionally of one status',
        params: queueParams,
        querystring: taskListQuery,
        response: {
          200: okEnvelope(
            {
              type: 'object',
              properties: {
                items: { type: 'array', items: taskViewSchema },
                next_cursor: { type: 'string', nullable: true },
              },
            },
            'A page of tasks',
          ),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const p = request.params as QueueParams;
      const q = request.query as { status?: QueueTaskStatus; limit?: string; cursor?: string };
      const page = await queue(p).list({
        ...(q.status ? { status: q.status } : {}),
        ...(q.limit !== undefined ? { limit: intInRange('limit', q.limit, 1, 1000) } : {}),
        ...(q.cursor ? { cursor: q.cursor } : {}),
      });
      return sendOk(reply, 200, { items: page.items.map(wireTask), next_cursor: page.nextCursor });
    },
  );

  app.get(
    BASE,
    {
      schema: {
        tags,
        summary: 'Count a queue’s tasks by status',
        params: queueParams,
        response: { 200: okEnvelope(statsSchema, 'Counts'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const p = request.params as QueueParams;
      return sendOk(reply, 200, { namespace: p.ns, queue: p.queue, ...(await queue(p).stats()) });
    },
  );
}
