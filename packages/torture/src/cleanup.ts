/**
 * What a run leaves on the machine besides its files, and how to undo it: the
 * processes it started (by PID, checked against their start time so a reused
 * PID is never signalled), its iptables chain and its tmpfs mounts. Both the
 * harness (on exit, Ctrl-C or error) and the reaper (when the harness itself
 * was killed) undo a run through these functions.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** A process of the run: its PID and its start time in clock ticks since boot (/proc/<pid>/stat field 22). */
export interface TrackedPid {
  readonly pid: number;
  readonly start: string;
  readonly name: string;
}

/** What the reaper reads: everything to undo if the harness disappears. */
export interface RunState {
  readonly harnessPid: number;
  readonly harnessStart: string;
  readonly pids: readonly TrackedPid[];
  readonly chain: string | null;
  readonly mounts: readonly string[];
}

/** The start time of `pid`, or undefined when no such process exists. */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields start after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19];
  } catch {
    return undefined;
  }
}

/** True while `pid` is the process that was started at `start`. */
export function isSameProcess(p: { pid: number; start: string }): boolean {
  return startTimeOf(p.pid) === p.start;
}

/** SIGCONT (a stopped process cannot die of SIGKILL before it runs) then SIGKILL, by PID, if it is still that process. */
export function killTracked(p: { pid: number; start: string }): void {
  if (!isSameProcess(p)) return;
  for (const signal of ['SIGCONT', 'SIGKILL'] as const) {
    try {
      process.kill(p.pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Runs a command, returning false (never throwing) when it fails. */
export function tryRun(cmd: string, args: readonly string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Unhooks and deletes the run's iptables chain (each step may already be undone). */
export function removeChain(chain: string): void {
  while (tryRun('iptables', ['-w', '5', '-D', 'OUTPUT', '-j', chain])) {
    // a chain may have been hooked more than once
  }
  tryRun('iptables', ['-w', '5', '-F', chain]);
  tryRun('iptables', ['-w', '5', '-X', chain]);
}

/** Unmounts a tmpfs of the run (lazily: a process that still holds a file there keeps it until it exits). */
export function unmount(path: string): void {
  tryRun('umount', ['-l', path]);
}

/** Undoes everything `state` lists. */
export function undoRun(state: RunState): void {
  for (const p of state.pids) killTracked(p);
  if (state.chain !== null) removeChain(state.chain);
  for (const m of state.mounts) unmount(m);
}
