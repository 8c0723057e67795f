/**
 * Paper tests: each checks one statement of the Raft paper ("In Search of an
 * Understandable Consensus Algorithm", extended version) or of Ongaro's thesis,
 * quoted in the test name.
 */
import { type HardState, type PeerId, type RaftEntry, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import type { RaftConfig } from './raft.js';
import { RawNode } from './rawnode.js';
import { MemoryRaftStorage } from './storage.js';
import { Cluster } from './testing/cluster.js';
import type { Message } from './types.js';

const enc = new TextEncoder();
const IDS = ['1', '2', '3'];

function ent(term: number, index: number, data = ''): RaftEntry {
  return { term, index, type: 'normal', data: enc.encode(data) };
}

/** A member with a pre-built log (no bootstrap entries) and the given hard state. */
function node(
  id: PeerId,
  opts: Partial<RaftConfig> & { log?: RaftEntry[]; hard?: HardState; voters?: PeerId[] } = {},
): { rn: RawNode; storage: MemoryRaftStorage } {
  const voters = opts.voters ?? IDS;
  const storage = new MemoryRaftStorage({
    snapshot: { meta: { index: 0, term: 0, confState: { voters, learners: [] } }, data: new Uint8Array(0) },
    entries: opts.log ?? [],
    hardState: opts.hard ?? { term: 0, vote: '', commit: 0 },
  });
  const { log: _log, hard: _hard, voters: _voters, ...cfg } = opts;
  const rn = new RawNode({ preVote: false, ...cfg, id, storage, random: new SeededRandom(Number(id) || 7) });
  return { rn, storage };
}

/** Runs the ready loop once (persist, collect messages, advance); returns the messages. */
function drain(n: { rn: RawNode; storage: MemoryRaftStorage }): Message[] {
  const out: Message[] = [];
  while (n.rn.hasReady()) {
    const rd = n.rn.ready();
    void n.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState });
    out.push(...rd.messages, ...rd.messagesAfterPersist);
    n.rn.advance();
  }
  return out;
}

function electionTimeout(n: { rn: RawNode }): void {
  for (let i = 0; i < 2 * n.rn.raft.electionTimeout; i++) n.rn.tick();
}

/** Elects `n` by granting every vote it asks for; returns its first messages as leader. */
function becomeLeader(n: { rn: RawNode; storage: MemoryRaftStorage }): Message[] {
  n.rn.campaign();
  for (const m of drain(n)) {
    if (m.type === 'vote') n.rn.step({ type: 'voteResp', from: m.to, to: m.from, term: m.term, reject: false });
  }
  const out = drain(n);
  expect(n.rn.raft.state).toBe('leader');
  return out;
}

describe('§5.1 server states and terms', () => {
  it('"If a candidate or leader discovers that its term is out of date, it immediately reverts to follower state"', () => {
    for (const start of ['candidate', 'leader'] as const) {
      const n = node('1');
      if (start === 'leader') becomeLeader(n);
      else {
        n.rn.campaign();
        drain(n);
      }
      expect(n.rn.raft.state).toBe(start);
      n.rn.step({ type: 'heartbeat', from: '2', to: '1', term: 5, commit: 0, context: new Uint8Array() });
      expect(n.rn.raft.state).toBe('follower');
      expect(n.rn.raft.term).toBe(5);
      expect(n.rn.raft.lead).toBe('2');
    }
  });

  it('"If a server receives a request with a stale term number, it rejects the request"', () => {
    const n = node('1', { hard: { term: 3, vote: '', commit: 0 } });
    n.rn.step({ type: 'app', from: '2', to: '1', term: 2, logTerm: 0, index: 0, entries: [ent(2, 1)], commit: 0 });
    expect(n.rn.raft.log.lastIndex()).toBe(0);
    const msgs = drain(n);
    // The stale leader is told the newer term so that it steps down.
    expect(msgs).toEqual([expect.objectContaining({ type: 'appResp', to: '2', term: 3 })]);
  });
});

