/**
 * The document engines (Yjs and Automerge values, `rich.ts`) load on first
 * use, so a node that never opens a document does not pay Automerge's
 * start-up (about 140 ms on the reference machine).
 */
import type * as Rich from './rich.js';

let loading: Promise<typeof Rich> | undefined;

/** The rich-values module, loaded once per process. */
export function richModule(): Promise<typeof Rich> {
  if (!loading) {
    const p = import('./rich.js');
    loading = p;
    p.catch(() => {
      if (loading === p) loading = undefined;
    });
  }
  return loading;
}

/**
 * Loads the document engines (Yjs and Automerge support) now rather than at
 * the first `yjs()` or `automerge()` call: for a process that wants its first
 * document call fast, and for a simulated run, whose outcome must not depend
 * on how long a real module read takes in the middle of simulated time.
 */
export async function loadDocumentEngines(): Promise<void> {
  await richModule();
}
