/**
 * `list`'s metadata filter. A checkpoint head keeps its metadata's top-level
 * scalar fields (`mf`: names of the filter grammar's path segments, strings of
 * at most 256 characters) so the store filters on them; a filter value that is
 * not such a scalar is checked here, on the decoded metadata, by deep equality.
 */
import type { JsonValue } from '@parley/node';
import { literal } from './keys.js';

const FIELD_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const MAX_STRING = 256;

type Scalar = string | number | boolean | null;

function eligible(key: string, value: unknown): value is Scalar {
  if (!FIELD_RE.test(key) || key === '__proto__') return false;
  if (value === null || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  return typeof value === 'string' && value.length <= MAX_STRING;
}

/** The scalar fields of a checkpoint's metadata the store can filter on. */
export function metadataFields(metadata: unknown): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  if (metadata === null || typeof metadata !== 'object') return out;
  for (const [k, v] of Object.entries(metadata)) if (eligible(k, v)) out[k] = v;
  return out;
}

/**
 * Conditions for the store, and whether they are the whole filter: a scalar
 * filter value matches exactly when the head's `mf` field equals it; any other
 * value is checked after decoding.
 */
export function metadataFilter(filter: Record<string, unknown> | undefined): {
  conditions: string[];
  complete: boolean;
} {
  const conditions: string[] = [];
  let complete = true;
  for (const [k, v] of Object.entries(filter ?? {})) {
    if (eligible(k, v)) conditions.push(`mf.${k} = ${literal(v)}`);
    else complete = false;
  }
  return { conditions, complete };
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as never)[k], (b as never)[k]));
}

export function metadataMatches(metadata: unknown, filter: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  const m = (metadata ?? {}) as Record<string, unknown>;
  return Object.entries(filter).every(([k, v]) => deepEqual(m[k], v));
}
