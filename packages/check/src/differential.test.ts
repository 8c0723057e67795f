/**
 * Differential test: random small histories, written as text the way Jepsen,
 * Knossos and Porcupine write them, are parsed and checked by `parley-check`'s
 * code path and judged by the brute-force oracle (brute-force.ts), which shares
 * no code with it. Values are drawn from a pool of EDN literals whose equality
 * classes are written down by hand (`1` = `1N` ≠ `1.0` ≠ `"1"`, `[1]` = `(1)` ≠
 * `"[1]"`, `:a` ≠ `"a"`, …), so the oracle never compares values itself.
 */
import { type Random, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { type OracleModel, type OracleOp, oracleLinearizable } from './brute-force.js';
import { checkLinearizability } from './linearizability.js';
import type { Model } from './model.js';
import { getModel } from './models/index.js';
import { parseHistory } from './parse.js';
import { testSeed, withSeed } from './test-util.js';

/** An EDN literal and its equality class under Clojure's `=`. */
interface Lit {
  readonly edn: string;
  readonly cls: string;
}

const VALUES: readonly Lit[] = [
  { edn: '0', cls: 'i0' },
  { edn: '0N', cls: 'i0' },
  { edn: '0.0', cls: 'd0' },
  { edn: '-0.0', cls: 'd0' },
  { edn: '1', cls: 'i1' },
  { edn: '1N', cls: 'i1' },
  { edn: '1.0', cls: 'd1' },
  { edn: '"1"', cls: 's1' },
  { edn: ':a', cls: 'ka' },
  { edn: '"a"', cls: 'sa' },
  { edn: 'a', cls: 'ya' },
  { edn: '\\a', cls: 'ca' },
  { edn: '[1]', cls: 'v1' },
  { edn: '(1)', cls: 'v1' },
  { edn: '[1N]', cls: 'v1' },
  { edn: '"[1]"', cls: 'sv1' },
  { edn: '#{1}', cls: 'set1' },
  { edn: '{:a 1}', cls: 'map-ka1' },
  { edn: '{:a 1N}', cls: 'map-ka1' },
  { edn: '{"a" 1}', cls: 'map-sa1' },
  { edn: '9007199254740992', cls: 'i2^53' },
  { edn: '9007199254740993', cls: 'i2^53+1' },
  { edn: '9007199254740993N', cls: 'i2^53+1' },
  { edn: '9007199254740992.0', cls: 'd2^53' },
  { edn: '1/2', cls: 'r1/2' },
  { edn: '2/4', cls: 'r1/2' },
  { edn: '0.5', cls: 'd0.5' },
  { edn: '1.5M', cls: 'm1.5' },
  { edn: '1.50M', cls: 'm1.5' },
  { edn: '##Inf', cls: 'dinf' },
  { edn: 'true', cls: 'true' },
  { edn: '"x 0 y"', cls: 'sx0y' },
];
/** Keys: `1` and `1N` are one key; `"x"` and `:x` are two. */
const KEYS: readonly Lit[] = [
  { edn: '"x"', cls: 'sx' },
  { edn: ':x', cls: 'kx' },
  { edn: '1', cls: 'i1' },
  { edn: '1N', cls: 'i1' },
];

const pick = <T>(rng: Random, xs: readonly T[]): T => xs[rng.int(xs.length)]!;
const ofClass = (rng: Random, cls: string): string => {
  if (cls === 'nil') return 'nil';
  return pick(
    rng,
    VALUES.filter((v) => v.cls === cls),
  ).edn;
};

type Shape = 'knossos' | 'lines' | 'records' | 'jepsen-log';

interface Generated {
  readonly model: OracleModel;
  readonly text: string;
  readonly independent: boolean;
  readonly ops: OracleOp[];
}

interface Pending {
  readonly process: number;
  readonly f: OracleOp['f'];
  readonly key: Lit | undefined;
  readonly value: string | readonly [string, string] | null; // classes
  readonly valueEdn: string; // the invoke's literal
  readonly call: number;
  applied: boolean;
  result: string | null; // read: the class read; cas: 'ok' | 'fail'
}

/**
 * One random history of an atomic object (values applied at a random point
 * between call and completion), some completions lost (`info`, or never
 * completed), and sometimes one result perturbed so that it may not be
 * linearizable any more.
 */
function generate(rng: Random): Generated {
  const model = pick(rng, ['register', 'cas-register', 'mutex'] as const);
  const keyed = rng.int(2) === 0;
  const independent = keyed && model !== 'mutex' && rng.int(3) === 0;
  const shape: Shape =
    !keyed && model === 'register' && rng.int(4) === 0 ? 'jepsen-log' : pick(rng, ['knossos', 'lines', 'records']);
  const processes = 2 + rng.int(3);
  const budget = 1 + rng.int(7);
  const real = new Map<string, string>();
  const init = model === 'mutex' ? 'free' : model === 'register' ? 'nil' : 'i0';
  const stateOf = (k: Lit | undefined) => real.get(k?.cls ?? '') ?? init;
  const lines: string[] = [];
  const renders: ((out: string) => string)[] = [];
  const ops: OracleOp[] = [];
  const pending = new Map<number, Pending>();
  const holding = new Map<number, Lit | undefined>(); // mutex: process → the key it holds
  let nextProcess = processes;
  const live = Array.from({ length: processes }, (_, i) => i);
  let invoked = 0;
  let position = 0;

  const emit = (p: Pending, type: string, out: string) => {
    const f = p.f;
    const i = lines.length;
    const render = (o: string): string => {
      if (shape === 'jepsen-log') return `INFO  jepsen.util - ${p.process}\t:${type}\t:${f}\t${o}`;
      const k = p.key === undefined || independent ? '' : `, :key ${p.key.edn}`;
      const v = independent ? `[${p.key!.edn} ${o}]` : o;
      return shape === 'records'
        ? `#jepsen.history.Op{:index ${i}, :time ${i * 1000}, :type :${type}, :process ${p.process}, :f :${f}${k}, :value ${v}}`
        : `{:process ${p.process}, :type :${type}, :f :${f}${k}, :value ${v}}`;
    };
    lines.push(render(out));
    renders.push(render);
    position++;
  };

  const invoke = (process: number) => {
    let key = keyed ? pick(rng, KEYS) : undefined;
    let f: OracleOp['f'];
    let value: Pending['value'] = null;
    let valueEdn = 'nil';
    if (model === 'mutex') {
      f = holding.has(process) ? 'release' : 'acquire';
      if (f === 'release') key = holding.get(process);
    } else {
      f = pick(rng, ['read', 'write', 'cas'] as const);
      if (f === 'write') {
        const v = pick(rng, VALUES);
        value = v.cls;
        valueEdn = v.edn;
      } else if (f === 'cas') {
        // Compare with the current value half of the time, so that some succeed.
        const fromCls = rng.int(2) === 0 ? stateOf(key) : pick(rng, VALUES).cls;
        const to = pick(rng, VALUES);
        value = [fromCls, to.cls];
        valueEdn = `[${ofClass(rng, fromCls)} ${to.edn}]`;
      }
    }
    const p: Pending = { process, f, key, value, valueEdn, call: position, applied: false, result: null };
    pending.set(process, p);
    emit(p, 'invoke', valueEdn);
    invoked++;
  };

  const takeEffect = (p: Pending) => {
    const k = p.key?.cls ?? '';
    const s = stateOf(p.key);
    switch (p.f) {
      case 'read':
        p.result = s;
        break;
      case 'write':
        real.set(k, p.value as string);
        break;
      case 'cas': {
        const [from, to] = p.value as readonly [string, string];
        p.result = s === from ? 'ok' : 'fail';
        if (s === from) real.set(k, to);
        break;
      }
      case 'acquire':
        if (s !== 'free') return; // blocked: try again later
        real.set(k, 'held');
        break;
      case 'release':
        real.set(k, 'free');
        break;
    }
    p.applied = true;
  };

  const complete = (p: Pending) => {
    pending.delete(p.process);
    const lost = rng.int(5) === 0;
    let status: OracleOp['status'];
    let out: string;
    if (lost) {
      status = 'info';
      out = shape === 'jepsen-log' ? ':timed-out' : p.valueEdn;
    } else if (!p.applied) {
      // It did not happen: Knossos and the mutex drop a fail; the register reads a failed cas as an observation.
      if (model === 'register' && p.f === 'cas') {
        pending.set(p.process, p);
        return;
      }
      status = 'fail';
      out = p.valueEdn;
    } else if (p.f === 'cas' && p.result === 'fail') {
      status = 'fail'; // the compare failed: an observation for the register, dropped by Knossos
      out = p.valueEdn;
    } else {
      status = 'ok';
      out = p.f === 'read' ? ofClass(rng, p.result!) : p.valueEdn;
      if (p.f === 'acquire') holding.set(p.process, p.key);
      if (p.f === 'release') holding.delete(p.process);
    }
    const ret = status === 'info' ? Number.POSITIVE_INFINITY : position;
    let value: OracleOp['value'] = p.value;
    if (p.f === 'read') value = status === 'ok' ? p.result : null;
    ops.push({ f: p.f, key: p.key?.cls ?? '', value, status, call: p.call, ret });
    emit(p, status, out);
    if (status === 'info') {
      // Jepsen gives the worker a new process after an indeterminate call.
      const i = live.indexOf(p.process);
      live[i] = nextProcess++;
    }
  };

  for (let guard = 0; guard < 200; guard++) {
    const idle = live.filter((p) => !pending.has(p));
    const busy = [...pending.values()];
    if (busy.length === 0 && (invoked >= budget || idle.length === 0)) break;
    const action = rng.int(3);
    if (action === 0 && invoked < budget && idle.length > 0) invoke(pick(rng, idle));
    else if (action === 1 && busy.length > 0) {
      const p = pick(rng, busy);
      if (!p.applied) takeEffect(p);
    } else if (busy.length > 0) {
      const p = pick(rng, busy);
      if (p.applied || rng.int(3) === 0) complete(p);
    }
  }
  // Calls still pending stay open: a crashed client.
  for (const p of pending.values()) {
    ops.push({
      f: p.f,
      key: p.key?.cls ?? '',
      value: p.f === 'read' ? null : p.value,
      status: 'open',
      call: p.call,
      ret: Number.POSITIVE_INFINITY,
    });
  }

  // Sometimes one completed result is replaced by another value.
  const completedReads = ops.filter((o) => o.status === 'ok' && o.f === 'read');
  if (completedReads.length > 0 && rng.int(2) === 0) {
    const victim = pick(rng, completedReads);
    const v = pick(rng, VALUES);
    const index = ops.indexOf(victim);
    ops[index] = { ...victim, value: v.cls };
    lines[victim.ret] = renders[victim.ret]!(v.edn);
  }

  const text = shape === 'knossos' ? `[${lines.join('\n ')}]\n` : `${lines.join('\n')}\n`;
  return { model, text, independent, ops };
}

describe('differential: parley-check against a brute-force oracle', () => {
  it('agrees on random small histories with mixed value types, keys, info and open calls', () => {
    withSeed(testSeed(20261130), (seed) => {
      const rng = new SeededRandom(seed);
      const rounds = 5000;
      const counts = { linearizable: 0, 'not linearizable': 0 };
      const disagreements: string[] = [];
      for (let round = 0; round < rounds; round++) {
        const g = generate(rng);
        if (g.ops.length === 0) continue;
        const expected = oracleLinearizable(g.model, g.ops) ? 'linearizable' : 'not linearizable';
        const { events } = parseHistory(g.text, { independent: g.independent });
        const got = checkLinearizability(getModel(g.model) as Model, events).verdict;
        if (got !== expected)
          disagreements.push(`round ${round} (${g.model}): checker ${got}, oracle ${expected}\n${g.text}`);
        else counts[got]++;
      }
      expect(disagreements.slice(0, 3)).toEqual([]);
      // Both verdicts occur often, so the comparison means something.
      expect(counts.linearizable).toBeGreaterThan(rounds / 5);
      expect(counts['not linearizable']).toBeGreaterThan(rounds / 20);
    });
  });
});
