/**
 * The first hour at the `parley` command line: values from a file or stdin
 * (past the 128 KiB argument limit), value-only output, a single entry shown
 * uncut, prefix listing, the note when a write shortens a TTL, help with
 * global options, required options and examples, and shell completion.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type CliResult, PARLEY_BIN, parley, type Started, startParley } from './http-harness.js';

let p: Started;
let env: Record<string, string>;
let dir: string;
const cli = (...args: string[]) => parley(args, env);

/** The CLI with `input` on its stdin. */
function cliWithStdin(input: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PARLEY_BIN, ...args], {
      env: { ...process.env, PARLEY_API_TOKEN: undefined, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** A JSON value whose text is `bytes` long or more. */
const bigValue = (bytes: number, tag: string) => ({ tag, blob: 'x'.repeat(bytes) });

beforeAll(async () => {
  p = await startParley();
  env = { PARLEY_ENDPOINT: p.url };
  dir = await mkdtemp(join(tmpdir(), 'parley-cli-values-'));
});
afterAll(async () => {
  await p?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('values from a file and from stdin', () => {
  it('-v @FILE writes a 300 KiB value (more than one argument may hold)', async () => {
    const value = bigValue(300 * 1024, 'file');
    const file = join(dir, 'big.json');
    await writeFile(file, JSON.stringify(value, null, 2));
    const set = await cli('state', 'set', '-n', 'v1', '-k', 'big', '-v', `@${file}`);
    expect(set.code, set.stderr).toBe(0);
    const get = await cli('--output', 'json', 'state', 'get', '-n', 'v1', '-k', 'big');
    expect(JSON.parse(get.stdout).value).toEqual(value);
  });

  it('-v - reads standard input; --state and --metadata take the same forms', async () => {
    const value = bigValue(200 * 1024, 'stdin');
    const set = await cliWithStdin(JSON.stringify(value), 'replicated', 'set', '-n', 'v1', '-k', 'piped', '-v', '-');
    expect(set.code, set.stderr).toBe(0);
    const get = await cli('--output', 'json', 'replicated', 'get', '-n', 'v1', '-k', 'piped');
    expect(JSON.parse(get.stdout).value).toEqual(value);
    const meta = join(dir, 'meta.json');
    await writeFile(meta, '{"job":"build-7"}');
    const lock = await cli(
      '--output',
      'json',
      'lock',
      'acquire',
      '-n',
      'v1',
      '-k',
      'l',
      '--owner',
      'a',
      '-m',
      `@${meta}`,
    );
    expect(lock.code, lock.stderr).toBe(0);
    expect(JSON.parse(lock.stdout).metadata).toEqual({ job: 'build-7' });
  });

  it('a missing file or a file that is not JSON is a usage error (exit 2) that names it; nothing is written', async () => {
    const missing = await cli('state', 'set', '-n', 'v1', '-k', 'nope', '-v', `@${join(dir, 'absent.json')}`);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('absent.json');
    expect(missing.stderr).toContain('ENOENT');
    const text = join(dir, 'text.txt');
    await writeFile(text, 'not json');
    const bad = await cli('state', 'set', '-n', 'v1', '-k', 'nope', '-v', `@${text}`);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('read from');
    expect((await cli('state', 'get', '-n', 'v1', '-k', 'nope')).code).toBe(3);
  });
});

describe('value-only output and uncut entries', () => {
  it('--print-value-only and --output value print the value as one JSON line; list prints one per item', async () => {
    await api(p.url, 'POST', '/api/v1/distributed-state/v2/a', { body: { value: { n: 1 } } });
    await api(p.url, 'POST', '/api/v1/distributed-state/v2/b', { body: { value: 'two' } });
    const one = await cli('state', 'get', '-n', 'v2', '-k', 'a', '--print-value-only');
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toBe('{"n":1}\n');
    const list = await cli('--output', 'value', 'state', 'list', '-n', 'v2', '--sort-by', 'key');
    expect(list.stdout).toBe('{"n":1}\n"two"\n');
    // Round trip: a value printed this way is a valid -v - input.
    const copy = await cliWithStdin(one.stdout, 'state', 'set', '-n', 'v2', '-k', 'copy', '-v', '-');
    expect(copy.code, copy.stderr).toBe(0);
    expect((await cli('state', 'get', '-n', 'v2', '-k', 'copy', '--output', 'value')).stdout).toBe('{"n":1}\n');
  });

  it('--output value on a write is refused before the request (exit 2, nothing written)', async () => {
    const r = await cli('--output', 'value', 'state', 'set', '-n', 'v2', '-k', 'w', '-v', '1');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--output value');
    expect((await cli('state', 'get', '-n', 'v2', '-k', 'w')).code).toBe(3);
  });

  it("a single get's table shows the whole value; a listing cuts long cells", async () => {
    const long = { text: 'y'.repeat(500) };
    await api(p.url, 'POST', '/api/v1/distributed-state/v3/long', { body: { value: long } });
    const get = await cli('state', 'get', '-n', 'v3', '-k', 'long');
    expect(get.stdout).toContain(JSON.stringify(long));
    const list = await cli('state', 'list', '-n', 'v3');
    expect(list.stdout).not.toContain(JSON.stringify(long));
    expect(list.stdout).toContain('…');
  });
});

describe('list --prefix', () => {
  it('lists only keys that start with the prefix (case-sensitive), strong and replicated', async () => {
    for (const key of ['job-1', 'job-2', 'Job-3', 'my-job-4']) {
      await api(p.url, 'POST', `/api/v1/distributed-state/v4/${key}`, { body: { value: 1 } });
      await api(p.url, 'POST', `/api/v1/replicated/v4/${key}`, { body: { value: 1 } });
    }
    await Promise.all(
      ['state', 'replicated'].map(async (door) => {
        const [r, q, both] = await Promise.all([
          cli('--output', 'json', door, 'list', '-n', 'v4', '--prefix', 'job-'),
          // -q stays a case-insensitive substring match, and combines with --prefix.
          cli('--output', 'json', door, 'list', '-n', 'v4', '-q', 'JOB'),
          cli('--output', 'json', door, 'list', '-n', 'v4', '--prefix', 'job-', '-q', '2'),
        ]);
        expect(r.code, r.stderr).toBe(0);
        expect(
          JSON.parse(r.stdout)
            .items.map((e: { key: string }) => e.key)
            .sort(),
        ).toEqual(['job-1', 'job-2']);
        expect(q.stdout.match(/"key"/g)?.length).toBe(4);
        expect(JSON.parse(both.stdout).items.map((e: { key: string }) => e.key)).toEqual(['job-2']);
      }),
    );
  });
});

describe('TTL: every entry is a lease', () => {
  it('a write without -t that shortens a longer TTL says so on stderr; with -t, or when it does not shorten, it says nothing', async () => {
    await api(p.url, 'POST', '/api/v1/distributed-state/v5/k', { body: { value: 1, ttl_seconds: 86400 } });
    const reset = await cli('state', 'set', '-n', 'v5', '-k', 'k', '-v', '2');
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stderr).toContain('the TTL went from 86400 s to 3600 s');
    expect(reset.stderr).toContain('-t 86400');
    const again = await cli('state', 'set', '-n', 'v5', '-k', 'k', '-v', '3');
    expect(again.stderr).toBe('');
    const kept = await cli('--output', 'json', 'state', 'set', '-n', 'v5', '-k', 'k', '-v', '4', '-t', '86400');
    expect(kept.stderr).toBe('');
    expect(JSON.parse(kept.stdout).ttl_seconds).toBe(86400);
    await api(p.url, 'POST', '/api/v1/replicated/v5/r', { body: { value: 1, ttl_seconds: 7200 } });
    expect((await cli('replicated', 'set', '-n', 'v5', '-k', 'r', '-v', '2')).stderr).toContain(
      'the TTL went from 7200 s to 3600 s',
    );
  });
});

describe('help and completion', () => {
  it("a subcommand's help shows the global options, marks required options, and ends with an example", async () => {
    const { buildProgram } = await import('@parley/cli');
    const set = buildProgram()
      .commands.find((c) => c.name() === 'distributed-state')
      ?.commands.find((c) => c.name() === 'set');
    let help = '';
    set?.configureOutput({ writeOut: (text) => (help += text) });
    set?.outputHelp();
    const r = { stdout: help };
    expect(r.stdout).toMatch(/Global Options:[\s\S]*--endpoint/);
    expect(r.stdout).toMatch(/--namespace <ns>\s+\(required\)/);
    expect(r.stdout).not.toMatch(/--ttl <seconds>\s+\(required\)/);
    expect(r.stdout).toMatch(/Example:\n {2}parley state set /);
  });

  it('every command that does something has an example', async () => {
    const { buildProgram } = await import('@parley/cli');
    const { EXAMPLES, commandPath } = await import('@parley/cli');
    const leaves: string[] = [];
    const walk = (c: ReturnType<typeof buildProgram>) => {
      for (const sub of c.commands) {
        if (sub.commands.length === 0) leaves.push(commandPath(sub));
        walk(sub);
      }
    };
    walk(buildProgram());
    expect(leaves.length).toBeGreaterThan(20);
    expect(leaves.filter((l) => EXAMPLES[l] === undefined)).toEqual([]);
  });

  it('completion bash is a valid script that completes subcommands and options; an unknown shell is exit 2', async () => {
    const bash = await cli('completion', 'bash');
    expect(bash.code).toBe(0);
    const script = join(dir, 'parley.bash');
    await writeFile(script, bash.stdout);
    const complete = (line: string) =>
      new Promise<string>((resolve, reject) => {
        const words = line.split(' ');
        const program = `source ${script}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _parley; echo "\${COMPREPLY[*]}"`;
        execFile('bash', ['-c', program], (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
      });
    expect((await complete('parley st')).split(' ').sort()).toEqual(['state', 'status']);
    expect(await complete('parley state set --if')).toBe('--if-version --if-not-exists');
    expect(await complete('parley lock acquire -n jobs --ow')).toBe('--owner');
    const zsh = await cli('completion', 'zsh');
    expect(zsh.stdout.startsWith('#compdef parley')).toBe(true);
    expect((await cli('completion', 'fish')).code).toBe(2);
  });
});
