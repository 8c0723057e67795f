/**
 * The namespace-name rule, written once for every door and both kinds of
 * namespace: 1..128 letters, digits, ".", "_" and "-", starting with a letter
 * or digit. (coord takes the length bound from its limits; the characters are
 * the same.)
 */

export const MAX_NAMESPACE_LENGTH = 128;

const FIRST = '[A-Za-z0-9]';
const REST = '[A-Za-z0-9._-]';

/** The characters of a namespace name, as a pattern without the length bound (JSON Schema `pattern`). */
export const NAMESPACE_NAME_PATTERN = `^${FIRST}${REST}*$`;

/** A whole namespace name, the length bound included. */
export const NAMESPACE_NAME_RE = new RegExp(`^${FIRST}${REST}{0,${MAX_NAMESPACE_LENGTH - 1}}$`);

const CHARS_RE = new RegExp(NAMESPACE_NAME_PATTERN);

/** Whether `name` is a namespace name of at most `maxLength` characters. */
export function isNamespaceName(name: unknown, maxLength = MAX_NAMESPACE_LENGTH): name is string {
  return typeof name === 'string' && name.length >= 1 && name.length <= maxLength && CHARS_RE.test(name);
}
