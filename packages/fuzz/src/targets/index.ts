/** Every decoder the fuzzer covers, by name. */
import type { AnyTarget } from '../target.js';
import { browserTargets } from './browser.js';
import { coordTargets, cursorTarget } from './coord.js';
import { crdtTargets } from './crdt.js';
import { netTargets } from './net.js';
import { nodeTargets } from './node.js';
import { raftTargets } from './raft.js';
import { storageTargets } from './storage.js';

export const TARGETS: readonly AnyTarget[] = [
  ...crdtTargets,
  ...raftTargets,
  ...coordTargets,
  cursorTarget,
  ...netTargets,
  ...storageTargets,
  ...nodeTargets,
  ...browserTargets,
];

/** Targets whose name matches one of the comma-separated patterns (`*` matches any run of characters). */
export function selectTargets(patterns: string | undefined): AnyTarget[] {
  if (patterns === undefined || patterns === '' || patterns === 'all') return [...TARGETS];
  const res = patterns.split(',').map(
    (p) =>
      new RegExp(
        `^${p
          .trim()
          .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')}$`,
      ),
  );
  return TARGETS.filter((t) => res.some((re) => re.test(t.name)));
}
