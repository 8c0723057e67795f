/**
 * The node's strong API over any StrongBackend (its public faces):
 * `strong(ns)`, `locks(ns)` and the namespace usage `node.status()` reports.
 * The built-in Raft module and the etcd backend share them, so every door
 * (TypeScript, HTTP, CLI, MCP) behaves the same on either.
 */
import type { StrongBackend } from '@parley/coord';
import type { Locks, NamespaceStatus, StrongNamespace } from '../api.js';
import type { NodeContext } from '../context.js';
import { LocksImpl } from './locks.js';
import { StrongNamespaceImpl } from './namespace.js';
import { PipelinedReleases } from './pipelined-releases.js';

export interface StrongFaces {
  strong(namespace: string): StrongNamespace;
  locks(namespace: string): Locks;
  /** Strong namespaces with entries: keys and value bytes. */
  status(): Promise<NamespaceStatus[]>;
  /** The pipelined lock releases every `locks(ns)` face shares. */
  readonly releases: PipelinedReleases;
}

export function strongFaces(ctx: NodeContext, backend: StrongBackend): StrongFaces {
  const releases = new PipelinedReleases();
  return {
    releases,
    strong: (namespace) =>
      new StrongNamespaceImpl(
        namespace,
        backend,
        () => new Promise((resolve) => ctx.scheduler.after(0, resolve)),
        ctx.clock,
      ),
    locks: (namespace) => new LocksImpl(namespace, backend, ctx, releases),
    async status() {
      const usage = await backend.usage();
      return usage
        .filter((u) => u.keys > 0)
        .map((u) => ({ name: u.name, kind: 'strong' as const, keys: u.keys, bytes: u.bytes, lastAntiEntropyAt: null }));
    },
  };
}
