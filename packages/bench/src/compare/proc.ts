/**
 * Counts for the side-by-side run that wall time on a shared 2-core machine
 * does not blur: CPU time of whole processes (utime + stime from
 * /proc/<pid>/stat, every thread included) and, when strace is installed,
 * the socket write syscalls those processes make.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Kernel clock ticks per second (USER_HZ), the unit of utime and stime. */
const TICKS_PER_SECOND = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

/** utime + stime (clock ticks) from the text of /proc/<pid>/stat. */
export function parseProcStat(text: string): { utime: number; stime: number } {
  // Field 2 (comm) is in parentheses and may hold spaces and parentheses: fields 3.. follow the last ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) throw new Error('not a /proc/<pid>/stat line');
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // f[0] is field 3 (state); utime is field 14, stime field 15.
  const utime = Number(f[11]);
  const stime = Number(f[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('no utime/stime in /proc/<pid>/stat');
  return { utime, stime };
}

/** CPU time (user + system, ms) used so far by each process, summed. */
export function cpuMsOf(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const { utime, stime } = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    ticks += utime + stime;
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** The write syscalls counted, as strace names them. */
export const WRITE_SYSCALLS = ['write', 'writev', 'sendmsg', 'sendto', 'sendmmsg'] as const;

/**
 * Socket writes in an `strace -f -yy -o FILE` trace: calls of WRITE_SYSCALLS
 * whose fd is a socket (TCP, UDP, UNIX); file and pipe writes are left out.
 * A call split by another thread counts once (its `<unfinished ...>` line).
 */
export function countSocketWrites(trace: string): number {
  const re = new RegExp(`^(?:\\d+\\s+)?(?:${WRITE_SYSCALLS.join('|')})\\(\\d+<(?:TCP|TCPv6|UDP|UDPv6|UNIX|socket:)`);
  let n = 0;
  for (const line of trace.split('\n')) if (re.test(line)) n++;
  return n;
}

/** Whether `strace` can be run here. */
export function hasStrace(): boolean {
  const r = spawnSync('strace', ['-V'], { stdio: 'ignore' });
  return r.status === 0;
}

/**
 * strace attached to running processes (all their threads), writing one
 * trace file per process; `stop()` detaches and returns the socket writes
 * counted in each, in the order of the pids.
 */
export class SyscallCounter {
  private constructor(
    private readonly procs: ChildProcess[],
    private readonly files: string[],
  ) {}

  static async attach(pids: readonly number[], fileOf: (pid: number) => string): Promise<SyscallCounter> {
    const procs: ChildProcess[] = [];
    const files: string[] = [];
    for (const pid of pids) {
      const file = fileOf(pid);
      const p = spawn(
        'strace',
        [
          '-f',
          '-yy',
          '-s',
          '0',
          '-e',
          `trace=${WRITE_SYSCALLS.join(',')}`,
          '-e',
          'signal=none',
          '-o',
          file,
          '-p',
          String(pid),
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      // strace says "Process N attached" on stderr once it traces the process.
      await new Promise<void>((resolve, reject) => {
        let err = '';
        const timer = setTimeout(() => reject(new Error(`strace did not attach to ${pid}: ${err}`)), 10_000);
        p.once('exit', (code) => {
          clearTimeout(timer);
          // A no-op once attached: a settled promise ignores it.
          reject(new Error(`strace exited with ${code} before attaching to ${pid}: ${err}`));
        });
        p.stderr?.on('data', (d: Buffer) => {
          err += d.toString();
          if (err.includes('attached')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      procs.push(p);
      files.push(file);
    }
    // Threads are attached one by one after the first line; give the rest a moment.
    await new Promise((r) => setTimeout(r, 300));
    return new SyscallCounter(procs, files);
  }

  async stop(): Promise<number[]> {
    // strace detaches from its tracees (they run on) and exits on SIGTERM; wait until it has.
    for (const p of this.procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
    const end = Date.now() + 30_000;
    while (this.procs.some((p) => p.exitCode === null && p.signalCode === null)) {
      if (Date.now() > end) throw new Error('strace did not exit within 30 s of SIGTERM');
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.files.map((f) => countSocketWrites(readFileSync(f, 'utf8')));
  }
}
