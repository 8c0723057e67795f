/**
 * Claims and leases of seed 003 over HTTP. A claim is create-once: exactly one
 * caller wins, every loser reads the winner's value. A lease is fenced
 * ownership with an epoch: HTTP callers hold no handle, so each call names its
 * (holder, epoch) and the server re-attaches to that ownership period; a
 * different epoch is `lease_lost`.
 */
import { InvalidArgumentError, KeyNotFoundError, LeaseLostError } from '@parley/interface';
import type { JsonValue, Lease, ParleyNode } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import { sendOk } from '../envelope.js';
import {
  claimBody,
  commonErrors,
  entrySchema,
  leaseAcquireBody,
  leaseReleaseBody,
  leaseRenewBody,
  leaseSchema,
  leaseWriteBody,
  nsKeyParams,
  okEnvelope,
} from '../schemas.js';
import { answerSession, sessionOf } from '../session-header.js';
import { isoMicros } from '../time.js';
import { wireEntry, wireLease } from '../wire.js';
import type { RouteDeps } from './types.js';

const tags = ['claims and leases'];

interface NsKey {
  ns: string;
  key: string;
}

async function attached(node: ParleyNode, { ns, key }: NsKey, holder: string, epoch: number): Promise<Lease> {
  const lease = await node.strong(ns).attach(key, holder);
  if (lease === undefined || lease.epoch !== epoch) throw new LeaseLostError(key, epoch, lease?.epoch);
  return lease;
}

export function registerCoordinationRoutes(app: FastifyInstance, { node }: RouteDeps): void {
  app.post(
    '/api/v1/claims/:ns/:key',
    {
      schema: {
        tags,
        summary: 'Claim a key once: 201 with won=true for the one winner, 200 with the winner value for the others',
        params: nsKeyParams,
        body: claimBody,
        response: {
          200: okEnvelope(claimResultSchema(), 'Lost: the winner value'),
          201: okEnvelope(claimResultSchema(), 'Won'),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const body = request.body as { value: JsonValue; ttl_seconds?: number };
      const session = sessionOf(request);
      const result = await node.strong(ns).claim(key, body.value, { ttl: body.ttl_seconds, session });
      answerSession(reply, session);
      return sendOk(reply, result.won ? 201 : 200, {
        won: result.won,
        value: result.value,
        version: result.version,
        entry: wireEntry(result.entry),
      });
    },
  );

  app.post(
    '/api/v1/leases/:ns/:key',
    {
      schema: {
        tags,
        summary: 'Acquire a lease (bumps the epoch); 409 when another holder has it and it has not expired',
        params: nsKeyParams,
        body: leaseAcquireBody,
        response: { 201: okEnvelope(leaseSchema, 'Acquired'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const body = request.body as { holder: string; ttl_seconds: number; state?: JsonValue };
      const lease = await node.strong(ns).lease(key, { holder: body.holder, ttl: body.ttl_seconds, state: body.state });
      return sendOk(reply, 201, wireLease(lease.view));
    },
  );

  app.get(
    '/api/v1/leases/:ns/:key',
    {
      schema: {
        tags,
        summary: 'Read a lease document (epoch, holder, deadline, state)',
        params: nsKeyParams,
        response: { 200: okEnvelope(leaseSchema, 'The lease'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const entry = await node.strong(ns).get(key);
      if (entry === undefined) throw new KeyNotFoundError(ns, key);
      if (entry.kind !== 'lease') throw new InvalidArgumentError(`'${ns}/${key}' is a ${entry.kind}, not a lease`);
      const doc = entry.value as { epoch: number; holder: string | null; deadlineAt: number; state: JsonValue };
      return sendOk(reply, 200, {
        namespace: ns,
        key,
        epoch: doc.epoch,
        holder: doc.holder,
        deadline_at: isoMicros(doc.deadlineAt),
        state: doc.state,
        version: entry.version,
        ttl_seconds: entry.ttlSeconds,
      });
    },
  );

  app.post(
    '/api/v1/leases/:ns/:key/renew',
    {
      schema: {
        tags,
        summary: 'Heartbeat: extend the deadline (409 lease_lost once another epoch exists)',
        params: nsKeyParams,
        body: leaseRenewBody,
        response: { 200: okEnvelope(leaseSchema, 'Renewed'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const params = request.params as NsKey;
      const body = request.body as { holder: string; epoch: number; ttl_seconds?: number };
      const lease = await attached(node, params, body.holder, body.epoch);
      return sendOk(reply, 200, wireLease(await lease.renew(body.ttl_seconds)));
    },
  );

  app.post(
    '/api/v1/leases/:ns/:key/write',
    {
      schema: {
        tags,
        summary: 'Fenced write of the lease state (optionally only at a version: guarded read-modify-write)',
        params: nsKeyParams,
        body: leaseWriteBody,
        response: { 200: okEnvelope(leaseSchema, 'Written'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const params = request.params as NsKey;
      const body = request.body as { holder: string; epoch: number; state: JsonValue; if_version_matches?: string };
      const lease = await attached(node, params, body.holder, body.epoch);
      const view = await lease.updateState(body.state, { ifVersion: body.if_version_matches });
      return sendOk(reply, 200, wireLease(view));
    },
  );

  app.post(
    '/api/v1/leases/:ns/:key/release',
    {
      schema: {
        tags,
        summary: 'Release a lease, optionally recording a final state; the epoch keeps increasing',
        params: nsKeyParams,
        body: leaseReleaseBody,
        response: {
          200: okEnvelope(
            {
              type: 'object',
              properties: { namespace: { type: 'string' }, key: { type: 'string' }, released: { type: 'boolean' } },
            },
            'Released',
          ),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const params = request.params as NsKey;
      const body = request.body as { holder: string; epoch: number; state?: JsonValue };
      const lease = await attached(node, params, body.holder, body.epoch);
      await lease.release(body.state);
      return sendOk(reply, 200, { namespace: params.ns, key: params.key, released: true });
    },
  );
}

function claimResultSchema() {
  return {
    type: 'object',
    properties: { won: { type: 'boolean' }, value: {}, version: { type: 'string' }, entry: entrySchema },
  } as const;
}
