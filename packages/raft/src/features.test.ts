/**
 * Feature tests beyond the paper: lease reads, chunked snapshots with a lost
 * chunk, bounded uncommitted bytes, learners not counting for commit,
 * removing the leader, and the safety checker catching broken histories.
 */
import { InvariantRegistry, type RaftClusterView, type RaftNodeView, registerRaftInvariants } from '@parley/check';
import { type RaftEntry, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import type { RaftProbe } from './probe.js';
import { RawNode } from './rawnode.js';
import { MemoryRaftStorage } from './storage.js';
import { Cluster } from './testing/cluster.js';

const enc = new TextEncoder();
const IDS = ['1', '2', '3'];

function elected(c: Cluster, id = '1'): void {
  for (const n of IDS) if (!c.nodes.has(n)) c.add(n, { voters: IDS });
  c.get(id).node.campaign();
  c.stabilize();
  expect(c.get(id).node.raft.state).toBe('leader');
}

describe('reads', () => {
  it('lease-based reads answer at once, without a heartbeat round', () => {
    const c = new Cluster({ seed: 1, config: { readOnly: 'leaseBased' } });
    elected(c);
    c.get('1').node.readIndex(enc.encode('lease'));
    const rd = c.get('1').node.ready();
    expect(rd.readStates.map((r) => r.index)).toEqual([c.get('1').node.raft.log.committed]);
    expect(rd.messages.filter((m) => m.type === 'heartbeat')).toEqual([]);
    c.get('1').node.advance();
  });

  it('a safe read is not answered by a leader cut off from the quorum', () => {
    const c = new Cluster({ seed: 2 });
    elected(c);
    c.partition(['1'], ['2', '3']);
    c.get('1').node.readIndex(enc.encode('r'));
    c.stabilize();
    expect(c.get('1').readStates).toEqual([]);
  });

  it('rejects leaseBased reads without check-quorum', () => {
    expect(
      () =>
        new RawNode({
          id: '1',
          storage: new MemoryRaftStorage(),
          random: new SeededRandom(1),
          readOnly: 'leaseBased',
          checkQuorum: false,
        }),
    ).toThrow(/checkQuorum/);
  });
});

describe('snapshots', () => {
  it('resumes a chunked snapshot after a lost chunk (retransmitted on a heartbeat response)', () => {
    const c = new Cluster({ seed: 3, config: { maxSnapshotChunkBytes: 16 } });
    elected(c);
    c.crash('3');
    for (let i = 0; i < 6; i++) c.get('1').node.propose(enc.encode(`value-${i}`));
    c.stabilize();
    expect(c.snapshot('1')).toBeDefined();
    c.restart('3');
    let dropped = 0;
    for (let round = 0; round < 200 && c.get('3').appliedIndex < c.get('1').appliedIndex; round++) {
      for (const id of IDS) c.processReady(id);
      const q = c.queue;
      c.queue = [];
      for (const m of q) {
        // Drop the second chunk the first time it is sent.
        if (m.type === 'snap' && m.offset === 16 && dropped === 0) {
          dropped++;
          continue;
        }
        c.deliverMessage(m);
      }
      if (round % 3 === 0) c.tick('1');
    }
    expect(dropped).toBe(1);
    expect(c.get('3').applied.map((e) => new TextDecoder().decode(e.data))).toEqual(
      c.get('1').applied.map((e) => new TextDecoder().decode(e.data)),
    );
    expect(c.get('3').storage.snapshot().meta.index).toBeGreaterThan(0);
  });
});

describe('bounds and membership', () => {
  it('refuses proposals beyond the uncommitted-bytes bound with unavailable', () => {
    const c = new Cluster({ seed: 4, config: { maxUncommittedEntriesBytes: 100 } });
    elected(c);
    c.partition(['1'], ['2', '3']); // nothing commits
    c.get('1').node.propose(new Uint8Array(60));
    c.get('1').node.propose(new Uint8Array(30));
    expect(() => c.get('1').node.propose(new Uint8Array(30))).toThrow(expect.objectContaining({ code: 'unavailable' }));
  });

  it('learners receive the log but do not count towards commit', () => {
    const c = new Cluster({ seed: 5 });
    c.add('1', { voters: ['1', '2'], learners: ['3'] });
    c.add('2', { voters: ['1', '2'], learners: ['3'] });
    c.add('3', { voters: ['1', '2'], learners: ['3'] });
    c.get('1').node.campaign();
    c.stabilize();
    c.crash('2');
    c.get('1').node.propose(enc.encode('x'));
    c.stabilize();
    expect(c.get('3').node.raft.log.lastIndex()).toBe(c.get('1').node.raft.log.lastIndex());
    expect(c.get('1').applied).toEqual([]); // the learner's copy does not make a quorum
    // A learner never campaigns.
    for (let i = 0; i < 50; i++) c.tick('3');
    expect(c.get('3').node.raft.state).toBe('follower');
  });

  it('a leader that removes itself steps down and the others elect a successor', () => {
    const c = new Cluster({ seed: 6 });
    elected(c);
    c.get('1').node.proposeConfChange({ type: 'removeNode', node: '1' });
    c.stabilize();
    expect(c.get('1').node.raft.state).toBe('follower');
    for (let i = 0; i < 40 && c.leaders().length === 0; i++) {
      for (const id of ['2', '3']) c.tick(id);
      c.stabilize();
    }
    const [leader] = c.leaders();
    expect(leader && leader.id !== '1').toBe(true);
    expect(leader?.node.status().voters).toEqual(['2', '3']);
  });
});

describe('safety checker', () => {
  it('flags two leaders in one term and divergent applies', () => {
    const invariants = new InvariantRegistry<RaftClusterView>();
    registerRaftInvariants(invariants);
    const found: string[] = [];
    const check = (nodes: RaftNodeView[]) => {
      for (const v of invariants.checkInvariants({ nodes })) found.push(v.invariant.replace(/^raft\//, ''));
    };
    const live = (id: string, p: RaftProbe): RaftNodeView => ({
      id,
      term: p.term,
      isLeader: p.state === 'leader',
      commitIndex: p.committed,
      firstIndex: p.firstIndex(),
      lastIndex: p.lastIndex(),
      termAt: (i) => p.termAt(i) ?? -1,
      entryAt: (i) => p.entryAt(i),
    });
    const c1 = new Cluster({ seed: 7 });
    elected(c1);
    const c2 = new Cluster({ seed: 7 });
    elected(c2, '2');
    const a = c1.get('1');
    const b = c2.get('2');
    check([live('x', a.node.probe), live('y', b.node.probe)]);
    expect(found).toContain('election-safety');
    const applied = (id: string, data: string): RaftNodeView => {
      const e: RaftEntry = { term: 2, index: 9, type: 'normal', data: enc.encode(data) };
      return {
        id,
        term: 2,
        isLeader: false,
        commitIndex: 9,
        firstIndex: 9,
        lastIndex: 9,
        termAt: () => 2,
        entryAt: () => e,
      };
    };
    check([applied('x', 'a'), applied('y', 'b')]);
    expect(found).toContain('state-machine-safety');
  });
});
