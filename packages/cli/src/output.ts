/**
 * `--output json` prints the response's `data` as JSON; `--output table` prints it for a person;
 * `--output value` (or `--print-value-only`) prints only the value of a `get` (one JSON line) or the
 * values of a `list` (one JSON line each), so `get … --output value | set … -v -` copies a value.
 */

export const OUTPUT_FORMATS = ['json', 'table', 'value'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

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

function cell(value: unknown, maxCell: number): string {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
  return text.length > maxCell ? `${text.slice(0, maxCell - 1)}…` : text;
}

/** Columns padded to their widest cell, a header row first; rows of a listing cut cells at 60 characters. */
export function table(headers: string[], rows: unknown[][], maxCell = MAX_CELL): string {
  const cells = [headers, ...rows.map((row) => row.map((v) => cell(v, maxCell)))];
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

/** A record as FIELD / VALUE lines, nothing cut: one record is what a person asked to see. */
export function fields(record: Record<string, unknown>): string {
  return table(
    ['FIELD', 'VALUE'],
    Object.entries(record).map(([k, v]) => [k, v]),
    Number.POSITIVE_INFINITY,
  );
}

/** `--output value`: the `value` of a record, or each item's of a page, one compact JSON line each. */
function values(data: unknown): string {
  const d = data as { value?: unknown; items?: Array<{ value?: unknown }> };
  if (Array.isArray(d.items)) return d.items.map((item) => JSON.stringify(item.value)).join('\n');
  return JSON.stringify(d.value);
}

/** Prints `data` in the chosen format; `human` renders it for a person (defaults to fields()). */
export function print(out: Out, data: unknown, human?: (data: never) => string): void {
  if (out.format === 'json') out.stdout(JSON.stringify(data, null, 2));
  else if (out.format === 'value') {
    const text = values(data);
    if (text !== '') out.stdout(text);
  } else out.stdout(human ? human(data as never) : fields(data as Record<string, unknown>));
}

export function entryRows(items: Array<Record<string, unknown>>): string {
  return table(
    ['KEY', 'VERSION', 'UPDATED', 'EXPIRES', 'VALUE'],
    items.map((e) => [e.key, e.version, e.updated_at, e.expires_at, e.value]),
  );
}
