/**
 * `cluster.expectSessionGuarantees()` and `cluster.expectCausal(ns)`: the calls
 * made with a `session` option (docs/sessions.md), judged with
 * `checkSessionGuarantees` of @parley/check, explained in the user's terms.
 *
 * What is judged: `set` and `get` of eventual and strong entries. A write or
 * read is named by the entry version it wrote or returned (unique per write on
 * both sides), so the written values need not be unique. Writes made without
 * a session are in the history too (a read may return one), each in a session
 * of its own that promises nothing. Left out: keys that were ever deleted,
 * incremented, claimed, fenced or written with a TTL (the checker's reads
 * return the last visible write; a tombstone, a counter or an expiry is not
 * one), and reads that returned a version no recorded write has.
 *
 * Arbitration: eventual versions in their LWW order (the HLC stamp); strong
 * versions in real time only (a write acknowledged before another began is
 * older; overlapping strong writes are not compared, so a report is never a
 * false alarm). Session order is the order in which a session's calls began:
 * a session's calls must not overlap (the check refuses a history where they
 * do, rather than invent an order).
 */
import { checkSessionGuarantees, type SessionGuarantee, type SessionOp, type SessionViolation } from '@parley/check';
import { InvalidArgumentError } from '@parley/interface';
import { compareVersions, describeCall, SimulationExpectationError } from './checks.js';
import type { RecordedCall, Recorder, SessionCallRecord } from './recorder.js';

const NAMES: Record<string, string> = {
  ryw: 'read-your-writes',
  mr: 'monotonic reads',
  mw: 'monotonic writes',
  wfr: 'writes-follow-reads',
  causal: 'causal consistency',
  'mw-order': 'monotonic writes (order)',
  'wfr-order': 'writes-follow-reads (order)',
  'causal-order': 'causal consistency (order)',
};

interface Judged {
  ops: SessionOp<string>[];
  /** The recorded call of each op, by index. */
  calls: RecordedCall[];
  /** The write call of each version. */
  writes: Map<string, RecordedCall>;
  sessions: number;
}

/** `side:ns/key`, the key the checker sees; versions are `e|…` (eventual) or `s|…` (strong). */
const keyOf = (side: string, ns: string, key: string) => `${side}:${ns}/${key}`;

function judged(rec: Recorder, only?: { namespace: string }): Judged {
  const excluded = new Set<string>();
  for (const w of rec.eventualWrites) {
    const ttl = (w.call.input as { options?: unknown } | null)?.options;
    if (w.f !== 'set' || (ttl !== null && ttl !== undefined)) excluded.add(keyOf('eventual', w.namespace, w.key));
  }
  for (const c of rec.calls) {
    if (c.model === 'eventual' || c.model === 'strong-read') continue;
    const slash = c.key.indexOf('/');
    const k = keyOf('strong', c.key.slice(0, slash), c.key.slice(slash + 1));
    if (!c.call.endsWith('.set') && !c.call.endsWith('.get')) excluded.add(k);
  }
  for (const k of rec.unmodelled) {
    const slash = k.indexOf('/');
    excluded.add(keyOf('strong', k.slice(0, slash), k.slice(slash + 1)));
  }

  type Item = { op: SessionOp<string>; call: RecordedCall };
  const items: Item[] = [];
  const writes = new Map<string, RecordedCall>();
  const inSession = new Set<number>();
  const keep = (side: string, ns: string) => only === undefined || (side === 'eventual' && ns === only.namespace);
  const outcomeOf = (c: RecordedCall) => (c.outcome === 'ok' ? 'ok' : c.outcome === 'fail' ? 'fail' : 'unknown');

  const byStart = [...rec.sessionCalls].sort((a, b) => a.call.startMs - b.call.startMs || a.call.id - b.call.id);
  const last = new Map<string, SessionCallRecord>();
  for (const s of byStart) {
    inSession.add(s.call.id);
    const prev = last.get(s.session);
    if (prev !== undefined && (prev.call.endMs ?? Number.POSITIVE_INFINITY) > s.call.startMs) {
      throw new InvalidArgumentError(
        `expectSessionGuarantees: session ${s.session} had overlapping calls (the check needs one at a time per session):\n  ${describeCall(prev.call)}\n  ${describeCall(s.call)}`,
      );
    }
    last.set(s.session, s);
    if (!keep(s.side, s.namespace)) continue;
    const key = keyOf(s.side, s.namespace, s.key);
    if (excluded.has(key)) continue;
    const tag = s.side === 'eventual' ? 'e|' : 's|';
    const version = s.version === undefined ? undefined : `${tag}${s.version}`;
    if (s.kind === 'write') {
      const id = version ?? `call:${s.call.id}`;
      if (version !== undefined) writes.set(version, s.call);
      const base = { kind: 'write', session: s.session, key, id, outcome: outcomeOf(s.call) } as const;
      items.push({ op: version === undefined ? base : { ...base, version }, call: s.call });
    } else if (s.answered) {
      const base = { kind: 'read', session: s.session, key, saw: version ?? null, outcome: 'ok' } as const;
      items.push({ op: version === undefined ? base : { ...base, version }, call: s.call });
    }
  }
  // Writes without a session: each in a session of its own.
  const solo = (call: RecordedCall, side: 'eventual' | 'strong', ns: string, key: string, version: string) => {
    if (inSession.has(call.id) || !keep(side, ns)) return;
    const k = keyOf(side, ns, key);
    if (excluded.has(k)) return;
    writes.set(version, call);
    items.push({
      op: { kind: 'write', session: `solo:${call.id}`, key: k, id: version, version, outcome: 'ok' },
      call,
    });
  };
  for (const w of rec.eventualWrites) {
    if (w.f === 'set' && w.version !== undefined) solo(w.call, 'eventual', w.namespace, w.key, `e|${w.version}`);
  }
  for (const c of rec.calls) {
    if (c.model !== 'entry' || !c.call.endsWith('.set') || c.outcome !== 'ok') continue;
    const version = (c.output as { version?: unknown } | null)?.version;
    if (typeof version !== 'string') continue;
    const slash = c.key.indexOf('/');
    solo(c, 'strong', c.key.slice(0, slash), c.key.slice(slash + 1), `s|${version}`);
  }
  // Reads of a version no recorded write has (an unknown outcome's, or an unjudged call's) are left out.
  const kept = items.filter((i) => i.op.kind !== 'read' || i.op.version === undefined || writes.has(i.op.version));
  kept.sort((a, b) => a.call.startMs - b.call.startMs || a.call.id - b.call.id);
  return {
    ops: kept.map((i) => i.op),
    calls: kept.map((i) => i.call),
    writes,
    sessions: new Set(rec.sessionCalls.map((s) => s.session)).size,
  };
}

