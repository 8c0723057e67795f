/**
 * `raftStrong(options)`: the built-in strong side, a Raft group of Parley
 * nodes (module.ts), as the provider `createNode({ strong })` takes. It is
 * the default: `createNode()` runs a group of one.
 */
import type { StrongProvider } from '../strong-side.js';
import { createStrongModule } from './module.js';
import type { StrongOptions } from './options.js';

/** The built-in Raft strong side with these options (voters, timing, snapshots, call bounds). */
export function raftStrong(options: StrongOptions = {}): StrongProvider {
  return { kind: 'raft', start: (ctx) => createStrongModule(ctx, options) };
}
