/**
 * Planted bugs for the tests that show the oracle and the checkers fire: a
 * backend wrapper that drops the version compare of conditional writes (a
 * CAS becomes a blind write), as a careless backend would.
 */
import type { Operation, OpResult, StrongBackend } from '@parley/coord';
import type { StrongNode } from './backends.js';

/** `backend` with `ifVersion` removed from every set and delete. */
export function dropVersionCompare(backend: StrongBackend): StrongBackend {
  const strip = (op: Operation): Operation => {
    if ((op.type === 'set' || op.type === 'delete') && op.ifVersion !== undefined) {
      const { ifVersion: _dropped, ...rest } = op;
      return rest as Operation;
    }
    return op;
  };
  return {
    kind: backend.kind,
    write: (op, o): Promise<OpResult> => backend.write(strip(op), o),
    read: (op, o) => backend.read(op, o),
    watch: (f, from, cb) => backend.watch(f, from, cb),
    usage: () => backend.usage(),
    close: () => backend.close(),
  };
}

/** A node whose strong namespaces drop `ifVersion` from `set` (the same plant at the API level). */
export function dropVersionCompareOnNode(node: StrongNode): StrongNode {
  return {
    locks: (ns) => node.locks(ns),
    close: () => node.close(),
    strong: (name) => {
      const ns = node.strong(name);
      return Object.assign(Object.create(ns), {
        set: (key: string, value: Parameters<typeof ns.set>[1], options: Parameters<typeof ns.set>[2] = {}) => {
          const { ifVersion: _dropped, ...rest } = options;
          return ns.set(key, value, rest);
        },
      });
    },
  };
}
