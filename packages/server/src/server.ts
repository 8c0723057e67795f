/**
 * createServer(): the HTTP door of a Parley node. Fastify with route schemas
 * (validation and /openapi.json), the seed-000 envelope, bearer-token auth,
 * Prometheus metrics and server-sent-event watches.
 */
import swagger from '@fastify/swagger';
import type { ParleyNode } from '@parley/node';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { bearerChecker, checkAllowedHosts, checkBind, PUBLIC_PATHS, rebindingGuard } from './auth.js';
import { HttpError, type RequestTarget, toErrorEnvelope } from './errors.js';
import { registerJsonBodyParser } from './json-body.js';
import { methodNotAllowed, requireJsonBody, routeMethods } from './method-and-media.js';
import { ServerMetrics } from './metrics.js';
import { registerCoordinationRoutes } from './routes/coordination.js';
import { registerLockRoutes } from './routes/locks.js';
import { registerOpsRoutes } from './routes/ops.js';
import { registerQueueRoutes } from './routes/queue.js';
import { registerReplicatedRoutes } from './routes/replicated.js';
import { registerStateRoutes } from './routes/state.js';
import type { RouteDeps } from './routes/types.js';
import { DEFAULT_SSE_LIMITS, type SseLimits, type SseStream } from './sse.js';
import { attachSyncDoor } from './sync/door.js';
import type { SyncDoorOptions } from './sync/options.js';
import { validationError } from './validation-messages.js';
import { attachYjsDoor } from './yjs/door.js';
import type { YjsDoorOptions } from './yjs/options.js';

/** The value limit is 1 MiB of canonical JSON; the body may wrap it with a few fields and escapes. */
export const DEFAULT_BODY_LIMIT_BYTES = 1_048_576 + 64 * 1024;
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 4000;
export const DEFAULT_MAX_WATCH_STREAMS = 256;

export interface ServerOptions {
  node: ParleyNode;
  /** Default 127.0.0.1. A non-loopback host requires `token`. */
  host?: string;
  /** Default 4000; 0 picks a free port. */
  port?: number;
  /** Bearer token every API call must present (the CLI reads PARLEY_API_TOKEN). */
  token?: string;
  /**
   * Serve HTTPS (and wss:// for the y-websocket door) with this certificate and key (PEM text or
   * bytes; `cert` may hold the chain). Without it, plain HTTP. `parley serve --tls-cert --tls-key`.
   */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * Without a token, the server answers only requests whose Host (and Origin, when
   * sent) is a loopback name: localhost, 127.0.0.0/8 or [::1], any port. These host
   * names (no port) are accepted too, e.g. a name in /etc/hosts that points at
   * 127.0.0.1. Ignored with a token.
   */
  allowedHosts?: readonly string[];
  bodyLimitBytes?: number;
  maxWatchStreams?: number;
  sse?: Partial<SseLimits>;
  /** Process metrics (CPU, memory, event loop) beside the node's; default true. */
  defaultMetrics?: boolean;
  /** The y-websocket door at ws://host:port/yjs (docs/yjs.md); `false` turns it off. */
  yjs?: YjsDoorOptions | false;
  /** The sync door for browser replicas at ws://host:port/sync/{namespace} (docs/browser.md); `false` turns it off. */
  sync?: SyncDoorOptions | false;
  /** Fastify's logger option; default off. */
  logger?: boolean;
  /** Called with any error that is not a client mistake (answered 500 internal); default: printed on stderr. */
  onUnexpectedError?: (err: unknown, route: string) => void;
}

export interface ParleyServer {
  readonly app: FastifyInstance;
  readonly metrics: ServerMetrics;
  /** Starts listening; resolves to the base URL (http://host:port, https:// with `tls`). */
  listen(): Promise<string>;
  /** Ends watch streams and stops the server. Does not close the node. */
  close(): Promise<void>;
}

