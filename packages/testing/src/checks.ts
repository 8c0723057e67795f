/**
 * The verdicts of `cluster.expect…()`, explained in the user's terms: which
 * client (node), which call, which key, which values.
 */

import type { Model, SessionOp } from '@parley/check';
import {
  checkBoundedStaleness,
  checkLinearizability,
  describeOperation,
  parleyEntryModel,
  parleyLeaseModel,
  parleyLockModel,
} from '@parley/check';
import { canonicalJson } from '@parley/coord';
import type { NamespaceReplica } from '@parley/crdt';
import type { FenceObservation, ModelName, RecordedCall, Recorder } from './recorder.js';

/** A failed `expect…`: the message explains the violation; `timeline` is the file written for it. */
export class SimulationExpectationError extends Error {
  timeline: string | undefined;
  constructor(
    readonly check: string,
    message: string,
    readonly calls: readonly RecordedCall[] = [],
  ) {
    super(message);
    this.name = 'SimulationExpectationError';
  }
}

const MODELS: Record<ModelName, Model<unknown, unknown, unknown>> = {
  entry: parleyEntryModel as Model<unknown, unknown, unknown>,
  lease: parleyLeaseModel as Model<unknown, unknown, unknown>,
  lock: parleyLockModel as Model<unknown, unknown, unknown>,
};
const WHAT: Record<ModelName, string> = { entry: 'strong entries', lease: 'leases', lock: 'locks' };

export function describeCall(c: RecordedCall): string {
  const args = c.input === null ? '' : canonicalJson(c.input);
  const result =
    c.outcome === undefined
      ? 'still pending'
      : c.outcome === 'ok'
        ? `→ ${canonicalJson(c.output ?? null)}`
        : c.outcome === 'fail'
          ? `→ failed: ${c.error}`
          : `→ unknown outcome (${c.error})`;
  const span = `[${c.startMs}ms..${c.endMs === undefined ? '' : `${c.endMs}ms`}]`;
  return `${c.client} ${c.call}(${JSON.stringify(c.key)}${args ? `, ${args}` : ''}) ${result} ${span}`;
}

/** Strong calls of every model against the parley-entry, parley-lease and parley-lock models. */
export function expectLinearizable(rec: Recorder, maxSteps = 5_000_000): { operations: number } {
  let operations = 0;
  for (const name of ['entry', 'lease', 'lock'] as const) {
    let events = rec.histories[name].events();
    if (name === 'entry') events = events.filter((e) => e.key === undefined || !rec.unmodelled.has(e.key));
    const r = checkLinearizability(MODELS[name], events, { maxSteps });
    operations += r.operations;
    if (r.verdict === 'linearizable') continue;
    if (r.verdict === 'unknown') {
      throw new SimulationExpectationError(
        'linearizable',
        `linearizability of the ${WHAT[name]} could not be decided within ${maxSteps} steps (${r.operations} operations); shorten the run or use fewer keys`,
      );
    }
    const ce = r.counterexample;
    const key = ce?.key;
    const involved = rec.calls.filter((c) => c.model === name && (key === undefined || c.key === key));
    const lines = involved.slice(-12).map((c) => `  ${describeCall(c)}`);
    const stuck = ce?.blocked ? [`  no order lets this take effect: ${describeOperation(ce.blocked)}`] : [];
    throw new SimulationExpectationError(
      'linearizable',
      [
        `not linearizable: the ${WHAT[name]}${key ? ` on key ${JSON.stringify(key)}` : ''} admit no order consistent with real time.`,
        'The calls on that key (last 12):',
        ...lines,
        ...stuck,
      ].join('\n'),
      involved,
    );
  }
  return { operations };
}

/**
 * Fences and epochs, in real time as the clients saw them: two grants of one
 * lock or lease never carry the same fence; a grant that began after another
 * ended carries a greater fence; no write was accepted with a fence older
 * than a grant that ended before the write began.
 */
