/**
 * Fencing safety, checked over what a protected resource saw, in the order it
 * saw it (for Parley: the commands the coord state machine applied):
 *
 * - grants of one resource (lock fence tokens, lease epochs) strictly increase;
 * - no write is accepted with a fence older than one already granted;
 * - no write is accepted with a fence that was never granted.
 */

export type FenceEvent =
  | {
      readonly type: 'grant';
      readonly resource: string;
      readonly fence: number;
      readonly holder?: string;
      readonly timeMs?: number;
    }
  | {
      readonly type: 'write';
      readonly resource: string;
      readonly fence: number;
      /** Did the resource accept it? */
      readonly accepted: boolean;
      readonly writer?: string;
      readonly timeMs?: number;
    };

export type FencingViolation =
  | {
      readonly type: 'grant-not-increasing';
      readonly index: number;
      readonly resource: string;
      readonly fence: number;
      readonly previous: number;
    }
  | {
      readonly type: 'stale-write-accepted';
      readonly index: number;
      readonly resource: string;
      readonly fence: number;
      readonly newest: number;
    }
  | {
      readonly type: 'ungranted-write-accepted';
      readonly index: number;
      readonly resource: string;
      readonly fence: number;
    };

export interface FencingResult {
  readonly ok: boolean;
  readonly violations: readonly FencingViolation[];
  readonly truncated: boolean;
}

/**
 * @example
 * ```ts
 * checkFencing([
 *   { type: 'grant', resource: 'deploy', fence: 1 },
 *   { type: 'grant', resource: 'deploy', fence: 2 },
 *   { type: 'write', resource: 'deploy', fence: 1, accepted: true }, // violation: stale
 * ]).ok === false;
 * ```
 */
export function checkFencing(events: Iterable<FenceEvent>, options: { maxViolations?: number } = {}): FencingResult {
  const max = options.maxViolations ?? 100;
  const newest = new Map<string, number>();
  const granted = new Map<string, Set<number>>();
  const violations: FencingViolation[] = [];
  let truncated = false;
  const add = (v: FencingViolation) => {
    if (violations.length < max) violations.push(v);
    else truncated = true;
  };
  let index = 0;
  for (const e of events) {
    const top = newest.get(e.resource);
    if (e.type === 'grant') {
      if (top !== undefined && e.fence <= top) {
        add({ type: 'grant-not-increasing', index, resource: e.resource, fence: e.fence, previous: top });
      }
      newest.set(e.resource, top === undefined ? e.fence : Math.max(top, e.fence));
      let set = granted.get(e.resource);
      if (set === undefined) granted.set(e.resource, (set = new Set()));
      set.add(e.fence);
    } else if (e.accepted) {
      if (top !== undefined && e.fence < top) {
        add({ type: 'stale-write-accepted', index, resource: e.resource, fence: e.fence, newest: top });
      } else if (!granted.get(e.resource)?.has(e.fence)) {
        add({ type: 'ungranted-write-accepted', index, resource: e.resource, fence: e.fence });
      }
    }
    index++;
  }
  return { ok: violations.length === 0 && !truncated, violations, truncated };
}
