/**
 * What a strong call observes into its caller's session (docs/sessions.md,
 * "Strong namespaces"): the index its answer came with, once it succeeded.
 */
import { type OpResult, type StrongSessionRef, unwrap } from '@parley/coord';
import type { IndexedResult } from './wire.js';

/**
 * The value of an answer, observed into the session when the call succeeded:
 * a result, or `key_not_found` (a get or delete that found no entry has seen
 * the state it was answered from). Any other error leaves the session as it was.
 */
export function observed(answer: IndexedResult, session: StrongSessionRef | undefined): OpResult {
  const r = answer.result;
  if (session !== undefined && (r.ok || r.error.code === 'key_not_found')) session.observeStrong(answer.index);
  return unwrap(r);
}
