/**
 * WebSocket upgrades of one HTTP server: every door (y-websocket at `/yjs`,
 * client replicas at `/sync`) registers here; the first that takes a request
 * answers it, and a path no door takes gets the HTTP error envelope's 404.
 */
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { HttpError, toErrorEnvelope } from './errors.js';

/** Takes an upgrade request if its path is the door's; returns false otherwise. */
export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

const handlers = new WeakMap<FastifyInstance, UpgradeHandler[]>();

/** Adds a door's upgrade handler to `app`'s HTTP server (the first one installs the listener). */
export function addUpgradeHandler(app: FastifyInstance, handler: UpgradeHandler): void {
  let list = handlers.get(app);
  if (!list) {
    const mine: UpgradeHandler[] = [];
    list = mine;
    handlers.set(app, mine);
    app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      for (const h of mine) if (h(request, socket, head)) return;
      rejectUpgrade(
        socket,
        new HttpError('not_found', `no WebSocket endpoint at ${(request.url ?? '').split('?', 1)[0]}`),
      );
    });
  }
  list.push(handler);
}

/** Answers a refused upgrade with the HTTP error envelope and closes the socket. */
export function rejectUpgrade(socket: Duplex, err: unknown): void {
  const { envelope, headers } = toErrorEnvelope(err, {});
  const body = JSON.stringify(envelope);
  const lines = [
    `HTTP/1.1 ${envelope.status} ${STATUS_CODES[envelope.status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
