/**
 * Strong state (Raft): /api/v1/distributed-state/{ns}/{key} and the
 * namespace routes of seed 000 (list, watch, delete-namespace).
 */
import { KeyNotFoundError } from '@parley/interface';
import type { FenceToken, JsonValue } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import { sendOk } from '../envelope.js';
import { HttpError } from '../errors.js';
import {
  commonErrors,
  deleteNamespaceQuery,
  entryPageResponse,
  entrySchema,
  errorEnvelope,
  nsKeyParams,
  nsParams,
  okEnvelope,
  stateDeleteQuery,
  stateSetBody,
  strongListQuery,
  strongReadQuery,
} from '../schemas.js';
import { answerSession, sessionOf } from '../session-header.js';
import { wireEntry } from '../wire.js';
import { intInRange, type ListQueryText, listQueryOf, type StrongReadText, strongReadOf } from './query.js';
import type { RouteDeps } from './types.js';
import { watchStrong } from './watch.js';

const BASE = '/api/v1/distributed-state';
const tags = ['distributed-state'];

interface NsKey {
  ns: string;
  key: string;
}

type FenceBody = number | { namespace: string; key: string; fence: number };

interface SetBody {
  value: JsonValue;
  ttl_seconds?: number;
  if_not_exists?: boolean;
  if_version_matches?: string;
  fence?: FenceBody;
}

function fenceOf(params: NsKey, fence: FenceBody | undefined): FenceToken | undefined {
  if (fence === undefined) return undefined;
  if (typeof fence === 'number') return { namespace: params.ns, key: params.key, fence };
  return { namespace: fence.namespace, key: fence.key, fence: fence.fence };
}

export function registerStateRoutes(app: FastifyInstance, { node, ...deps }: RouteDeps): void {
  app.post(
    `${BASE}/:ns/:key`,
    {
      schema: {
        tags,
        summary: 'Create or replace an entry (create-only, compare-and-swap, fenced)',
        params: nsKeyParams,
        body: stateSetBody,
        response: {
          200: okEnvelope(entrySchema, 'Updated'),
          201: okEnvelope(entrySchema, 'Created'),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const params = request.params as NsKey;
      const body = request.body as SetBody;
      if (body.if_not_exists === true && body.if_version_matches !== undefined) {
        throw new HttpError('invalid_argument', 'if_not_exists and if_version_matches exclude each other');
      }
      const session = sessionOf(request);
      const result = await node.strong(params.ns).set(params.key, body.value, {
        ttl: body.ttl_seconds,
        ifNotExists: body.if_not_exists,
        ifVersion: body.if_version_matches,
        fence: fenceOf(params, body.fence),
        session,
      });
      answerSession(reply, session);
      const status = result.operation === 'created' ? 201 : 200;
      return sendOk(reply, status, wireEntry(result, result.operation));
    },
  );

  app.get(
    `${BASE}/:ns/:key`,
    {
      schema: {
        tags,
        summary:
          'Read an entry (linearizable; or consistency=serializable, or bounded by max_staleness_ms / max_lag_entries); 404 key_not_found when absent or expired',
        params: nsKeyParams,
        querystring: strongReadQuery,
        response: { 200: okEnvelope(entrySchema, 'The entry'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const session = sessionOf(request);
      const entry = await node.strong(ns).get(key, { ...strongReadOf(request.query as StrongReadText), session });
      answerSession(reply, session);
      if (entry === undefined) throw new KeyNotFoundError(ns, key);
      return sendOk(reply, 200, wireEntry(entry));
    },
  );

  app.delete(
    `${BASE}/:ns/:key`,
    {
      schema: {
        tags,
        summary: 'Delete an entry (optionally only at a version, or under a lock fence)',
        params: nsKeyParams,
        querystring: stateDeleteQuery,
        response: {
          200: okEnvelope(
            { type: 'object', properties: { namespace: { type: 'string' }, key: { type: 'string' }, deleted: {} } },
            'Deleted',
          ),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const params = request.params as NsKey;
      const query = request.query as {
        if_version_matches?: string;
        fence?: string;
        fence_namespace?: string;
        fence_key?: string;
      };
      if ((query.fence_namespace !== undefined || query.fence_key !== undefined) && query.fence === undefined) {
        throw new HttpError('invalid_argument', 'fence_namespace and fence_key need fence');
      }
      const fence =
        query.fence === undefined
          ? undefined
          : {
              namespace: query.fence_namespace ?? params.ns,
              key: query.fence_key ?? params.key,
              fence: intInRange('fence', query.fence, 1, Number.MAX_SAFE_INTEGER),
            };
      const session = sessionOf(request);
      const deleted = await node
        .strong(params.ns)
        .delete(params.key, { ifVersion: query.if_version_matches, fence, session });
      answerSession(reply, session);
      if (!deleted) throw new KeyNotFoundError(params.ns, params.key);
      return sendOk(reply, 200, { namespace: params.ns, key: params.key, deleted: true });
    },
  );

  app.get(
    `${BASE}/:ns`,
    {
      schema: {
        tags,
        summary:
          'List full entries (q, filter, sort_by, sort_order, limit, cursor; consistency, max_staleness_ms, max_lag_entries), or watch=true for server-sent events',
        params: nsParams,
        querystring: strongListQuery,
        response: {
          200: entryPageResponse(),
          ...commonErrors,
          410: errorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const { ns } = request.params as { ns: string };
      const query = request.query as ListQueryText & StrongReadText;
      if (query.watch === 'true') {
        if (
          query.consistency !== undefined ||
          query.max_staleness_ms !== undefined ||
          query.max_lag_entries !== undefined
        ) {
          throw new HttpError(
            'invalid_argument',
            'consistency, max_staleness_ms and max_lag_entries do not apply to watch=true',
          );
        }
        return watchStrong(request, reply, ns, query, { node, ...deps });
      }
      const session = sessionOf(request);
      const page = await node.strong(ns).list({ ...listQueryOf(query), ...strongReadOf(query), session });
      answerSession(reply, session);
      return sendOk(reply, 200, {
        namespace: ns,
        items: page.items.map((e) => wireEntry(e)),
        next_cursor: page.nextCursor,
      });
    },
  );

  app.delete(
    `${BASE}/:ns`,
    {
      schema: {
        tags,
        summary: 'Delete every entry of a namespace (or those matching pattern); requires confirm=true',
        params: nsParams,
        querystring: deleteNamespaceQuery,
        response: {
          200: okEnvelope(
            {
              type: 'object',
              properties: {
                deleted_count: { type: 'integer' },
                namespace: { type: 'string' },
                pattern_used: { type: 'string' },
              },
            },
            'Deleted',
          ),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const { ns } = request.params as { ns: string };
      const query = request.query as { confirm?: string; pattern?: string };
      if (query.confirm !== 'true') {
        throw new HttpError('invalid_argument', 'deleting a namespace cannot be undone: pass confirm=true');
      }
      const result = await node.strong(ns).deleteNamespace({ confirm: true, pattern: query.pattern });
      return sendOk(reply, 200, result);
    },
  );
}
