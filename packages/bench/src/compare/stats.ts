/** Pure statistics for the side-by-side run: quantiles of a sample and the spread over repetitions. */
import { quantile } from '../index.js';

export { quantile };

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

/** Median, min and max of one figure measured in several repetitions. */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 };
  return { median: quantile(values, 0.5), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/** "min–max over n" for the table. */
export function formatSpread(s: Spread, digits = 1): string {
  return `${s.min.toFixed(digits)}–${s.max.toFixed(digits)} (n=${s.n})`;
}
