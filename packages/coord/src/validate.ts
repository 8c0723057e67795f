/** Argument checks shared by the state machine: every failure is an InvalidArgumentError. */
import { InvalidArgumentError, isNamespaceName, ValueTooLargeError } from '@parley/interface';
import { canonicalJson, deepFreeze, type JsonValue, utf8Length } from './json.js';
import type { CoordLimits } from './types.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point.
const CONTROL_RE = /[\u0000-\u001f\u007f]/;

export function checkNamespace(limits: CoordLimits, namespace: unknown): string {
  if (typeof namespace !== 'string' || namespace.length === 0 || namespace.length > limits.maxNamespaceLength) {
    throw new InvalidArgumentError(`namespace must be a string of 1..${limits.maxNamespaceLength} characters`);
  }
  if (!isNamespaceName(namespace, limits.maxNamespaceLength)) {
    throw new InvalidArgumentError('namespace may hold only letters, digits, ".", "_" and "-", starting alphanumeric', {
      namespace,
    });
  }
  return namespace;
}

export function checkKey(limits: CoordLimits, key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > limits.maxKeyLength) {
    throw new InvalidArgumentError(`key must be a string of 1..${limits.maxKeyLength} characters`);
  }
  if (CONTROL_RE.test(key)) throw new InvalidArgumentError('key must not contain control characters', { key });
  return key;
}

/** Holder and owner identities. */
export function checkId(limits: CoordLimits, what: string, id: unknown): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > limits.maxIdLength) {
    throw new InvalidArgumentError(`${what} must be a string of 1..${limits.maxIdLength} characters`);
  }
  if (CONTROL_RE.test(id)) throw new InvalidArgumentError(`${what} must not contain control characters`);
  return id;
}

export function checkIntInRange(what: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${what} must be an integer in ${min}..${max}`, { [what]: value ?? null });
  }
  return value;
}

export function checkOptionalBool(what: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${what} must be a boolean`);
  return value;
}

export function checkOptionalString(what: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidArgumentError(`${what} must be a string`);
  return value;
}

/**
 * Validates a JSON value against a size bound and returns the state machine's
 * own copy: canonical key order, deeply frozen (so neither the proposer nor a
 * reader of a result can change replicated state by mutating an object), and
 * its canonical size in bytes.
 */
export function checkValue(value: unknown, limitBytes: number): { value: JsonValue; bytes: number } {
  if (value === undefined) throw new InvalidArgumentError('value is required');
  const text = canonicalJson(value);
  const bytes = utf8Length(text);
  if (bytes > limitBytes) throw new ValueTooLargeError(bytes, limitBytes);
  return { value: deepFreeze(JSON.parse(text) as JsonValue), bytes };
}

export function checkFenceToken(value: unknown): number {
  return checkIntInRange('fence', value, 1, Number.MAX_SAFE_INTEGER);
}
