/**
 * The vote-granting rule of one member, message by message: a retransmitted
 * request is granted again, a member that knows this term's leader votes for
 * nobody else in it, and a pre-vote at the member's own term is refused once
 * it voted for another candidate.
 */
import { type PeerId, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { RawNode } from './rawnode.js';
import { MemoryRaftStorage } from './storage.js';
import type { Message } from './types.js';

const IDS = ['1', '2', '3'];

function member(id: PeerId): { rn: RawNode; storage: MemoryRaftStorage } {
  const storage = new MemoryRaftStorage({
    snapshot: { meta: { index: 0, term: 0, confState: { voters: IDS, learners: [] } }, data: new Uint8Array(0) },
    entries: [],
    hardState: { term: 0, vote: '', commit: 0 },
  });
  const rn = new RawNode({ id, storage, preVote: false, random: new SeededRandom(Number(id)) });
  return { rn, storage };
}

/** Persists and collects what the member sends; returns its vote answers as [to, type, granted]. */
function answers(n: { rn: RawNode; storage: MemoryRaftStorage }): Array<[string, string, boolean]> {
  const out: Message[] = [];
  while (n.rn.hasReady()) {
    const rd = n.rn.ready();
    void n.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState });
    out.push(...rd.messages, ...rd.messagesAfterPersist);
    n.rn.advance();
  }
  return out.flatMap((m) =>
    m.type === 'voteResp' || m.type === 'preVoteResp' ? [[m.to, m.type, !m.reject] as [string, string, boolean]] : [],
  );
}

function vote(from: PeerId, term: number, type: 'vote' | 'preVote' = 'vote'): Message {
  return { type, from, to: '1', term, logTerm: 0, index: 0, transfer: false };
}

describe('vote granting', () => {
  it('grants a retransmitted request of the candidate it voted for, in the same term', () => {
    const n = member('1');
    n.rn.step(vote('2', 1));
    n.rn.step(vote('2', 1));
    expect(answers(n)).toEqual([
      ['2', 'voteResp', true],
      ['2', 'voteResp', true],
    ]);
    expect(n.rn.raft.vote).toBe('2');
  });

  it('a member that heard from this term’s leader votes for no other candidate of that term', () => {
    const n = member('1');
    n.rn.step({ type: 'heartbeat', from: '2', to: '1', term: 2, commit: 0, context: new Uint8Array() });
    expect(n.rn.raft.lead).toBe('2');
    expect(n.rn.raft.vote).toBe('');
    n.rn.step(vote('3', 2));
    expect(answers(n)).toEqual([['3', 'voteResp', false]]);
    expect(n.rn.raft.vote).toBe('');
  });

  it('refuses a pre-vote for its own term after voting for another candidate, grants one for a later term', () => {
    const n = member('1');
    n.rn.step(vote('2', 1));
    n.rn.step(vote('3', 1, 'preVote'));
    n.rn.step(vote('3', 2, 'preVote'));
    expect(answers(n)).toEqual([
      ['2', 'voteResp', true],
      ['3', 'preVoteResp', false],
      ['3', 'preVoteResp', true],
    ]);
    expect(n.rn.raft.term).toBe(1); // a pre-vote never moves the term
  });
});
