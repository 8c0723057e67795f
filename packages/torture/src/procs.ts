/**
 * The processes of a run. Every child is started through this table, which
 * keeps its PID and start time in the run-state file the reaper watches, and
 * every teardown is by PID: a normal end, Ctrl-C, SIGTERM, an uncaught error
 * and the harness's own death (through the reaper) all kill exactly the PIDs
 * this run started, SIGCONT first (a stopped process cannot die) and then
 * SIGKILL, and undo the run's iptables chain and mounts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, renameSync, rmSync, type WriteStream, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { killTracked, type RunState, startTimeOf, type TrackedPid, undoRun } from './cleanup.js';

/** The built reaper (from dist/ when the harness itself runs from its sources, under vitest). */
const REAPER = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../dist/reaper.js' : './reaper.js', import.meta.url),
);

export interface SpawnOptions {
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly uid?: number;
  readonly gid?: number;
  /** Where stdout and stderr go (appended, across restarts). */
  readonly logFile: string;
  /** Called with each stdout line (stdout is also copied to the log). */
  readonly onLine?: (line: string) => void;
}

/** A child of the run. */
export class Managed {
  /** Resolves when the process exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stopped = false;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly tracked: TrackedPid,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.tracked.pid;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal` to this PID (never to a group or by name). */
  signal(signal: NodeJS.Signals): void {
    if (!this.alive) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      // it exited meanwhile
    }
    if (signal === 'SIGSTOP') this.stopped = true;
    if (signal === 'SIGCONT') this.stopped = false;
  }

  /** SIGCONT then SIGKILL, and waits for the exit. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    killTracked(this.tracked);
    this.stopped = false;
    await this.exited;
  }
}

export class ProcessTable {
  private readonly live = new Set<Managed>();
  private readonly logs = new Map<string, WriteStream>();
  private chain: string | null = null;
  private readonly mounts = new Set<string>();
  private readonly harnessStart = startTimeOf(process.pid) ?? '';
  private closed = false;
  private readonly onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`torture: ${signal}: tearing down the run\n`);
    this.teardownSync();
    process.exit(130);
  };
  private readonly onExit = () => this.teardownSync();

  private constructor(private readonly stateFile: string) {}

  /** A table whose state is kept in `stateFile`, watched by a reaper started now. */
  static open(stateFile: string): ProcessTable {
    const t = new ProcessTable(stateFile);
    t.save();
    const reaper = spawn(process.execPath, [REAPER, stateFile], { detached: true, stdio: 'ignore' });
    reaper.unref();
    process.on('SIGINT', t.onSignal);
    process.on('SIGTERM', t.onSignal);
    process.on('exit', t.onExit);
    return t;
  }

  spawn(name: string, command: string, options: SpawnOptions): Managed {
    if (this.closed) throw new Error('the run is torn down');
    const child = spawn(command, options.args, {
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      ...(options.gid === undefined ? {} : { gid: options.gid }),
    });
    if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`);
    const m = new Managed(name, child, { pid: child.pid, start: startTimeOf(child.pid) ?? '', name });
    this.live.add(m);
    this.save();
    const log = this.log(options.logFile);
    log.write(`--- ${new Date().toISOString()} ${name} pid ${child.pid}: ${command} ${options.args.join(' ')}\n`);
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      log.write(chunk);
      if (!options.onLine) return;
      buffered += chunk.toString('utf8');
      for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
        options.onLine(buffered.slice(0, i));
        buffered = buffered.slice(i + 1);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => log.write(chunk));
    child.once('exit', (code, signal) => {
      log.write(`--- ${new Date().toISOString()} ${name} pid ${child.pid} exited (${signal ?? code})\n`);
      this.live.delete(m);
      if (!this.closed) this.save();
    });
    return m;
  }

  /** Records the run's iptables chain, so every teardown removes it. */
  setChain(chain: string): void {
    this.chain = chain;
    this.save();
  }

  addMount(path: string): void {
    this.mounts.add(path);
    this.save();
  }

  removeMount(path: string): void {
    this.mounts.delete(path);
    this.save();
  }

  /** Kills every live child (by PID), removes the chain and mounts, deletes the state file. */
  async close(): Promise<void> {
    if (this.closed) return;
    const waits = [...this.live].map((m) => m.kill());
    await Promise.all(waits);
    this.teardownSync();
    await Promise.all([...this.logs.values()].map((l) => new Promise<void>((r) => l.end(() => r()))));
  }

  private teardownSync(): void {
    if (this.closed) return;
    this.closed = true;
    undoRun(this.state());
    this.live.clear();
    rmSync(this.stateFile, { force: true });
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    process.off('exit', this.onExit);
  }

  private log(path: string): WriteStream {
    let l = this.logs.get(path);
    if (l === undefined) {
      l = createWriteStream(path, { flags: 'a' });
      this.logs.set(path, l);
    }
    return l;
  }

  private state(): RunState {
    return {
      harnessPid: process.pid,
      harnessStart: this.harnessStart,
      pids: [...this.live].map((m) => m.tracked),
      chain: this.chain,
      mounts: [...this.mounts],
    };
  }

  private save(): void {
    const tmp = `${this.stateFile}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.state()));
    renameSync(tmp, this.stateFile);
  }
}
