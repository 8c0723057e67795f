/**
 * Locks: /api/v1/locks/{ns}/{key}. Acquire (optionally waiting in the FIFO
 * queue), renew, release, inspect. The grant's fence is accepted by strong
 * writes (`fence` in the state body) until a newer holder exists.
 */
import type { JsonValue } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import { sendOk } from '../envelope.js';
import {
  commonErrors,
  lockAcquireBody,
  lockGrantSchema,
  lockReleaseBody,
  lockRenewBody,
  nsKeyParams,
  okEnvelope,
} from '../schemas.js';
import { wireLock, wireLockInfo } from '../wire.js';
import type { RouteDeps } from './types.js';

const BASE = '/api/v1/locks';
const tags = ['locks'];

interface NsKey {
  ns: string;
  key: string;
}

const lockInfoSchema = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    key: { type: 'string' },
    held: { type: 'boolean' },
    holder: { ...lockGrantSchema, nullable: true },
    last_fence: { type: 'integer' },
    waiters: { type: 'integer' },
  },
} as const;

export function registerLockRoutes(app: FastifyInstance, { node }: RouteDeps): void {
  app.post(
    `${BASE}/:ns/:key`,
    {
      schema: {
        tags,
        summary: 'Acquire a lock; with wait_seconds, wait in its FIFO queue (409 lock_held when not granted)',
        params: nsKeyParams,
        body: lockAcquireBody,
        response: { 200: okEnvelope(lockGrantSchema, 'Granted, with its fence'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const body = request.body as { owner: string; ttl_seconds?: number; wait_seconds?: number; metadata?: JsonValue };
      const locks = node.locks(ns);
      // The connection closing before the answer was written means the caller gave up.
      let gaveUp = false;
      reply.raw.once('close', () => {
        if (!reply.raw.writableEnded) gaveUp = true;
      });
      const grant = await locks.acquire(key, {
        owner: body.owner,
        ttl: body.ttl_seconds,
        wait: body.wait_seconds,
        metadata: body.metadata,
      });
      // A close already on its way (the caller aborted while the grant was being applied) is seen
      // once the event loop has had a turn.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (gaveUp || request.raw.socket === null || request.raw.socket.destroyed) {
        // The caller gave up while waiting (Ctrl-C on `parley lock acquire -w`): nobody will learn this
        // fence, so hand the lock on now rather than leave it held until its TTL runs out.
        await locks.release(key, { owner: grant.owner, fence: grant.fence }).catch(() => false);
        return reply;
      }
      return sendOk(reply, 200, wireLock(grant));
    },
  );

  app.get(
    `${BASE}/:ns/:key`,
    {
      schema: {
        tags,
        summary: 'Inspect a lock: holder, last fence, waiters',
        params: nsKeyParams,
        response: { 200: okEnvelope(lockInfoSchema, 'The lock slot'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      return sendOk(reply, 200, wireLockInfo(await node.locks(ns).inspect(key)));
    },
  );

  app.post(
    `${BASE}/:ns/:key/renew`,
    {
      schema: {
        tags,
        summary: "Extend the holder's TTL (owner and fence must match the live grant)",
        params: nsKeyParams,
        body: lockRenewBody,
        response: { 200: okEnvelope(lockGrantSchema, 'Renewed'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const body = request.body as { owner: string; fence: number; ttl_seconds?: number };
      const grant = await node.locks(ns).renew(key, { owner: body.owner, fence: body.fence, ttl: body.ttl_seconds });
      return sendOk(reply, 200, wireLock(grant));
    },
  );

  app.post(
    `${BASE}/:ns/:key/release`,
    {
      schema: {
        tags,
        summary: 'Release a lock (owner and fence); the next waiter is granted a higher fence',
        params: nsKeyParams,
        body: lockReleaseBody,
        response: {
          200: okEnvelope(
            {
              type: 'object',
              properties: { namespace: { type: 'string' }, key: { type: 'string' }, released: { type: 'boolean' } },
            },
            'released is false when the grant had already ended',
          ),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const body = request.body as { owner: string; fence: number };
      const released = await node.locks(ns).release(key, { owner: body.owner, fence: body.fence });
      return sendOk(reply, 200, { namespace: ns, key, released });
    },
  );
}
