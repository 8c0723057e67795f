/** `--output json` prints the response's `data` as JSON; `--output table` prints it for a person. */

export type OutputFormat = 'json' | 'table';

export interface Out {
  format: OutputFormat;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const processOut = (format: OutputFormat): Out => ({
  format,
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
});

const MAX_CELL = 60;

function cell(value: unknown): string {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text;
}

/** Columns padded to their widest cell, a header row first. */
export function table(headers: string[], rows: unknown[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(cell))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells
    .map((row) =>
      row
        .map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A record as FIELD / VALUE lines. */
export function fields(record: Record<string, unknown>): string {
  return table(
    ['FIELD', 'VALUE'],
    Object.entries(record).map(([k, v]) => [k, v]),
  );
}

/** Prints `data` in the chosen format; `human` renders it for a person (defaults to fields()). */
export function print(out: Out, data: unknown, human?: (data: never) => string): void {
  if (out.format === 'json') out.stdout(JSON.stringify(data, null, 2));
  else out.stdout(human ? human(data as never) : fields(data as Record<string, unknown>));
}

export function entryRows(items: Array<Record<string, unknown>>): string {
  return table(
    ['KEY', 'VERSION', 'UPDATED', 'EXPIRES', 'VALUE'],
    items.map((e) => [e.key, e.version, e.updated_at, e.expires_at, e.value]),
  );
}
