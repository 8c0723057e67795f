/**
 * `search` filters of LangGraph's store (`{ field: value }`, or operators
 * `$eq $ne $gt $gte $lt $lte $in $nin $exists`) over an item's top-level value
 * fields, with the semantics of Parley's filter grammar: `=` is JSON equality,
 * order comparisons hold only between two numbers or two strings, a missing
 * field equals nothing. What the grammar can say is sent to the store with the
 * namespace prefix; every filter is also checked here, so the store's part is
 * only a narrowing.
 */
import { InvalidArgumentError } from '@parley/interface';
import { literal } from './keys.js';

const FIELD_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const OPS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists']);
const ORDER: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

type Scalar = string | number | boolean | null;

function isScalar(v: unknown): v is Scalar {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

function isOperators(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

export function checkFilter(filter: Record<string, unknown> | undefined): void {
  if (filter === undefined) return;
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    throw new InvalidArgumentError('search filter must be an object');
  }
  for (const [field, cond] of Object.entries(filter)) {
    if (!isOperators(cond)) continue;
    for (const [op, arg] of Object.entries(cond)) {
      if (!OPS.has(op)) throw new InvalidArgumentError(`unknown filter operator '${op}' on '${field}'`);
      if ((op === '$in' || op === '$nin') && !Array.isArray(arg)) {
        throw new InvalidArgumentError(`${op} on '${field}' needs an array`);
      }
      if (op === '$exists' && typeof arg !== 'boolean') {
        throw new InvalidArgumentError(`$exists on '${field}' needs true or false`);
      }
    }
  }
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as never)[k], (b as never)[k]));
}

function ordered(a: unknown, op: string, b: unknown): boolean {
  const same = (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
  if (!same) return false;
  const x = a as number | string;
  const y = b as number | string;
  if (op === '$gt') return x > y;
  if (op === '$gte') return x >= y;
  if (op === '$lt') return x < y;
  return x <= y;
}

function holds(value: Record<string, unknown>, field: string, cond: unknown): boolean {
  const present = Object.hasOwn(value, field);
  const v = present ? value[field] : undefined;
  if (!isOperators(cond)) return present && jsonEqual(v, cond);
  return Object.entries(cond).every(([op, arg]) => {
    switch (op) {
      case '$eq':
        return present && jsonEqual(v, arg);
      case '$ne':
        return !(present && jsonEqual(v, arg));
      case '$in':
        return present && (arg as unknown[]).some((a) => jsonEqual(v, a));
      case '$nin':
        return !(present && (arg as unknown[]).some((a) => jsonEqual(v, a)));
      case '$exists':
        return present === arg;
      default:
        return present && ordered(v, op, arg);
    }
  });
}

/** Whether an item's value passes the filter. */
export function matches(value: unknown, filter: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  const v = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  return Object.entries(filter).every(([field, cond]) => holds(v, field, cond));
}

/**
 * The part of the filter Parley's grammar expresses, as conditions on
 * `value.<field>`, within `budget` comparisons and `chars` characters.
 */
export function pushDown(filter: Record<string, unknown> | undefined, budget: number, chars: number): string[] {
  const out: string[] = [];
  let used = 0;
  let length = 0;
  const add = (expr: string, comparisons: number) => {
    if (used + comparisons > budget || length + expr.length + 5 > chars) return;
    out.push(expr);
    used += comparisons;
    length += expr.length + 5;
  };
  for (const [field, cond] of Object.entries(filter ?? {})) {
    if (!FIELD_RE.test(field)) continue;
    const path = `value.${field}`;
    if (!isOperators(cond)) {
      if (isScalar(cond)) add(`${path} = ${literal(cond)}`, 1);
      continue;
    }
    for (const [op, arg] of Object.entries(cond)) {
      if (op === '$eq' && isScalar(arg)) add(`${path} = ${literal(arg)}`, 1);
      else if (op === '$ne' && isScalar(arg)) add(`not ${path} = ${literal(arg)}`, 1);
      else if (op in ORDER && (typeof arg === 'string' || (typeof arg === 'number' && Number.isFinite(arg)))) {
        add(`${path} ${ORDER[op]} ${literal(arg)}`, 1);
      } else if (op === '$exists') add(arg ? `${path} exists` : `not ${path} exists`, 1);
      else if (op === '$in' && Array.isArray(arg) && arg.length > 0 && arg.every(isScalar)) {
        add(`(${arg.map((a) => `${path} = ${literal(a)}`).join(' or ')})`, arg.length);
      } else if (op === '$nin' && Array.isArray(arg) && arg.length > 0 && arg.every(isScalar)) {
        add(`not (${arg.map((a) => `${path} = ${literal(a)}`).join(' or ')})`, arg.length);
      }
    }
  }
  return out;
}
