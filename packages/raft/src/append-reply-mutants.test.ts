/**
 * A follower's exact answers to append requests, found unchecked by the
 * mutation run (docs/simulation.md, "Mutation testing (Stryker)"): a request
 * below its commit index is answered with the commit index and accepted (the
 * leader moves on), one at the commit index is still appended, and a
 * mismatch is rejected with the fast-backtracking hint.
 */
import { type PeerId, type RaftEntry, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { RawNode } from './rawnode.js';
import { MemoryRaftStorage } from './storage.js';
import type { AppRespMessage, Message } from './types.js';

const IDS = ['1', '2', '3'];
const enc = new TextEncoder();

function ent(term: number, index: number): RaftEntry {
  return { term, index, type: 'normal', data: enc.encode(`${term}/${index}`) };
}

/** Member '1', term 2, entries 1..3 of term 1 with 1..3 committed, and entry 4 of term 2 uncommitted. */
function follower(): { rn: RawNode; storage: MemoryRaftStorage } {
  const storage = new MemoryRaftStorage({
    snapshot: { meta: { index: 0, term: 0, confState: { voters: IDS, learners: [] } }, data: new Uint8Array(0) },
    entries: [ent(1, 1), ent(1, 2), ent(1, 3), ent(2, 4)],
    hardState: { term: 2, vote: '', commit: 3 },
  });
  const rn = new RawNode({ id: '1', storage, preVote: false, random: new SeededRandom(1) });
  return { rn, storage };
}

function replies(n: { rn: RawNode; storage: MemoryRaftStorage }): Array<Omit<AppRespMessage, 'from' | 'to' | 'type'>> {
  const out: Message[] = [];
  while (n.rn.hasReady()) {
    const rd = n.rn.ready();
    void n.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState });
    out.push(...rd.messages, ...rd.messagesAfterPersist);
    n.rn.advance();
  }
  return out.flatMap((m) =>
    m.type === 'appResp'
      ? [{ term: m.term, index: m.index, reject: m.reject, rejectHint: m.rejectHint, logTerm: m.logTerm }]
      : [],
  );
}

function app(index: number, logTerm: number, entries: RaftEntry[], from: PeerId = '2'): Message {
  return { type: 'app', from, to: '1', term: 2, index, logTerm, entries, commit: 3 };
}

describe('follower append answers', () => {
  it('a request below the commit index is accepted at the commit index, and changes nothing', () => {
    const n = follower();
    n.rn.step(app(1, 1, [ent(9, 2)]));
    expect(replies(n)).toEqual([{ term: 2, index: 3, reject: false, rejectHint: 0, logTerm: 0 }]);
    expect(n.rn.raft.log.term(2)).toBe(1);
  });

  it('a request at the commit index is appended', () => {
    const n = follower();
    n.rn.step(app(3, 1, [ent(2, 4), ent(2, 5)]));
    expect(replies(n)).toEqual([{ term: 2, index: 5, reject: false, rejectHint: 0, logTerm: 0 }]);
    expect(n.rn.raft.log.lastIndex()).toBe(5);
  });

  it('a mismatch is rejected with the last index whose term is at most the request’s', () => {
    const n = follower();
    n.rn.step(app(4, 1, [ent(2, 5)])); // the follower's entry 4 is of term 2
    expect(replies(n)).toEqual([{ term: 2, index: 4, reject: true, rejectHint: 3, logTerm: 1 }]);
    // past the follower's last entry: the hint is that last entry
    n.rn.step(app(6, 2, [ent(2, 7)]));
    expect(replies(n)).toEqual([{ term: 2, index: 6, reject: true, rejectHint: 4, logTerm: 2 }]);
  });
});
