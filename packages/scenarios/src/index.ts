/**
 * The scenario runner (private): the registry, sweeps over seeds, reports, and
 * the scenario families under ./families/ (registered when ./families/index.js is imported).
 */

export {
  assertPassed,
  listScenarios,
  matchScenarios,
  type RunOptions,
  type RunResult,
  registerScenario,
  runScenario,
  type Scenario,
  type ScenarioRun,
} from './registry.js';
export { convergenceSvg, reportMarkdown, writeReport } from './report.js';
export {
  GUARD_PREFIX,
  type GuardCoverage,
  guardLines,
  quantile,
  runSweep,
  type ScenarioStats,
  type SweepFailure,
  type SweepInconclusive,
  type SweepOptions,
  type SweepResult,
  type SweepSummary,
  summaryLine,
  sweepPassed,
} from './sweep.js';