export async function createServer(options: ServerOptions): Promise<ParleyServer> {
  const host = options.host ?? DEFAULT_HOST;
  const port = options.port ?? DEFAULT_PORT;
  checkBind(host, options.token);
  const allowedHosts = checkAllowedHosts(options.allowedHosts ?? []);
  const onUnexpectedError =
    options.onUnexpectedError ??
    ((err: unknown, route: string) =>
      process.stderr.write(`parley server: unexpected error in ${route}: ${(err as Error)?.stack ?? String(err)}\n`));

  const app = Fastify({
    // HTTPS is the same server over TLS: node's https.Server is an http.Server for every route and hook.
    ...(options.tls === undefined ? {} : { https: { cert: options.tls.cert, key: options.tls.key } }),
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    // Request bodies are checked as sent: no coercion, no silently dropped fields.
    // `verbose` gives each error its schema, so a message can list the fields that exist.
    ajv: {
      customOptions: {
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: false,
        allErrors: false,
        verbose: true,
      },
    },
    schemaErrorFormatter: validationError,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 4096, ignoreTrailingSlash: false },
    // Errors raised before routing (a malformed URL, say) get the envelope too.
    frameworkErrors: (err, _request, reply) => {
      const { envelope, headers } = toErrorEnvelope(err, {});
      const raw = reply as unknown as FastifyReply;
      void raw.code(envelope.status).headers(headers).send(envelope);
    },
  });
  // Responses are plain JSON.stringify: the response schemas document, they never strip or fail.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  registerJsonBodyParser(app); // `__proto__` is an ordinary key (json-body.ts)

  const methods = routeMethods(app); // before any route, to see them all
  const metrics = new ServerMetrics(options.node.events, {
    peerId: options.node.peerId,
    defaultMetrics: options.defaultMetrics,
    health: () => options.node.health(),
  });
  const streams = new Set<SseStream>();
  const deps: RouteDeps = {
    node: options.node,
    metrics,
    streams,
    maxWatchStreams: options.maxWatchStreams ?? DEFAULT_MAX_WATCH_STREAMS,
    sse: { ...DEFAULT_SSE_LIMITS, ...options.sse },
  };

  const security: Array<Record<string, string[]>> =
    options.token === undefined ? [{}, { bearer: [] }] : [{ bearer: [] }];
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Parley HTTP API',
        version: '0.1.0',
        description:
          'Strong (Raft) state, locks, claims and leases, and replicated (CRDT) entries of a Parley node. ' +
          'Every response is an envelope: {status, msg, data} on success, {status, msg, error} on failure.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      // Every route but the public probes takes the bearer token, so generated clients send it. A
      // token-less server needs none (`{}`), and ignores one: a client built from its document works on both.
      security,
    },
  });
  app.addHook('onRoute', (route) => {
    // On each operation too: some generators read only an operation's own `security`.
    const own = PUBLIC_PATHS.has(route.url) ? [] : security;
    route.schema = { ...route.schema, security: own } as typeof route.schema;
  });

  if (options.token === undefined) {
    // Token-less: only loopback names and origins (a DNS-rebinding page sends its own).
    const guard = rebindingGuard(allowedHosts);
    app.addHook('onRequest', async (request) => guard(request.headers.host, request.headers.origin));
  } else {
    const check = bearerChecker(options.token);
    app.addHook('onRequest', async (request) => {
      const path = request.url.split('?', 1)[0]!;
      if (!PUBLIC_PATHS.has(path)) check(request.headers.authorization);
    });
  }

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });

  app.setErrorHandler(async (err, request, reply) => {
    const params = (request.params ?? {}) as RequestTarget & { ns?: string };
    const target: RequestTarget = { namespace: params.ns, key: params.key };
    const { envelope, headers, unexpected } = toErrorEnvelope(err, target);
    if (unexpected) onUnexpectedError(err, `${request.method} ${request.routeOptions.url ?? request.url}`);
    metrics.observeError(envelope.error, request.routeOptions.url ?? 'unmatched');
    return reply.code(envelope.status).headers(headers).send(envelope);
  });

  app.setNotFoundHandler(async (request) => {
    const path = request.url.split('?', 1)[0]!;
    throw (
      methodNotAllowed(request.method, path, methods.allowed(path)) ??
      new HttpError('not_found', `no route for ${request.method} ${path}`)
    );
  });
  requireJsonBody(app);

  registerStateRoutes(app, deps);
  registerLockRoutes(app, deps);
  registerCoordinationRoutes(app, deps);
  registerQueueRoutes(app, deps);
  registerReplicatedRoutes(app, deps);
  registerOpsRoutes(app, deps);
  if (options.yjs !== false)
    attachYjsDoor(app, { ...options, allowedHosts, onUnexpectedError, registry: metrics.registry }, options.yjs);
  if (options.sync !== false)
    attachSyncDoor(app, { ...options, allowedHosts, onUnexpectedError, registry: metrics.registry }, options.sync);

  app.addHook('preClose', async () => {
    for (const stream of [...streams]) stream.close();
  });

  return {
    app,
    metrics,
    async listen() {
      await app.listen({ host, port });
      const address = app.server.address();
      const actualPort = typeof address === 'object' && address !== null ? address.port : port;
      const shownHost = host.includes(':') ? `[${host}]` : host;
      return `${options.tls === undefined ? 'http' : 'https'}://${shownHost}:${actualPort}`;
    },
    async close() {
      await app.close();
      metrics.close();
    },
  };
}
