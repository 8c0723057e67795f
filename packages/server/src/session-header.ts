/**
 * The session door of the HTTP API (docs/sessions.md): a request that carries
 * `Parley-Session` (its value a token, empty for a new session) is a call with
 * that session; the answer carries the session's new token in the same header.
 * A token that does not decode is 400 `invalid_argument` before anything is
 * read or written. A request without the header has no session.
 */
import { Session } from '@parley/node';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The header, in and out (Node lowercases request header names). */
export const SESSION_HEADER = 'parley-session';

/** The request's session, or undefined without the header; throws `invalid_argument` for a bad token. */
export function sessionOf(request: FastifyRequest): Session | undefined {
  const raw = request.headers[SESSION_HEADER];
  if (raw === undefined) return undefined;
  // Node joins repeated headers with ", ", which no token contains: it fails to decode as one.
  return Session.from(Array.isArray(raw) ? raw.join(', ') : raw);
}

/**
 * Puts the session's token on the answer: called once the node call returned (what it wrote or
 * saw counts, also for a read that answers 404 key_not_found), never after it failed.
 */
export function answerSession(reply: FastifyReply, session: Session | undefined): void {
  if (session !== undefined) reply.header(SESSION_HEADER, session.token);
}
