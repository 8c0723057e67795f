/**
 * How fresh a strong read must be, one rule for every door (docs/guarantees.md,
 * "Strong reads"): `linearizable` (the default: the leader confirms its
 * leadership, ReadIndex), `serializable` (the member asked answers from its
 * applied state, no leader contact) or `bounded` (a member answers from its
 * applied state only while it can prove it within `maxStalenessMs` and/or
 * `maxLagEntries` of the leader). The TypeScript options, the HTTP query
 * parameters, the CLI flags and the MCP arguments all reduce to this shape
 * through `readConsistency`.
 */
import { InvalidArgumentError } from '@parley/interface';

/** A read's freshness, normalized (`readConsistency` makes it from the doors' options). */
export type ReadConsistency =
  | { readonly level: 'linearizable' }
  | { readonly level: 'serializable' }
  | {
      readonly level: 'bounded';
      /** The answer holds every write acknowledged this long before the call (0 when only entries are bounded). */
      readonly maxStalenessMs: number;
      /** Of the entries committed by then, at most this many may be missing (0 when only time is bounded). */
      readonly maxLagEntries: number;
    };

/** The levels a strong read may ask for (`consistency`). */
export const READ_CONSISTENCY_LEVELS = ['linearizable', 'serializable', 'bounded'] as const;
/** One of READ_CONSISTENCY_LEVELS. */
export type ReadConsistencyLevel = (typeof READ_CONSISTENCY_LEVELS)[number];

/** The read options every door takes (TypeScript names; HTTP and MCP use snake_case for the bounds). */
export interface ReadConsistencyOptions {
  consistency?: ReadConsistencyLevel;
  maxStalenessMs?: number;
  maxLagEntries?: number;
}

/** A bound larger than this (one day, or a billion entries) is refused as a mistake. */
export const MAX_STALENESS_MS = 86_400_000;
/** The largest `maxLagEntries` accepted. */
export const MAX_LAG_ENTRIES = 1_000_000_000;

/** The default: the leader confirms it still leads before answering (ReadIndex). */
export const LINEARIZABLE: ReadConsistency = { level: 'linearizable' };

function bound(name: string, v: number | undefined, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) {
    throw new InvalidArgumentError(`${name} must be an integer from 0 to ${max}`, { [name]: v });
  }
  return v;
}

/**
 * Validates and normalizes read options: bounds imply `bounded`; `bounded`
 * needs at least one bound; `linearizable` and `serializable` take none.
 * Throws `invalid_argument` otherwise.
 */
export function readConsistency(o: ReadConsistencyOptions = {}): ReadConsistency {
  const level = o.consistency;
  if (level !== undefined && !(READ_CONSISTENCY_LEVELS as readonly string[]).includes(level)) {
    throw new InvalidArgumentError(`consistency must be one of ${READ_CONSISTENCY_LEVELS.join(', ')}`, {
      consistency: level,
    });
  }
  const ms = bound('maxStalenessMs', o.maxStalenessMs, MAX_STALENESS_MS);
  const entries = bound('maxLagEntries', o.maxLagEntries, MAX_LAG_ENTRIES);
  const bounded = ms !== undefined || entries !== undefined;
  if (bounded && level !== undefined && level !== 'bounded') {
    throw new InvalidArgumentError(`maxStalenessMs and maxLagEntries go with consistency 'bounded', not '${level}'`);
  }
  if (level === 'bounded' && !bounded) {
    throw new InvalidArgumentError("consistency 'bounded' needs maxStalenessMs or maxLagEntries");
  }
  if (bounded) return { level: 'bounded', maxStalenessMs: ms ?? 0, maxLagEntries: entries ?? 0 };
  if (level === 'serializable') return { level: 'serializable' };
  return LINEARIZABLE;
}