describe('§5.2 leader election', () => {
  it('"If a follower receives no communication over a period of time called the election timeout ... it increments its current term and transitions to candidate state ... votes for itself and issues RequestVote RPCs in parallel"', () => {
    const n = node('1');
    electionTimeout(n);
    expect(n.rn.raft.state).toBe('candidate');
    expect(n.rn.raft.term).toBe(1);
    expect(n.rn.raft.vote).toBe('1');
    const votes = drain(n).filter((m) => m.type === 'vote');
    expect(votes.map((m) => m.to).sort()).toEqual(['2', '3']);
  });

  it('"A candidate wins an election if it receives votes from a majority of the servers in the full cluster for the same term"', () => {
    const cases: { size: number; grants: number; state: string }[] = [
      { size: 1, grants: 0, state: 'leader' },
      { size: 3, grants: 1, state: 'leader' },
      { size: 3, grants: 0, state: 'candidate' },
      { size: 5, grants: 2, state: 'leader' },
      { size: 5, grants: 1, state: 'candidate' },
    ];
    for (const c of cases) {
      const voters = Array.from({ length: c.size }, (_, i) => String(i + 1));
      const n = node('1', { voters });
      n.rn.campaign();
      drain(n);
      for (let i = 0; i < c.grants; i++) {
        n.rn.step({ type: 'voteResp', from: voters[i + 1] as string, to: '1', term: 1, reject: false });
      }
      expect(n.rn.raft.state, `size ${c.size} grants ${c.grants}`).toBe(c.state);
    }
  });

  it('"Each server will vote for at most one candidate in a given term, on a first-come-first-served basis"', () => {
    const n = node('1');
    n.rn.step({ type: 'vote', from: '2', to: '1', term: 1, logTerm: 0, index: 0, transfer: false });
    n.rn.step({ type: 'vote', from: '3', to: '1', term: 1, logTerm: 0, index: 0, transfer: false });
    const resps = drain(n).filter((m) => m.type === 'voteResp');
    expect(resps.map((m) => [m.to, m.type === 'voteResp' && m.reject])).toEqual([
      ['2', false],
      ['3', true],
    ]);
    expect(n.rn.raft.vote).toBe('2');
  });

  it('"If the AppendEntries RPC is from a leader whose term is at least as large as the candidate\'s current term, then the candidate recognizes the leader as legitimate and returns to follower state"', () => {
    const n = node('1');
    n.rn.campaign();
    drain(n);
    n.rn.step({ type: 'app', from: '2', to: '1', term: 1, logTerm: 0, index: 0, entries: [], commit: 0 });
    expect(n.rn.raft.state).toBe('follower');
    expect(n.rn.raft.lead).toBe('2');
  });

  it('"Raft uses randomized election timeouts to ensure that split votes are rare" (timeouts spread over [T, 2T))', () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 50; seed++) {
      const n = node('1', { random: undefined });
      const rn = new RawNode({ id: '1', storage: n.storage, random: new SeededRandom(seed), preVote: false });
      let ticks = 0;
      while (rn.raft.state === 'follower') {
        rn.tick();
        ticks++;
      }
      expect(ticks).toBeGreaterThanOrEqual(10);
      expect(ticks).toBeLessThan(20);
      seen.add(ticks);
    }
    expect(seen.size).toBeGreaterThan(5);
  });
});

