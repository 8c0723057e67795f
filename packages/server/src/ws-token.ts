/**
 * Where a WebSocket door's client (a y-websocket provider, a browser replica
 * on the sync door) sends its bearer token from. A browser's WebSocket
 * cannot set headers, so besides `Authorization: Bearer …` (Node clients) the
 * token may come as a subprotocol `parley.bearer.<base64url(token)>` (offered
 * beside `parley`, which the server selects) or as the `token` query
 * parameter (`WebsocketProvider`'s `params: { token }`). The first present wins.
 */
import type { IncomingMessage } from 'node:http';

export const SUBPROTOCOL = 'parley';
const BEARER_PREFIX = `${SUBPROTOCOL}.bearer.`;

/** The token as an Authorization header value for the HTTP server's checker, or undefined if none was sent. */
export function bearerHeaderOf(request: IncomingMessage, query: URLSearchParams): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined && header.length > 0) return header;
  const offered = request.headers['sec-websocket-protocol'];
  if (typeof offered === 'string') {
    for (const p of offered.split(',')) {
      const proto = p.trim();
      if (proto.startsWith(BEARER_PREFIX)) {
        const token = Buffer.from(proto.slice(BEARER_PREFIX.length), 'base64url').toString('utf8');
        return `Bearer ${token}`;
      }
    }
  }
  const token = query.get('token');
  return token === null || token.length === 0 ? undefined : `Bearer ${token}`;
}

/**
 * The subprotocol the server answers with: `parley` when offered, else the first
 * one offered (a browser fails a handshake that ignores the protocols it asked for).
 */
export function selectSubprotocol(offered: ReadonlySet<string>): string | false {
  if (offered.has(SUBPROTOCOL)) return SUBPROTOCOL;
  for (const p of offered) return p;
  return false;
}
