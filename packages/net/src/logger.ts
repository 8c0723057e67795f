/** Where the transports report what they dropped, refused or could not reach. */
export interface NetLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** Drops everything. */
export const silentLogger: NetLogger = {
  debug() {},
  info() {},
  warn() {},
};

/** Warnings to stderr as one JSON line each; debug and info are dropped. */
export const stderrLogger: NetLogger = {
  debug() {},
  info() {},
  warn(message, fields) {
    process.stderr.write(`${JSON.stringify({ level: 'warn', component: 'parley-net', message, ...fields })}\n`);
  },
};

/** Renders an unknown thrown value for a log line. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