describe('§5.3 log replication', () => {
  it('"The leader appends the command to its log as a new entry, then issues AppendEntries RPCs in parallel to each of the other servers"', () => {
    const n = node('1');
    becomeLeader(n);
    for (const from of ['2', '3']) {
      n.rn.step({ type: 'appResp', from, to: '1', term: 1, index: 1, reject: false, rejectHint: 0, logTerm: 0 });
    }
    drain(n);
    const r = n.rn.propose(enc.encode('x'));
    expect(r).toEqual({ index: 2, term: 1 });
    expect(n.rn.raft.log.lastIndex()).toBe(2);
    const apps = drain(n).filter((m) => m.type === 'app');
    expect(apps.map((m) => m.to).sort()).toEqual(['2', '3']);
    for (const m of apps) if (m.type === 'app') expect(m.entries.map((e) => e.index)).toEqual([2]);
  });

  it('"A log entry is committed once the leader that created the entry has replicated it on a majority of the servers" and followers learn the commit index from later AppendEntries', () => {
    const c = new Cluster({ seed: 3 });
    for (const id of IDS) c.add(id, { voters: IDS });
    c.get('1').node.campaign();
    c.stabilize();
    c.crash('3'); // one of three down: a majority remains
    c.get('1').node.propose(enc.encode('v'));
    c.stabilize();
    expect(c.get('1').applied.map((e) => new TextDecoder().decode(e.data))).toEqual(['v']);
    expect(c.get('2').applied.map((e) => new TextDecoder().decode(e.data))).toEqual(['v']);
  });

  it('"If a follower does not find an entry in its log with the same index and term, then it refuses the new entries"', () => {
    const n = node('1', { log: [ent(1, 1), ent(2, 2)], hard: { term: 2, vote: '', commit: 1 } });
    n.rn.step({ type: 'app', from: '2', to: '1', term: 2, logTerm: 3, index: 2, entries: [ent(3, 3)], commit: 2 });
    const [resp] = drain(n);
    expect(resp).toMatchObject({ type: 'appResp', reject: true, index: 2, rejectHint: 2, logTerm: 2 });
    expect(n.rn.raft.log.lastIndex()).toBe(2);
  });

  it('"the leader must find the latest log entry where the two logs agree, delete any entries in the follower\'s log after that point" (Figure 7 followers, with the conflict-term hint)', () => {
    // Leader log of Figure 7: terms 1 1 1 4 4 5 5 6 6 6, then term 8 starts.
    const leaderTerms = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
    const followers: number[][] = [
      [1, 1, 1, 4, 4, 5, 5, 6, 6], // (a)
      [1, 1, 1, 4], // (b)
      [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6], // (c)
      [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7], // (d)
      [1, 1, 1, 4, 4, 4, 4], // (e)
      [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3], // (f)
    ];
    for (const [k, terms] of followers.entries()) {
      const lead = node('1', {
        log: leaderTerms.map((t, i) => ent(t, i + 1)),
        hard: { term: 7, vote: '', commit: 0 },
        voters: ['1', '2'],
      });
      const fol = node('2', {
        log: terms.map((t, i) => ent(t, i + 1)),
        hard: { term: 7, vote: '', commit: 0 },
        voters: ['1', '2'],
      });
      let pending = becomeLeader(lead);
      let rounds = 0;
      while (pending.length && rounds++ < 50) {
        for (const m of pending) if (m.to === '2') fol.rn.step(m);
        for (const m of drain(fol)) lead.rn.step(m);
        pending = drain(lead);
      }
      const want = lead.rn.raft.log.slice(1, lead.rn.raft.log.lastIndex() + 1).map((e) => `${e.term}/${e.index}`);
      const got = fol.rn.raft.log.slice(1, fol.rn.raft.log.lastIndex() + 1).map((e) => `${e.term}/${e.index}`);
      expect(got, `follower (${String.fromCharCode(97 + k)})`).toEqual(want);
      expect(rounds, 'fast backtracking needs few round trips').toBeLessThanOrEqual(6);
    }
  });
});

describe('§5.4 safety', () => {
  it('§5.4.1 "the voter denies its vote if its own log is more up-to-date than that of the candidate"', () => {
    const cases = [
      { logTerm: 1, index: 1, grant: false }, // lower last term
      { logTerm: 2, index: 1, grant: false }, // same term, shorter
      { logTerm: 2, index: 2, grant: true }, // same
      { logTerm: 2, index: 3, grant: true }, // longer
      { logTerm: 3, index: 1, grant: true }, // higher last term
    ];
    for (const c of cases) {
      const n = node('1', { log: [ent(1, 1), ent(2, 2)], hard: { term: 2, vote: '', commit: 0 } });
      n.rn.step({ type: 'vote', from: '2', to: '1', term: 3, logTerm: c.logTerm, index: c.index, transfer: false });
      const [resp] = drain(n);
      expect(resp, JSON.stringify(c)).toMatchObject({ type: 'voteResp', reject: !c.grant });
    }
  });

  it('§5.4.2 "Raft never commits log entries from previous terms by counting replicas"', () => {
    // Leader of term 3 holds an entry of term 2 replicated on a majority: it must not commit it
    // until an entry of its own term is replicated too.
    const lead = node('1', { log: [ent(1, 1), ent(2, 2)], hard: { term: 2, vote: '', commit: 1 } });
    lead.rn.campaign();
    drain(lead);
    lead.rn.step({ type: 'voteResp', from: '2', to: '1', term: 3, reject: false });
    drain(lead);
    expect(lead.rn.raft.state).toBe('leader');
    // Follower 2 acknowledges index 2 (the term-2 entry) but not the new no-op at 3.
    lead.rn.step({ type: 'appResp', from: '2', to: '1', term: 3, index: 2, reject: false, rejectHint: 0, logTerm: 0 });
    drain(lead);
    expect(lead.rn.raft.log.committed).toBe(1);
    lead.rn.step({ type: 'appResp', from: '2', to: '1', term: 3, index: 3, reject: false, rejectHint: 0, logTerm: 0 });
    drain(lead);
    expect(lead.rn.raft.log.committed).toBe(3);
  });
});

