/**
 * Key globs for deleteNamespace: `*` matches any run of characters (including
 * none and including `/`), `?` matches exactly one character, `\` makes the
 * next character literal. Everything else matches itself. Matching is linear
 * backtracking over at most one `*` at a time, so it is O(key × pattern) in the
 * worst case and never exponential.
 */
import { InvalidArgumentError } from '@parley/interface';

export const MAX_GLOB_LENGTH = 256;

type Token = { kind: 'star' } | { kind: 'any' } | { kind: 'char'; ch: string };

export function compileGlob(pattern: string): Token[] {
  if (pattern.length === 0 || pattern.length > MAX_GLOB_LENGTH) {
    throw new InvalidArgumentError(`pattern must be 1..${MAX_GLOB_LENGTH} characters`, { pattern });
  }
  const tokens: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === '\\') {
      if (i + 1 >= pattern.length) throw new InvalidArgumentError('pattern ends with a lone backslash', { pattern });
      tokens.push({ kind: 'char', ch: pattern[++i] as string });
    } else if (ch === '*') {
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (ch === '?') tokens.push({ kind: 'any' });
    else tokens.push({ kind: 'char', ch });
  }
  return tokens;
}

export function globMatch(tokens: readonly Token[], text: string): boolean {
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    const tok = tokens[p];
    if (tok !== undefined && (tok.kind === 'any' || (tok.kind === 'char' && tok.ch === text[t]))) {
      t++;
      p++;
    } else if (tok?.kind === 'star') {
      starP = p++;
      starT = t;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else return false;
  }
  while (tokens[p]?.kind === 'star') p++;
  return p === tokens.length;
}