function compareWith(writes: Map<string, RecordedCall>) {
  return (a: string, b: string): number => {
    if (a === b) return 0;
    if (a.startsWith('e|') && b.startsWith('e|')) return compareVersions(a.slice(2), b.slice(2));
    const wa = writes.get(a);
    const wb = writes.get(b);
    if (!wa || !wb) return 0;
    if ((wa.endMs ?? Number.POSITIVE_INFINITY) < wb.startMs) return -1;
    if ((wb.endMs ?? Number.POSITIVE_INFINITY) < wa.startMs) return 1;
    return 0;
  };
}

function explain(check: string, v: SessionViolation, j: Judged): SimulationExpectationError {
  if (v.type === 'cycle') {
    const calls = v.ops.map((i) => j.calls[i]).filter((c): c is RecordedCall => c !== undefined);
    return new SimulationExpectationError(
      check,
      ['sessions: the calls read each other in a cycle:', ...calls.map((c) => `  ${describeCall(c)}`)].join('\n'),
      calls,
    );
  }
  const op = j.ops[v.op] as SessionOp<string>;
  const at = j.calls[v.op] as RecordedCall;
  const key = op.key.slice(op.key.indexOf(':') + 1);
  const session = op.session;
  const history = j.calls.filter((_, i) => j.ops[i]?.session === session).slice(-12);
  const other = v.type === 'thin-air' ? undefined : j.writes.get('missed' in v ? v.missed : v.after);
  const head =
    v.type === 'thin-air'
      ? `sessions: session ${session} read a version of ${JSON.stringify(key)} no write made.`
      : 'missed' in v
        ? `${NAMES[v.type]} violated: session ${session}'s read of ${JSON.stringify(key)} returned ${v.saw === null ? 'nothing, but it had to see a write' : 'a write that loses to one it had to see'}.`
        : `${NAMES[v.type]} violated: session ${session}'s write of ${JSON.stringify(key)} is ordered before a write it had to follow.`;
  const lines = [
    head,
    `  the call:       ${describeCall(at)}`,
    ...(other === undefined ? [] : [`  it had to see:  ${describeCall(other)}`]),
    `The calls of session ${session} (last 12):`,
    ...history.map((c) => `  ${describeCall(c)}`),
  ];
  return new SimulationExpectationError(check, lines.join('\n'), [at, ...(other ? [other] : []), ...history]);
}

/** Every session's calls kept read-your-writes, monotonic reads, monotonic writes and writes-follow-reads. */
export function expectSessionGuarantees(rec: Recorder): { sessions: number; operations: number } {
  return run(rec, 'session-guarantees', new Set<SessionGuarantee>(['ryw', 'mr', 'mw', 'wfr']));
}

/** The calls on eventual namespace `namespace` were causally consistent (the four, transitively across sessions). */
export function expectCausal(rec: Recorder, namespace: string): { sessions: number; operations: number } {
  return run(rec, 'causal', new Set(['causal'] as const), { namespace });
}

function run(
  rec: Recorder,
  check: string,
  guarantees: ReadonlySet<SessionGuarantee | 'causal'>,
  only?: { namespace: string },
): { sessions: number; operations: number } {
  const j = judged(rec, only);
  const r = checkSessionGuarantees(j.ops, { guarantees, compare: compareWith(j.writes), maxViolations: 1 });
  const first = r.violations[0];
  if (first !== undefined) throw explain(check, first, j);
  return { sessions: j.sessions, operations: j.ops.length };
}
