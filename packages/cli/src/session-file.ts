/**
 * `--session <file>` (docs/cli.md, docs/sessions.md): the session token lives in
 * a file. It is read when the command starts (a missing file is a new session),
 * sent with each call as the `Parley-Session` header, and the token the node
 * answers is written back in place of the old one: a temporary file in the same
 * directory, then a rename, so a reader never sees half a token and a command
 * that fails before the node answers leaves the file as it was.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { type SessionCarrier, UsageError } from './client.js';

/** A token is at most 8,192 characters (SESSION_LIMITS.maxTokenChars); a file much larger is not one. */
export const MAX_SESSION_FILE_BYTES = 16_384;

/** Adds `--session <file>` to a command whose calls take a session. */
export function sessionFlag(command: Command): Command {
  return command.option(
    '--session <file>',
    'read-your-writes across calls and nodes: the session token is read from this file (if it exists) and the new one written back',
  );
}

/** A session kept in `file`; the token is read once and kept in memory between the command's calls. */
export function sessionFile(file: string): SessionCarrier {
  let current: string | undefined;
  return {
    async token() {
      if (current === undefined) current = await readSessionFile(file);
      return current;
    },
    async update(token) {
      if (token === current) return;
      await writeSessionFile(file, token);
      current = token;
    },
  };
}

/** The token in `file` (surrounding whitespace dropped), or '' when the file does not exist. */
export async function readSessionFile(file: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return '';
    throw new UsageError(`--session: cannot read ${file} (${code ?? String(err)})`);
  }
  if (bytes.length > MAX_SESSION_FILE_BYTES) {
    throw new UsageError(`--session: ${file} holds ${bytes.length} bytes, more than a session token can be`);
  }
  return bytes.toString('utf8').trim();
}

/** Replaces `file` with `token` (and a newline) atomically; the file is private to its user (mode 0600). */
export async function writeSessionFile(file: string, token: string): Promise<void> {
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${token}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true }).catch(() => {});
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      `--session: the call was done, but its new token could not be written to ${file} (${code ?? String(err)})`,
    );
  }
}
