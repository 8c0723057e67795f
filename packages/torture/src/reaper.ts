/**
 * The reaper: a detached process started by the harness with the path of its
 * run-state file. Once a second it checks that the harness is alive; when the
 * harness is gone (killed with SIGKILL, say) it undoes the run — the PIDs it
 * started, its iptables chain, its mounts — and exits. When the harness tears
 * down normally it deletes the state file, and the reaper exits too.
 */
import { readFileSync } from 'node:fs';
import { isSameProcess, type RunState, undoRun } from './cleanup.js';

const POLL_MS = 1_000;

function readState(path: string): RunState | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as RunState;
  } catch {
    return undefined;
  }
}

const path = process.argv[2];
if (path === undefined) {
  process.stderr.write('usage: reaper <run-state.json>\n');
  process.exit(2);
}
let last = readState(path);
const timer = setInterval(() => {
  const state = readState(path);
  if (state === undefined) {
    // Deleted: the harness cleaned up. (A torn read keeps the last good state.)
    if (last !== undefined && !isSameProcess({ pid: last.harnessPid, start: last.harnessStart })) undoRun(last);
    clearInterval(timer);
    return;
  }
  last = state;
  if (!isSameProcess({ pid: state.harnessPid, start: state.harnessStart })) {
    undoRun(state);
    clearInterval(timer);
  }
}, POLL_MS);
