/**
 * Schema validation failures in words a person reads: the field by its name
 * (no `body/` or `querystring/` schema paths), the bound with its unit
 * (`ttl_seconds must be at most 30 days (2592000)`), the allowed values, the
 * unknown field named with the fields that exist. Fastify calls
 * `validationError` for every failed request (server.ts), with Ajv's errors.
 */
import type { FastifySchemaValidationError } from 'fastify';

type AjvError = FastifySchemaValidationError & { parentSchema?: Record<string, unknown> };

const UNITS: Array<[number, string]> = [
  [86_400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
];

/** `2592000` → `30 days`; a number of seconds that is no whole unit stays `N seconds`. */
export function duration(seconds: number): string {
  for (const [size, unit] of UNITS) {
    if (seconds >= size && seconds % size === 0) {
      const n = seconds / size;
      return `${n} ${unit}${n === 1 ? '' : 's'}`;
    }
  }
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/** The field a failure is about: `ttl_seconds`, `value.items.3`, or the part of the request (`body`). */
function fieldOf(error: AjvError, dataVar: string): string {
  const path = (error.instancePath ?? '')
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (path.length > 0) return dataVar === 'params' && path[0] === 'ns' ? 'namespace' : path.join('.');
  return dataVar === 'body' ? 'the body' : dataVar === 'querystring' ? 'the query' : dataVar;
}

const PART: Record<string, string> = { body: 'body field', querystring: 'query parameter', params: 'path segment' };

function bound(field: string, n: number): string {
  return field.endsWith('_seconds') && n >= 60 && UNITS.some(([size]) => n % size === 0)
    ? `${duration(n)} (${n})`
    : `${n}`;
}

const list = (values: readonly unknown[]) =>
  values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ');

/** One Ajv error as a sentence. */
export function describeError(error: AjvError, dataVar: string): string {
  const field = fieldOf(error, dataVar);
  const p = error.params as Record<string, unknown>;
  const schema = error.parentSchema ?? {};
  switch (error.keyword) {
    case 'maximum':
      return `${field} must be at most ${bound(field, p.limit as number)}`;
    case 'minimum':
      return `${field} must be at least ${bound(field, p.limit as number)}`;
    case 'maxLength':
      return `${field} must be at most ${p.limit} characters`;
    case 'minLength':
      return p.limit === 1 ? `${field} must not be empty` : `${field} must be at least ${p.limit} characters`;
    case 'enum':
      return `${field} must be one of ${list(p.allowedValues as unknown[])}`;
    case 'type': {
      const type = String(p.type);
      if (field === 'the body') return 'the body must be a JSON object (sent with Content-Type: application/json)';
      return `${field} must be ${type === 'integer' ? 'an integer' : type === 'object' ? 'an object' : `a ${type}`}`;
    }
    case 'required':
      return `${field === 'the body' || field === 'the query' ? '' : `${field}: `}missing required ${PART[dataVar] ?? 'field'} '${p.missingProperty}'`;
    case 'additionalProperties': {
      const known = Object.keys((schema.properties as Record<string, unknown> | undefined) ?? {});
      const where = field === 'the body' || field === 'the query' ? '' : ` in ${field}`;
      return `unknown ${PART[dataVar] ?? 'field'} '${p.additionalProperty}'${where}${known.length > 0 ? ` (known: ${known.join(', ')})` : ''}`;
    }
    case 'pattern': {
      const digits = /^\^\[0-9\]\{1,(\d+)\}\$$/.exec(String(p.pattern));
      if (digits) return `${field} must be a whole number (digits only, at most ${digits[1]})`;
      if (typeof schema.description === 'string') return `${field} is not valid: ${schema.description}`;
      if (String(p.pattern).includes('\\u0000-\\u001f')) return `${field} must not hold control characters`;
      return `${field} must match ${p.pattern}`;
    }
    default:
      return `${field} ${error.message ?? 'is not valid'}`;
  }
}

/** The forms of a `oneOf` (`an integer or an object {namespace, key, fence}`), from its branches. */
function formsOf(branches: unknown): string | undefined {
  if (!Array.isArray(branches)) return undefined;
  const forms = branches.map((b: { type?: string; required?: string[] }) =>
    b.type === 'object' && Array.isArray(b.required)
      ? `an object {${b.required.join(', ')}}`
      : b.type === 'integer'
        ? 'an integer'
        : `a ${b.type ?? 'value'}`,
  );
  return forms.join(' or ');
}

/**
 * Fastify's schemaErrorFormatter: the first failure (validation stops at one) as an Error. A
 * value that fits none of a field's forms (`oneOf`) is described by its forms, not by the first
 * form's own complaint (an object fence is not "must be an integer").
 */
export function validationError(errors: FastifySchemaValidationError[], dataVar: string): Error {
  const alternatives = (errors as AjvError[]).find((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf');
  if (alternatives !== undefined) {
    const forms = formsOf((alternatives as { schema?: unknown }).schema);
    if (forms !== undefined) return new Error(`${fieldOf(alternatives, dataVar)} must be ${forms}`);
  }
  const first = errors[0];
  return new Error(first === undefined ? 'invalid request' : describeError(first as AjvError, dataVar));
}
