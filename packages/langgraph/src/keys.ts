/**
 * Where the saver keeps what: one strong namespace per thread (named from a
 * hash of the thread id), an index namespace listing the threads, and keys
 * inside a thread's namespace that sort a checkpoint namespace's checkpoints
 * by id. Components are percent-encoded, so no component holds the `:`
 * separator and keys of one checkpoint namespace share their prefix.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '@parley/interface';

/** Parley's namespace grammar; the thread suffix takes 33 of its 128 characters. */
const PREFIX_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,94}$/;
const MAX_THREAD_ID = 512;
const MAX_KEY = 1024;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
const CONTROL_RE = /[\u0000-\u001f\u007f]/;

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export function checkPrefix(prefix: string): string {
  if (typeof prefix !== 'string' || !PREFIX_RE.test(prefix)) {
    throw new InvalidArgumentError('namespace must be 1..95 letters, digits, ".", "_" or "-", starting alphanumeric', {
      namespace: prefix,
    });
  }
  return prefix;
}

/** A thread id usable as a lock key and an index key: a string of 1..512 characters without control characters. */
export function checkThreadId(threadId: unknown): string {
  if (typeof threadId !== 'string' || threadId.length === 0 || threadId.length > MAX_THREAD_ID) {
    throw new InvalidArgumentError(`thread_id must be a string of 1..${MAX_THREAD_ID} characters`);
  }
  if (CONTROL_RE.test(threadId)) throw new InvalidArgumentError('thread_id must not contain control characters');
  return threadId;
}

export function checkId(what: string, id: unknown, allowEmpty = false): string {
  if (typeof id !== 'string' || (!allowEmpty && id.length === 0)) {
    throw new InvalidArgumentError(`${what} must be a${allowEmpty ? '' : ' non-empty'} string`);
  }
  return id;
}

/** The strong namespace holding one thread's entries. */
export function threadNamespace(prefix: string, threadId: string): string {
  return `${prefix}-${sha256Hex(threadId).slice(0, 32)}`;
}

/** A short hash of a checkpoint namespace, for list filters of bounded length. */
export function nsHash(checkpointNs: string): string {
  return sha256Hex(checkpointNs).slice(0, 16);
}

const enc = encodeURIComponent;

function bounded(key: string): string {
  if (key.length > MAX_KEY) {
    throw new InvalidArgumentError(`checkpoint key too long (${key.length} > ${MAX_KEY} characters)`, {
      length: key.length,
    });
  }
  return key;
}

export function checkpointKey(checkpointNs: string, checkpointId: string): string {
  return bounded(`c:${enc(checkpointNs)}:${enc(checkpointId)}`);
}

export function blobKey(checkpointNs: string, channel: string, version: string | number): string {
  return bounded(`b:${enc(checkpointNs)}:${enc(channel)}:${enc(String(version))}`);
}

export function writesKey(checkpointNs: string, checkpointId: string, taskId: string): string {
  return bounded(`w:${enc(checkpointNs)}:${enc(checkpointId)}:${enc(taskId)}`);
}

/** A filter-grammar string literal. */
export function literal(value: string | number | boolean | null): string {
  if (typeof value === 'string') return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  return JSON.stringify(value);
}
