/**
 * Golden-text interaction scripts (testdata/*.txt). Each block is a command,
 * a `----` line and the expected output; blocks are separated by a blank
 * line, `#` lines are comments. Run with PARLEY_REWRITE=1 to regenerate the
 * expected output (then review the diff).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Cluster, describeEntry } from '../src/testing/cluster.js';

const dir = fileURLToPath(new URL('../testdata/', import.meta.url));
const rewrite = process.env.PARLEY_REWRITE === '1';
const enc = new TextEncoder();

interface Block {
  comments: string[];
  command: string;
  expected: string;
}

function parse(src: string): Block[] {
  const lines = src.split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const comments: string[] = [];
    while (i < lines.length && ((lines[i] as string).trim() === '' || (lines[i] as string).startsWith('#'))) {
      if ((lines[i] as string).startsWith('#')) comments.push(lines[i] as string);
      i++;
    }
    if (i >= lines.length) break;
    const command = lines[i++] as string;
    if (lines[i] !== '----') throw new Error(`expected ---- after '${command}' (line ${i + 1})`);
    i++;
    const out: string[] = [];
    while (i < lines.length && (lines[i] as string) !== '') out.push(lines[i++] as string);
    blocks.push({ comments, command, expected: out.join('\n') });
  }
  return blocks;
}

function format(blocks: Block[], outputs: string[]): string {
  const parts = blocks.map((b, k) => {
    const lines = [...b.comments, b.command, '----'];
    if (outputs[k]) lines.push(outputs[k] as string);
    return lines.join('\n');
  });
  return `${parts.join('\n\n')}\n`;
}

function stateLine(c: Cluster, id: string): string {
  const s = c.get(id).node.status();
  return `${id}: ${s.state} term=${s.term} lead=${s.lead || '-'} commit=${s.commit}`;
}

function parseIds(arg: string | undefined): string[] {
  if (!arg) return [];
  return arg
    .replace(/[()]/g, '')
    .split(',')
    .filter((s) => s.length > 0);
}

async function run(c: Cluster, command: string): Promise<string> {
  const [cmd, ...args] = command.trim().split(/\s+/);
  const kv = new Map<string, string>();
  const pos: string[] = [];
  for (const a of args) {
    const eq = a.indexOf('=');
    if (eq > 0) kv.set(a.slice(0, eq), a.slice(eq + 1));
    else pos.push(a);
  }
  const out: string[] = [];
  const attempt = (fn: () => string | undefined) => {
    try {
      const r = fn();
      if (r) out.push(r);
    } catch (err) {
      const e = err as { code?: string; message: string };
      out.push(`error: ${e.code ?? 'error'}: ${e.message}`);
    }
  };
  switch (cmd) {
    case 'add-nodes': {
      const n = Number(pos[0]);
      const start = c.nodes.size + 1;
      const ids = Array.from({ length: n }, (_, k) => String(start + k));
      const voters = kv.has('voters') ? parseIds(kv.get('voters')) : ids;
      const learners = parseIds(kv.get('learners'));
      for (const id of ids) c.add(id, { voters, learners });
      out.push(`added ${ids.join(' ')} voters=${voters.join(',') || '-'} learners=${learners.join(',') || '-'}`);
      break;
    }
    case 'campaign':
      c.get(pos[0] as string).node.campaign();
      out.push(stateLine(c, pos[0] as string));
      break;
    case 'tick': {
      const ids = pos[0] === 'all' || pos.length === 0 ? c.ids() : parseIds(pos[0]);
      for (const id of ids) {
        c.tick(id, Number(pos[1] ?? 1));
        out.push(stateLine(c, id));
      }
      break;
    }
    case 'propose':
      attempt(() => {
        const r = c.get(pos[0] as string).node.propose(enc.encode(pos[1] ?? ''));
        return r ? `proposed index=${r.index} term=${r.term}` : 'forwarded to leader';
      });
      break;
    case 'read-index':
      attempt(() => {
        c.get(pos[0] as string).node.readIndex(enc.encode(pos[1] ?? ''));
        return 'ok';
      });
      break;
    case 'process-ready':
      for (const id of pos) out.push(`> ${id} handling Ready`, ...c.processReady(id).map((l) => `  ${l}`));
      break;
    case 'deliver-msgs': {
      const drop = new Set(parseIds(kv.get('drop')));
      const targets = pos.length ? pos : c.ids();
      for (const id of targets) {
        if (!c.queue.some((m) => m.to === id)) continue;
        out.push(`> ${id} receiving messages`, ...c.deliver(id, drop).map((l) => `  ${l}`));
      }
      break;
    }
    case 'stabilize':
      out.push(...c.stabilize());
      break;
    case 'partition':
      c.partition(...pos.map(parseIds));
      out.push(`partitioned ${pos.join(' | ')}`);
      break;
    case 'heal':
      c.heal();
      out.push('healed');
      break;
    case 'snapshot': {
      const s = c.snapshot(pos[0] as string);
      if (!s) throw new Error('nothing to snapshot');
      out.push(
        `${pos[0]}: snapshot ${s.meta.term}/${s.meta.index}, log compacted to first index ${c.get(pos[0] as string).storage.firstIndex()}`,
      );
      break;
    }
    case 'add-learner':
    case 'promote':
    case 'remove-node': {
      const [leader, node] = pos as [string, string];
      if (cmd === 'add-learner' && !c.nodes.has(node)) c.add(node, { voters: [] });
      const type = cmd === 'add-learner' ? 'addLearner' : cmd === 'promote' ? 'addVoter' : 'removeNode';
      attempt(() => {
        const r = c.get(leader).node.proposeConfChange({ type, node });
        return r ? `proposed ${type}(${node}) index=${r.index}` : 'forwarded to leader';
      });
      break;
    }
    case 'transfer-leader':
      attempt(() => {
        c.get(pos[0] as string).node.transferLeader(pos[1] as string);
        return `transfer to ${pos[1]} requested`;
      });
      break;
    case 'crash':
      c.crash(pos[0] as string);
      out.push(`${pos[0]} crashed`);
      break;
    case 'restart':
      c.restart(pos[0] as string);
      out.push(stateLine(c, pos[0] as string));
      break;
    case 'status':
      for (const id of pos.length ? pos : c.ids()) {
        const s = c.get(id).node.status();
        out.push(
          `${stateLine(c, id)} vote=${s.vote || '-'} applied=${s.applied} voters=${s.voters.join(',')} learners=${s.learners.join(',') || '-'}`,
        );
        if (s.progress) {
          for (const [p, pr] of Object.entries(s.progress)) {
            out.push(`  ${p}: ${pr.state} match=${pr.match} next=${pr.next}${pr.learner ? ' learner' : ''}`);
          }
        }
      }
      break;
    case 'raft-log': {
      const cn = c.get(pos[0] as string);
      const log = cn.node.raft.log;
      const ents = log.slice(log.firstIndex(), log.lastIndex() + 1);
      out.push(...(ents.length ? ents.map(describeEntry) : ['log is empty']));
      break;
    }
    case 'applied': {
      const cn = c.get(pos[0] as string);
      const dec = new TextDecoder();
      out.push(`${pos[0]}: applied=${cn.appliedIndex} [${cn.applied.map((e) => dec.decode(e.data)).join(' ')}]`);
      if (cn.readStates.length)
        out.push(`  readStates: ${cn.readStates.map((r) => `${r.context}@${r.index}`).join(' ')}`);
      break;
    }
    default:
      throw new Error(`unknown command '${cmd}'`);
  }
  return out.join('\n');
}

const files = readdirSync(dir)
  .filter((f) => f.endsWith('.txt'))
  .sort();

describe('interaction scripts', () => {
  for (const file of files) {
    it(file, async () => {
      const path = join(dir, file);
      const blocks = parse(readFileSync(path, 'utf8'));
      const c = new Cluster({ seed: 1, config: { maxSnapshotChunkBytes: 32 } });
      const outputs: string[] = [];
      for (const b of blocks) outputs.push(await run(c, b.command));
      if (rewrite) {
        writeFileSync(path, format(blocks, outputs));
        return;
      }
      blocks.forEach((b, k) => {
        expect(outputs[k], `${file}: ${b.command}`).toBe(b.expected);
      });
    });
  }
});