describe('§8 client interaction and thesis extensions', () => {
  it('§8 "a leader must have the latest information on which entries are committed ... the leader commits a blank no-op entry at the start of its term" (reads wait for it)', () => {
    const n = node('1');
    becomeLeader(n);
    n.rn.readIndex(enc.encode('r'));
    expect(n.rn.ready().readStates).toEqual([]);
    n.rn.advance();
    // The no-op (index 1) commits once a follower acknowledges it; then the read is confirmed by heartbeats.
    n.rn.step({ type: 'appResp', from: '2', to: '1', term: 1, index: 1, reject: false, rejectHint: 0, logTerm: 0 });
    const hb = drain(n).filter((m) => m.type === 'heartbeat');
    expect(hb.length).toBeGreaterThan(0);
    n.rn.step({ type: 'heartbeatResp', from: '2', to: '1', term: 1, context: enc.encode('r') });
    const rd = n.rn.ready();
    expect(rd.readStates).toEqual([{ index: 1, context: enc.encode('r') }]);
  });

  it('thesis §9.6 pre-vote: "a candidate would first ask other servers whether its log was up-to-date enough to get their vote" — a lagging node rejoining does not bump terms', () => {
    const c = new Cluster({ seed: 5, config: { preVote: true } });
    for (const id of IDS) c.add(id, { voters: IDS });
    c.get('1').node.campaign();
    c.stabilize();
    c.partition(['3'], ['1', '2']);
    for (let i = 0; i < 100; i++) {
      for (const id of IDS) c.tick(id);
      c.stabilize();
    }
    expect(c.get('3').node.raft.term).toBe(2); // it never left pre-candidacy
    c.heal();
    for (let i = 0; i < 5; i++) {
      for (const id of IDS) c.tick(id);
      c.stabilize();
    }
    expect(c.get('1').node.raft.state).toBe('leader');
    expect(c.get('1').node.raft.term).toBe(2);
  });

  it('thesis §6.2 check-quorum: "a leader steps down if an election timeout elapses without a successful round of heartbeats to a majority"', () => {
    const c = new Cluster({ seed: 6 });
    for (const id of IDS) c.add(id, { voters: IDS });
    c.get('1').node.campaign();
    c.stabilize();
    c.partition(['1'], ['2', '3']);
    for (let i = 0; i < 20; i++) {
      c.tick('1');
      c.stabilize();
    }
    expect(c.get('1').node.raft.state).toBe('follower');
  });

  it('thesis §3.10 leadership transfer: "the prior leader sends a TimeoutNow request to the target server ... [which] starts a new election"', () => {
    const c = new Cluster({ seed: 7 });
    for (const id of IDS) c.add(id, { voters: IDS });
    c.get('1').node.campaign();
    c.stabilize();
    c.get('1').node.transferLeader('3');
    c.stabilize();
    expect(c.get('3').node.raft.state).toBe('leader');
    expect(c.get('1').node.raft.lead).toBe('3');
  });

  it('thesis §4.1 single-server changes: only one membership change may be pending at a time', () => {
    const c = new Cluster({ seed: 8 });
    for (const id of IDS) c.add(id, { voters: IDS });
    c.get('1').node.campaign();
    c.stabilize();
    c.add('4', { voters: [] });
    c.get('1').node.proposeConfChange({ type: 'addLearner', node: '4' });
    expect(() => c.get('1').node.proposeConfChange({ type: 'addVoter', node: '4' })).toThrow(/pending/);
    c.stabilize();
    c.get('1').node.proposeConfChange({ type: 'addVoter', node: '4' });
    c.stabilize();
    expect(c.get('4').node.status().voters).toEqual(['1', '2', '3', '4']);
  });

  it('proposals on a follower without forwarding are rejected with not_leader and the leader hint', () => {
    const c = new Cluster({ seed: 9, config: { forwardProposals: false } });
    for (const id of IDS) c.add(id, { voters: IDS });
    c.get('1').node.campaign();
    c.stabilize();
    expect(() => c.get('2').node.propose(enc.encode('x'))).toThrow(
      expect.objectContaining({ code: 'not_leader', leaderHint: '1' }),
    );
  });
});