export function expectFencing(rec: Recorder): { grants: number; writes: number } {
  const byResource = new Map<string, FenceObservation[]>();
  for (const f of rec.fences) {
    let list = byResource.get(f.resource);
    if (list === undefined) byResource.set(f.resource, (list = []));
    list.push(f);
  }
  let grants = 0;
  let writes = 0;
  const fail = (msg: string, calls: RecordedCall[]) => {
    throw new SimulationExpectationError(
      'fencing',
      `${msg}\n${calls.map((c) => `  ${describeCall(c)}`).join('\n')}`,
      calls,
    );
  };
  for (const [resource, list] of byResource) {
    const gs = list.filter((f) => f.kind === 'grant');
    grants += gs.length;
    const seen = new Map<number, FenceObservation>();
    for (const g of gs) {
      const prior = seen.get(g.fence);
      if (prior) fail(`fencing: ${resource} was granted fence ${g.fence} twice`, [prior.call, g.call]);
      seen.set(g.fence, g);
    }
    for (const a of gs) {
      for (const b of gs) {
        if ((a.call.endMs ?? Infinity) < b.call.startMs && b.fence <= a.fence) {
          fail(`fencing: ${resource} granted fence ${b.fence} after fence ${a.fence} had been granted`, [
            a.call,
            b.call,
          ]);
        }
      }
    }
    for (const w of list) {
      if (w.kind !== 'write' || !w.accepted) continue;
      writes++;
      const newer = gs.find((g) => g.fence > w.fence && (g.call.endMs ?? Infinity) < w.call.startMs);
      if (newer) {
        fail(
          `fencing: a write with stale fence ${w.fence} on ${resource} was accepted after fence ${newer.fence} was granted`,
          [newer.call, w.call],
        );
      }
    }
  }
  return { grants, writes };
}

/**
 * One eventual namespace on every live node: the same entries (keys, values,
 * versions), and no acknowledged write lost: each acknowledged set or
 * increment of a key is still there or was overtaken by a later version or a
 * delete of that key.
 */
export function expectConverged(
  rec: Recorder,
  namespace: string,
  replicas: ReadonlyArray<{ node: number; replica: NamespaceReplica | undefined }>,
  nowMs: number,
): { keys: number } {
  const live = replicas.filter((r) => r.replica !== undefined) as Array<{ node: number; replica: NamespaceReplica }>;
  if (live.length === 0)
    throw new SimulationExpectationError('converged', `no live node has opened eventual('${namespace}')`);
  const view = (r: NamespaceReplica) => {
    const m = new Map<string, { value: unknown; version: string }>();
    for (const [key, e] of r.entries(nowMs)) m.set(key, { value: e.value, version: e.version });
    return m;
  };
  const ref = live[0] as (typeof live)[number];
  const refView = view(ref.replica);
  for (const other of live.slice(1)) {
    const v = view(other.replica);
    const keys = new Set([...refView.keys(), ...v.keys()]);
    for (const key of [...keys].sort()) {
      const a = refView.get(key);
      const b = v.get(key);
      if (
        a?.version !== b?.version ||
        canonicalJson((a?.value ?? null) as never) !== canonicalJson((b?.value ?? null) as never)
      ) {
        const show = (x: typeof a) => (x ? `${canonicalJson(x.value as never)} (version ${x.version})` : 'absent');
        const calls = rec.calls.filter(
          (c) => c.model === 'eventual' && c.key === key && c.call.startsWith(`eventual('${namespace}')`),
        );
        throw new SimulationExpectationError(
          'converged',
          [
            `not converged: in eventual('${namespace}'), key ${JSON.stringify(key)} is ${show(a)} on node ${ref.node} but ${show(b)} on node ${other.node}.`,
            'Heal the network and run long enough for anti-entropy before expectConverged. The writes of that key:',
            ...calls.slice(-12).map((c) => `  ${describeCall(c)}`),
          ].join('\n'),
          calls,
        );
      }
    }
  }
  for (const w of rec.eventualWrites) {
    if (w.namespace !== namespace || w.f === 'delete' || w.version === undefined) continue;
    const now = refView.get(w.key);
    if (now && compareVersions(now.version, w.version) >= 0) continue;
    const deleted = rec.eventualWrites.some((d) => d.namespace === namespace && d.key === w.key && d.f === 'delete');
    const ttl =
      w.call.input !== null && typeof w.call.input === 'object' && (w.call.input as { options?: unknown }).options;
    if (deleted || ttl) continue;
    throw new SimulationExpectationError(
      'converged',
      `lost write: ${describeCall(w.call)} was acknowledged, but every node now has ${now ? `version ${now.version}` : 'no entry'} for ${JSON.stringify(w.key)} in eventual('${namespace}')`,
      [w.call],
    );
  }
  return { keys: refView.size };
}

