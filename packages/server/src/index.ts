/**
 * @parley/server — the HTTP door of a Parley node: the seed-000 envelope over
 * strong state, locks, claims, leases and replicated entries; Prometheus
 * metrics; an OpenAPI document generated from the route schemas.
 *
 * @example
 * ```ts
 * import { createNode } from '@parley/node';
 * import { createServer } from '@parley/server';
 *
 * const node = await createNode({ dataDir: './.parley' });
 * const server = await createServer({ node, port: 4000, token: process.env.PARLEY_API_TOKEN });
 * console.log(`serving on ${await server.listen()}`);
 * // curl -X POST -H 'Content-Type: application/json' -d '{"value": {"phase": "deploying"}}' \
 * //   http://127.0.0.1:4000/api/v1/distributed-state/deploy/status
 * ```
 */
export { checkAllowedHosts, checkBind, isLoopbackHost } from './auth.js';
export { type ErrorEnvelope, HTTP_ERROR_STATUS, HttpError, type HttpErrorCode, toErrorEnvelope } from './errors.js';
export { ServerMetrics } from './metrics.js';
export {
  createServer,
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_HOST,
  DEFAULT_MAX_WATCH_STREAMS,
  DEFAULT_PORT,
  type ParleyServer,
  type ServerOptions,
} from './server.js';
export { attachSyncDoor, SyncDoor, type SyncDoorDeps, type SyncDoorStats } from './sync/door.js';
export type { SyncDoorOptions } from './sync/options.js';
export { isoMicros } from './time.js';
export { attachYjsDoor, YjsDoor, type YjsDoorDeps, type YjsDoorStats } from './yjs/door.js';
export type { YjsDoorOptions } from './yjs/options.js';
