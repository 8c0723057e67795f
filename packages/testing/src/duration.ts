/**
 * Durations as users write them: `'30s'`, `'400ms'`, `'2m'`, `'1h'`, `'1.5s'`, or a number of
 * milliseconds. Offsets (`cluster.skew`, `cluster.jump`) may carry a sign: `'+400ms'`, `'-2s'`.
 */
import { InvalidArgumentError } from '@parley/interface';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
/** Longest duration one call accepts: 30 simulated days. */
export const MAX_DURATION_MS = 30 * 86_400_000;

export type Duration = number | string;

/** Milliseconds of `d` (signed when `signed`), bounded by ±MAX_DURATION_MS. */
export function toMs(d: Duration, signed = false): number {
  let ms: number;
  if (typeof d === 'number') ms = d;
  else {
    const m = /^([+-]?)(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(d.trim());
    if (!m) throw new InvalidArgumentError(`not a duration: ${JSON.stringify(d)} (use e.g. '30s', '400ms', '+2s')`);
    ms = Number(m[2]) * (UNITS[m[3] as string] as number) * (m[1] === '-' ? -1 : 1);
  }
  if (!Number.isFinite(ms) || Math.abs(ms) > MAX_DURATION_MS || (!signed && ms < 0)) {
    throw new InvalidArgumentError(`duration out of range: ${String(d)}`, { duration: String(d) });
  }
  return Math.round(ms);
}
