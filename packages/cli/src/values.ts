/**
 * JSON flag values as people pass them: inline (`-v '{"a":1}'`), from a file
 * (`-v @value.json`, as `consul kv put k @file`), or from standard input
 * (`-v -`, as `etcdctl put k < file`). A file or stdin holds one JSON value;
 * it is the way past the kernel's 128 KiB limit on one argument. Input is
 * bounded (MAX_VALUE_INPUT_BYTES); the node then applies its 1 MiB value limit.
 * JSON never starts with `@` or is `-`, so neither form shadows a literal.
 */
import { open } from 'node:fs/promises';
import { UsageError } from './client.js';

/** Bytes read from a file or stdin at most: well above the node's 1 MiB value limit (whitespace is dropped). */
export const MAX_VALUE_INPUT_BYTES = 16 * 1_048_576;

async function readBounded(chunks: AsyncIterable<Buffer | string>, source: string, flag: string): Promise<string> {
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of chunks) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    bytes += b.length;
    if (bytes > MAX_VALUE_INPUT_BYTES) {
      throw new UsageError(
        `${flag}: ${source} holds more than ${MAX_VALUE_INPUT_BYTES} bytes (values are at most 1 MiB)`,
      );
    }
    parts.push(b);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** The text of `text` as given to `flag`: itself, a file's contents for `@path`, or stdin for `-`. */
export async function valueText(
  flag: string,
  text: string,
  stdin: AsyncIterable<Buffer | string> = process.stdin,
): Promise<string> {
  if (text === '-') return readBounded(stdin, 'standard input', flag);
  if (!text.startsWith('@')) return text;
  const file = text.slice(1);
  if (file === '') throw new UsageError(`${flag} @FILE needs a file name (or - for standard input)`);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  try {
    return await readBounded(handle.createReadStream({ autoClose: false }), file, flag);
  } finally {
    await handle.close();
  }
}

/** Parses a JSON flag value (a string is written '"text"'), read from a file or stdin first (valueText). */
export async function readJson(flag: string, text: string): Promise<unknown> {
  const source = text === '-' ? 'standard input' : text.startsWith('@') ? text.slice(1) : undefined;
  const body = await valueText(flag, text);
  const t = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
  try {
    return JSON.parse(t);
  } catch {
    const where = source === undefined ? '' : ` (read from ${source})`;
    throw new UsageError(
      `${flag} must be JSON${where} (a string is written as '"text"'; @FILE reads a file, - reads stdin): ${t.slice(0, 80)}`,
    );
  }
}

/** How a JSON flag may be given, for help texts. */
export const VALUE_FORMS = 'JSON, @FILE or - for stdin; a string is \'"text"\'';
export const VALUE_HELP = `the value: ${VALUE_FORMS}`;
