/**
 * HTTP's own answers for a request the API cannot take as sent: 405 with
 * `Allow` when the path exists under other methods (a 404 would say it does
 * not exist), and 415 when a route that takes a JSON body gets another
 * content type or none.
 */
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

/** Records every route's methods (call before routes are added); `allowed(path)` lists those that match a path. */
export function routeMethods(app: FastifyInstance): { allowed(path: string): string[] } {
  const routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  const byUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    let methods = byUrl.get(route.url);
    if (methods === undefined) {
      methods = new Set();
      byUrl.set(route.url, methods);
      // Route templates: `:name` is one path segment, `*` the rest.
      const source = route.url
        .split('/')
        .map((s) => (s.startsWith(':') ? '[^/]+' : s === '*' ? '.*' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      routes.push({ pattern: new RegExp(`^${source}$`), methods });
    }
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) methods.add(m);
  });
  return {
    allowed(path) {
      const out = new Set<string>();
      for (const r of routes) if (r.pattern.test(path)) for (const m of r.methods) out.add(m);
      return [...out].sort();
    },
  };
}

/** The 405 for a path that exists under other methods, or undefined (then it is a 404). */
export function methodNotAllowed(method: string, path: string, allowed: string[]): HttpError | undefined {
  if (allowed.length === 0 || allowed.includes(method)) return undefined;
  return new HttpError('method_not_allowed', `${method} is not allowed on ${path}: use ${allowed.join(', ')}`, {
    allow: allowed.join(', '),
  });
}

/** 415 unless a request to a route with a JSON body says `Content-Type: application/json`. */
export function requireJsonBody(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.schema?.body === undefined) return;
    const type = request.headers['content-type'];
    const mime = type?.split(';', 1)[0]?.trim().toLowerCase();
    if (mime === 'application/json') return;
    throw new HttpError(
      'unsupported_media_type',
      type === undefined
        ? 'send the body as JSON with Content-Type: application/json (no Content-Type was sent)'
        : `the body must be JSON sent with Content-Type: application/json, not '${type}'`,
    );
  });
}
