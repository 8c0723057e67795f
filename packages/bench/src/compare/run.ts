/** What the sides of one `bench:compare` run share: its options, scratch directory and outputs. */
import type { CompareOptions } from './options.js';
import type { Progress } from './progress.js';
import type { CompareRow } from './rows.js';

export interface CompareRun {
  readonly opts: CompareOptions;
  /** Scratch directory of the run (removed at its end). */
  readonly root: string;
  /** The repository root (programs and outputs are found from it). */
  readonly repoRoot: string;
  /** The table's rows, in order. */
  readonly rows: CompareRow[];
  /** Raw figures beside the rows, written to the JSON file. */
  readonly extra: Record<string, unknown>;
  readonly progress: Progress;
  /** Writes an SVG chart into the output directory. */
  writeSvg(name: string, svg: string): void;
}