/** Orders HLC version strings (`wall36.logical36.node`). */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [w = '0', l = '0', ...rest] = v.split('.');
    return [Number.parseInt(w, 36), Number.parseInt(l, 36), rest.join('.')] as const;
  };
  const [aw, al, an] = parse(a);
  const [bw, bl, bn] = parse(b);
  return aw !== bw ? aw - bw : al !== bl ? al - bl : an < bn ? -1 : an > bn ? 1 : 0;
}

/**
 * Strong reads asked with `maxStalenessMs` (and no `maxLagEntries`), with
 * `checkBoundedStaleness`: none missed a write acknowledged more than its
 * bound before it was called. Versions of one key are ordered by real time
 * only (a write called after another was acknowledged is newer; overlapping
 * writes are not compared), so a report is never a false alarm. Reads of a
 * version the history cannot place (its write's outcome unknown) are left out.
 */
export function expectBoundedStaleness(rec: Recorder): { reads: number } {
  const writes = new Map<string, { call: RecordedCall; key: string }>();
  const ops: SessionOp<string>[] = [];
  for (const c of rec.calls) {
    if (c.model !== 'entry' || !c.call.endsWith('.set') || c.outcome !== 'ok' || c.endMs === undefined) continue;
    const version = (c.output as { version?: unknown } | undefined)?.version;
    if (typeof version !== 'string') continue;
    writes.set(version, { call: c, key: c.key });
    ops.push({
      kind: 'write',
      session: c.client,
      key: c.key,
      id: version,
      outcome: 'ok',
      version,
      invokeMs: c.startMs,
      completeMs: c.endMs,
    });
  }
  const bounds = new Map<SessionOp<string>, { bound: number; read: RecordedCall }>();
  for (const r of rec.strongReads) {
    const c = r.call;
    if (r.consistency.level !== 'bounded' || r.consistency.maxLagEntries > 0 || c.outcome !== 'ok') continue;
    const version = (c.output as { version?: unknown } | null | undefined)?.version;
    if (typeof version === 'string' && !writes.has(version)) continue;
    const op: SessionOp<string> = {
      kind: 'read',
      session: c.client,
      key: r.key,
      saw: typeof version === 'string' ? version : null,
      ...(typeof version === 'string' ? { version } : {}),
      outcome: 'ok',
      invokeMs: c.startMs,
      ...(c.endMs === undefined ? {} : { completeMs: c.endMs }),
    };
    bounds.set(op, { bound: r.consistency.maxStalenessMs, read: c });
    ops.push(op);
  }
  // a < b when a's write was acknowledged before b's began; overlapping writes are not ordered.
  const compare = (a: string, b: string) => {
    const wa = writes.get(a)?.call;
    const wb = writes.get(b)?.call;
    if (!wa || !wb || a === b) return 0;
    if ((wa.endMs ?? Infinity) < wb.startMs) return -1;
    if ((wb.endMs ?? Infinity) < wa.startMs) return 1;
    return 0;
  };
  const r = checkBoundedStaleness(ops, { compare, boundOf: (op) => bounds.get(op)?.bound });
  const first = r.violations[0];
  if (first) {
    const read = bounds.get(ops[first.op] as SessionOp<string>)?.read;
    const missed = writes.get(first.missed)?.call;
    const calls = [missed, read].filter((c): c is RecordedCall => c !== undefined);
    throw new SimulationExpectationError(
      'bounded-staleness',
      [
        `stale read: a read of ${JSON.stringify(first.key)} promised maxStalenessMs ${first.boundMs} missed a write acknowledged ${first.staleByMs} ms before it was called.`,
        ...calls.map((c) => `  ${describeCall(c)}`),
      ].join('\n'),
      calls,
    );
  }
  return { reads: bounds.size };
}
