/** Operations: liveness, readiness, metrics, the OpenAPI document and node status. */
import type { ClusterStatus } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import { sendOk } from '../envelope.js';
import { HttpError } from '../errors.js';
import { commonErrors, okEnvelope } from '../schemas.js';
import { isoMicros } from '../time.js';
import type { RouteDeps } from './types.js';

const tags = ['operations'];
const probe = okEnvelope({ type: 'object', properties: { status: { type: 'string' } } }, 'Probe result');

export function registerOpsRoutes(app: FastifyInstance, { node, metrics }: RouteDeps): void {
  app.get(
    '/healthz',
    { schema: { tags, summary: 'Liveness: the process serves HTTP', response: { 200: probe } } },
    (_req, reply) => sendOk(reply, 200, { status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags,
        summary: "Readiness: the node's disk takes writes and the strong side knows a leader (O(1))",
        response: { 200: probe, 503: commonErrors[503] },
      },
    },
    async (_req, reply) => {
      // Cheap by design (a probe runs every few seconds): no walk over the data, no I/O of this node.
      const fault = node.health().faults[0];
      if (fault !== undefined) {
        throw new HttpError('unavailable', `storage fault: store ${fault.store}: ${fault.code}: ${fault.message}`);
      }
      let cluster: ClusterStatus;
      try {
        cluster = await node.cluster.status();
      } catch (err) {
        throw new HttpError('unavailable', `strong side not ready: ${(err as Error).message}`);
      }
      if (cluster.leader === null)
        throw new HttpError('unavailable', 'no Raft leader known yet', { 'retry-after': '1' });
      return sendOk(reply, 200, { status: 'ready' });
    },
  );

  app.get(
    '/metrics',
    { schema: { tags, summary: 'Prometheus metrics (text exposition format)', produces: ['text/plain'] } },
    async (_req, reply) => {
      const { contentType, body } = await metrics.render();
      return reply
        .type(contentType)
        .serializer((s: string) => s)
        .send(body);
    },
  );

  app.get('/openapi.json', { schema: { tags, summary: 'This API as an OpenAPI 3 document', hide: true } }, async () =>
    app.swagger(),
  );

  app.get(
    '/api/v1/status',
    {
      schema: {
        tags,
        summary: 'Node and cluster status: peers, namespaces, Raft leader, term and indexes',
        response: {
          200: okEnvelope(
            { type: 'object', properties: { node: { type: 'object' }, cluster: { type: 'object', nullable: true } } },
            'Status',
          ),
          ...commonErrors,
        },
      },
    },
    async (_req, reply) => {
      const status = await node.status();
      let cluster: ClusterStatus | null = null;
      try {
        cluster = await node.cluster.status();
      } catch {
        cluster = null;
      }
      // Times on the wire are ISO strings, as in every other answer of this API.
      const namespaces = status.namespaces.map((n) => ({
        ...n,
        lastAntiEntropyAt: n.lastAntiEntropyAt === null ? null : isoMicros(n.lastAntiEntropyAt),
      }));
      return sendOk(reply, 200, { node: { ...status, namespaces }, cluster });
    },
  );
}
