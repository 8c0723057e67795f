/** Command-line options of bench:compare. */
import { InvalidArgumentError } from '@parley/interface';

export const WORKLOADS = [
  'strong',
  'writes',
  'cas',
  'locks',
  'claims',
  'failover',
  'eventual',
  'local',
  'propagation',
] as const;

export interface CompareOptions {
  only: Set<string>;
  reps: number;
  trials: number;
  seconds: number;
  writes: number;
  /** Nodes of the propagation run, the writer included. */
  nodes: number;
  /** Warm-up before timing: this many operations of the same workload, or `warmSeconds`, whichever comes first. */
  warmOps: number;
  warmSeconds: number;
  /** Also write the rows (and the load average) to this file. */
  json?: string;
  etcd?: string;
  out?: string;
  /** Parley's processes use the lean channel (`--no-lean`: libp2p streams, for an A/B of the two carriers). */
  lean: boolean;
}

export function parseOptions(argv: readonly string[]): CompareOptions {
  const o: CompareOptions = {
    only: new Set(['strong', 'eventual']),
    reps: 3,
    trials: 20,
    seconds: 3,
    writes: 200,
    nodes: 20,
    warmOps: 2_000,
    warmSeconds: 10,
    lean: true,
  };
  const num = (flag: string, v: string | undefined, min: number, max: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`${flag} must be an integer in ${min}..${max}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    switch (a) {
      case '--only': {
        const picked = (v ?? '').split(',').filter(Boolean);
        const bad = picked.filter((w) => !(WORKLOADS as readonly string[]).includes(w));
        if (picked.length === 0 || bad.length > 0)
          throw new InvalidArgumentError(`--only takes ${WORKLOADS.join(',')}`);
        o.only = new Set(picked);
        i++;
        break;
      }
      case '--reps':
        o.reps = num(a, v, 1, 20);
        i++;
        break;
      case '--trials':
        o.trials = num(a, v, 1, 50);
        i++;
        break;
      case '--seconds':
        o.seconds = num(a, v, 1, 60);
        i++;
        break;
      case '--writes':
        o.writes = num(a, v, 10, 10_000);
        i++;
        break;
      case '--nodes':
        o.nodes = num(a, v, 2, 40);
        i++;
        break;
      case '--warm-ops':
        o.warmOps = num(a, v, 1, 100_000);
        i++;
        break;
      case '--warm-seconds':
        o.warmSeconds = num(a, v, 1, 120);
        i++;
        break;
      case '--json':
        if (!v) throw new InvalidArgumentError('--json takes a file name');
        o.json = v;
        i++;
        break;
      case '--etcd':
        o.etcd = v;
        i++;
        break;
      case '--out':
        o.out = v;
        i++;
        break;
      case '--no-lean':
        o.lean = false;
        break;
      default:
        throw new InvalidArgumentError(`unknown option ${a}`);
    }
  }
  return o;
}
