/**
 * The work-queue checker: from what producers and workers were told and the
 * queue's final state, every enqueued task completed exactly once, by the
 * attempt that held it last.
 *
 * - every task an enqueue was told about is `done` at the end;
 * - at most one `complete` per task was answered ok;
 * - the stored result names the attempt whose `complete` was answered ok, and
 *   that attempt holds the task's last fence (no older attempt completed it);
 * - enqueues of one key were all told the same task.
 */

/** A task as the final listing shows it. */
export interface FinalTask {
  id: string;
  status: string;
  fence: number;
  result: unknown;
}

/** A `complete` call and its answer: ok, or the error code (indeterminate ones included). */
export interface CompleteCall {
  id: string;
  holder: string;
  fence: number;
  ok: boolean;
  code?: string;
}

export interface QueueHistory {
  /** Task id by de-duplication key, for every enqueue answered ok (one entry per answer). */
  enqueued: Array<{ key: string; id: string }>;
  completes: CompleteCall[];
  final: FinalTask[];
}

export interface QueueViolation {
  type: 'not-done' | 'completed-twice' | 'result-mismatch' | 'stale-completion' | 'dedup-split';
  detail: string;
}

export function checkQueue(h: QueueHistory): { violations: QueueViolation[]; tasks: number; completions: number } {
  const violations: QueueViolation[] = [];
  const byId = new Map(h.final.map((t) => [t.id, t]));
  const idOfKey = new Map<string, string>();
  for (const e of h.enqueued) {
    const known = idOfKey.get(e.key);
    if (known !== undefined && known !== e.id) {
      violations.push({ type: 'dedup-split', detail: `key ${e.key} answered task ${known} and task ${e.id}` });
    }
    idOfKey.set(e.key, known ?? e.id);
  }
  const okBy = new Map<string, CompleteCall[]>();
  for (const c of h.completes) {
    if (!c.ok) continue;
    const list = okBy.get(c.id) ?? [];
    list.push(c);
    okBy.set(c.id, list);
  }
  for (const id of new Set(idOfKey.values())) {
    const t = byId.get(id);
    if (t?.status !== 'done') {
      violations.push({ type: 'not-done', detail: `task ${id} is ${t?.status ?? 'absent'} at the end` });
      continue;
    }
    const oks = okBy.get(id) ?? [];
    if (oks.length > 1) {
      violations.push({
        type: 'completed-twice',
        detail: `task ${id} completed by ${oks.map((c) => `${c.holder}@${c.fence}`).join(' and ')}`,
      });
      continue;
    }
    const r = t.result as { by?: unknown; fence?: unknown } | null;
    const ok = oks[0];
    if (ok && (r?.by !== ok.holder || r?.fence !== ok.fence)) {
      violations.push({
        type: 'result-mismatch',
        detail: `task ${id}: ${ok.holder}@${ok.fence} was told it completed, the result says ${JSON.stringify(r)}`,
      });
    }
    if (r?.fence !== t.fence) {
      violations.push({
        type: 'stale-completion',
        detail: `task ${id} completed by the attempt of fence ${String(r?.fence)}, its last attempt has fence ${t.fence}`,
      });
    }
  }
  return { violations, tasks: idOfKey.size, completions: [...okBy.values()].reduce((n, l) => n + l.length, 0) };
}
