/**
 * Eventual (CRDT) entries: /api/v1/replicated/{ns}/{key}. Accepted locally
 * even offline, spread by gossip; `consistency=majority` also waits for a
 * majority of known replicas. Same envelope and entry shape as the strong side.
 */
import { KeyNotFoundError } from '@parley/interface';
import type { Consistency, EventualChange, JsonValue } from '@parley/node';
import type { FastifyInstance } from 'fastify';
import { sendOk } from '../envelope.js';
import { HttpError } from '../errors.js';
import {
  commonErrors,
  entryPageResponse,
  entrySchema,
  listQuery,
  nsKeyParams,
  nsParams,
  okEnvelope,
  replicatedIncrementBody,
  replicatedReadQuery,
  replicatedSetBody,
} from '../schemas.js';
import { answerSession, sessionOf } from '../session-header.js';
import { wireEntry } from '../wire.js';
import { checkWatchQuery, type ListQueryText, listQueryOf } from './query.js';
import type { RouteDeps } from './types.js';
import { openWatch } from './watch.js';

const BASE = '/api/v1/replicated';
const tags = ['replicated'];

interface NsKey {
  ns: string;
  key: string;
}

interface Majority {
  consistency?: Consistency;
  replicas?: number;
}

function readQuery(query: unknown): Majority {
  const q = query as { consistency?: Consistency; replicas?: string };
  return { consistency: q.consistency, replicas: q.replicas === undefined ? undefined : Number(q.replicas) };
}

/** The options a request's `consistency` and `replicas` give (the node checks `replicas`' range). */
function majorityOf(m: Majority): { consistency?: Consistency; replicas?: number } {
  return m.replicas === undefined
    ? { consistency: m.consistency }
    : { consistency: m.consistency, replicas: m.replicas };
}

export function registerReplicatedRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { node } = deps;

  app.post(
    `${BASE}/:ns/:key`,
    {
      schema: {
        tags,
        summary: 'Set a last-writer-wins entry (201 when this replica had no live entry)',
        params: nsKeyParams,
        body: replicatedSetBody,
        response: {
          200: okEnvelope(entrySchema, 'Updated'),
          201: okEnvelope(entrySchema, 'Created'),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const body = request.body as Majority & { value: JsonValue; ttl_seconds?: number };
      const session = sessionOf(request);
      const entry = await node
        .eventual(ns)
        .set(key, body.value, { ttl: body.ttl_seconds, ...majorityOf(body), session });
      answerSession(reply, session);
      return sendOk(reply, entry.operation === 'created' ? 201 : 200, wireEntry(entry, entry.operation));
    },
  );

  app.post(
    `${BASE}/:ns/:key/increment`,
    {
      schema: {
        tags,
        summary: 'Add to a PN-counter entry (by defaults to 1; negative decrements)',
        params: nsKeyParams,
        body: replicatedIncrementBody,
        response: { 200: okEnvelope(entrySchema, 'The counter after the change'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const body = (request.body ?? {}) as Majority & { by?: number; ttl_seconds?: number };
      const session = sessionOf(request);
      const entry = await node
        .eventual(ns)
        .increment(key, body.by ?? 1, { ttl: body.ttl_seconds, ...majorityOf(body), session });
      answerSession(reply, session);
      return sendOk(reply, 200, wireEntry(entry));
    },
  );

  app.get(
    `${BASE}/:ns/:key`,
    {
      schema: {
        tags,
        summary: "Read this replica's entry (consistency=majority merges a majority's)",
        params: nsKeyParams,
        querystring: replicatedReadQuery,
        response: { 200: okEnvelope(entrySchema, 'The entry'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { ns, key } = request.params as NsKey;
      const session = sessionOf(request);
      const entry = await node.eventual(ns).get(key, { ...majorityOf(readQuery(request.query)), session });
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
        summary: 'Delete an entry this replica holds (a tombstone that replicates); 404 writes nothing',
        params: nsKeyParams,
        querystring: replicatedReadQuery,
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
      const { ns, key } = request.params as NsKey;
      const session = sessionOf(request);
      const deleted = await node.eventual(ns).delete(key, { ...majorityOf(readQuery(request.query)), session });
      answerSession(reply, session);
      if (!deleted) throw new KeyNotFoundError(ns, key);
      return sendOk(reply, 200, { namespace: ns, key, deleted: true });
    },
  );

  app.get(
    `${BASE}/:ns`,
    {
      schema: {
        tags,
        summary: "List this replica's live entries, or watch=true for server-sent events of every change",
        params: nsParams,
        querystring: listQuery,
        response: {
          200: entryPageResponse(),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const { ns } = request.params as { ns: string };
      const query = request.query as ListQueryText;
      if (query.watch === 'true') {
        checkWatchQuery(query);
        if (query.from_revision !== undefined) {
          throw new HttpError('invalid_argument', 'replicated watches have no revisions: list, then watch');
        }
        return openWatch(request, reply, deps, (emit) =>
          node.eventual(ns).watch({ prefix: query.prefix }, (change: EventualChange) =>
            emit(change.type, {
              namespace: change.namespace,
              key: change.key,
              type: change.type,
              origin: change.origin,
              entry: change.entry === undefined ? null : wireEntry(change.entry),
            }),
          ),
        );
      }
      const page = await node.eventual(ns).list(listQueryOf(query));
      return sendOk(reply, 200, {
        namespace: ns,
        items: page.items.map((e) => wireEntry(e)),
        next_cursor: page.nextCursor,
      });
    },
  );
}
