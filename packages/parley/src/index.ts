/**
 * parley — Parley in one install. This entry point is the embedding API:
 * `createNode` and its options and handles (of `@parley/node`), and the
 * contracts of `@parley/interface`: the typed errors with their stable codes
 * (`ParleyError`, `isParleyError`, `ERROR_STATUS`, …), `JsonValue`, the clock,
 * transport and storage seams. The other doors are subpaths: `parley/http`
 * (the HTTP server), `parley/testing` (your code on simulated nodes),
 * `parley/cli`, `parley/mcp`, `parley/etcd`, `parley/check`; the `parley`
 * command comes with it.
 *
 * @example
 * ```ts
 * import { createNode, isParleyError } from 'parley';
 *
 * const node = await createNode(); // data in ./.parley, loopback only
 * await node.eventual('deploy').set('rollout', { pct: 25 }, { ttl: 600 });
 * const cfg = await node.strong('jobs').set('cfg', { pct: 25 });
 * try {
 *   await node.strong('jobs').set('cfg', { pct: 50 }, { ifVersion: cfg.version + 1 });
 * } catch (err) {
 *   if (!isParleyError(err, 'version_mismatch')) throw err;
 * }
 * await node.close();
 * ```
 */
export * from '@parley/interface';
export * from '@parley/node';
