/** The node's default logger, and the adapter that hands it to the network layer. */
import type { NetLogger } from '@parley/net';
import pino from 'pino';
import type { NodeLogger } from './context.js';

/** pino at `warn`, JSON lines on stderr (`PARLEY_LOG_LEVEL` overrides the level). */
export function defaultLogger(): NodeLogger {
  return pino({ name: 'parley', level: process.env.PARLEY_LOG_LEVEL ?? 'warn' }, pino.destination(2));
}

export function netLogger(logger: NodeLogger): NetLogger {
  return {
    debug: (message, fields) => logger.debug({ component: 'net', ...fields }, message),
    info: (message, fields) => logger.info({ component: 'net', ...fields }, message),
    warn: (message, fields) => logger.warn({ component: 'net', ...fields }, message),
  };
}
