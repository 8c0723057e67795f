/**
 * The JSON body parser. Values are stored exactly as sent (docs/guarantees.md):
 * an object key named `__proto__` or `constructor` is an ordinary key. Fastify's
 * default parser refuses such bodies outright (secure-json-parse, "Body is not
 * valid JSON"), so this one replaces it.
 *
 * `JSON.parse` never pollutes a prototype: it defines a `__proto__` key as an
 * own data property of a plain object (`Object.getPrototypeOf` stays
 * `Object.prototype`). What could pollute is later code that assigns such keys
 * (`target[key] = …`, `Object.assign`, a recursive merge); no code reached by a
 * request body does. Bodies are validated against the route's schema (Ajv,
 * which reads own keys and mutates nothing), and values are copied by coord
 * and crdt with `defineProperty` (their `__proto__` tests). The regression
 * tests of this file check both: the key is kept, and no prototype changes.
 */
import type { FastifyInstance } from 'fastify';

/** A body parse failure: 400 `invalid_argument` (errors.ts maps every 4xx framework error). */
class BodyError extends Error {
  readonly statusCode = 400;
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** Parses `text` as a request body: plain JSON.parse (own `__proto__` keys kept), a leading BOM dropped. */
export function parseJsonBody(text: string): unknown {
  const t = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (t.trim() === '') {
    throw new BodyError(
      "Body cannot be empty when content-type is set to 'application/json'",
      'PARLEY_EMPTY_JSON_BODY',
    );
  }
  try {
    return JSON.parse(t);
  } catch {
    throw new BodyError(
      "Body is not valid JSON but content-type is set to 'application/json'",
      'PARLEY_INVALID_JSON_BODY',
    );
  }
}

/** Replaces fastify's application/json parser with parseJsonBody (the body limit still applies). */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
