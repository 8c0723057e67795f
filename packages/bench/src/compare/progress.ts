/** A one-line progress bar on stderr (redrawn in place on a TTY, one line per step otherwise). */
export class Progress {
  private done = 0;
  private readonly t0 = Date.now();
  constructor(private readonly total: number) {}

  step(label: string): void {
    this.done = Math.min(this.total, this.done + 1);
    const width = 24;
    const filled = Math.round((width * this.done) / this.total);
    const secs = Math.round((Date.now() - this.t0) / 1000);
    const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.done}/${this.total} ${secs}s ${label}`;
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${line}`);
    else process.stderr.write(`${line}\n`);
  }

  end(): void {
    if (process.stderr.isTTY) process.stderr.write('\n');
  }
}
