/**
 * Failover on connection loss: followers that see their leader's connection
 * close elect a successor within a few ticks, ranked so votes do not split,
 * retrying a pre-vote a voter refused while it still deferred to the leader;
 * groups with lease reads keep waiting out the election timeout.
 */
import { SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { failoverTurn } from './failover.js';
import { RawNode } from './rawnode.js';
import { MemoryRaftStorage } from './storage.js';
import { Cluster } from './testing/cluster.js';

const IDS = ['1', '2', '3', '4', '5'];

/** A five-voter cluster led by 1, every member caught up. */
function ledBy1(config: ConstructorParameters<typeof Cluster>[0] = {}): Cluster {
  const c = new Cluster({ seed: 7, ...config });
  for (const id of IDS) c.add(id, { voters: IDS });
  c.get('1').node.campaign();
  c.stabilize();
  expect(c.get('1').node.raft.state).toBe('leader');
  return c;
}

/** Ticks every live member once, then lets the cluster settle. */
function tickAll(c: Cluster): void {
  for (const id of c.ids()) c.tick(id);
  c.stabilize();
}

/** Counts ticks until a live member leads a term past `term` (at most `limit`). */
function ticksToLeader(c: Cluster, term: number, limit: number): number {
  for (let t = 0; t <= limit; t++) {
    if (c.leaders().some((l) => l.node.raft.term > term)) return t;
    tickAll(c);
  }
  return Number.POSITIVE_INFINITY;
}

describe('failover on connection loss', () => {
  it('ranks the voters left by id', () => {
    expect(IDS.map((id) => failoverTurn(id, '1', IDS).turn)).toEqual([-1, 0, 1, 2, 3]);
    expect(failoverTurn('3', '2', ['3', '1', '2'])).toEqual({ turn: 1, of: 2 });
  });

  it('elects a successor within a tick once every follower saw the close, with one campaign', () => {
    const c = ledBy1();
    const term = c.get('1').node.raft.term;
    c.crash('1');
    for (const id of ['2', '3', '4', '5']) c.get(id).node.reportDisconnect('1');
    c.stabilize();
    // The best ranked campaigned at once and won: no tick passed, no one else ran.
    expect(c.leaders().map((l) => l.id)).toEqual(['2']);
    expect(c.get('2').node.raft.term).toBe(term + 1);
    // The others' armed campaigns are void: they heard from the new leader.
    for (let i = 0; i < 5; i++) tickAll(c);
    expect(c.leaders().map((l) => l.id)).toEqual(['2']);
    expect(c.get('2').node.raft.term).toBe(term + 1);
  });

  it('answers a pre-vote it refused as sticky once it sees the close too', () => {
    const c = ledBy1();
    const term = c.get('1').node.raft.term;
    c.crash('1');
    c.get('2').node.reportDisconnect('1');
    c.stabilize();
    // 3, 4, 5 still defer to the leader: the pre-vote wins no quorum, and the term stays.
    expect(c.get('2').node.raft.state).toBe('preCandidate');
    expect(c.leaders()).toEqual([]);
    for (const id of ['3', '4', '5']) c.get(id).node.reportDisconnect('1');
    c.stabilize();
    expect(c.leaders().map((l) => l.id)).toEqual(['2']);
    expect(c.get('2').node.raft.term).toBe(term + 1);
  });

  it('retries a campaign whose pre-votes were lost, on its next turn', () => {
    const ids = ['1', '2', '3'];
    const c = new Cluster({ seed: 3 });
    for (const id of ids) c.add(id, { voters: ids });
    c.get('1').node.campaign();
    c.stabilize();
    const term = c.get('1').node.raft.term;
    c.crash('1');
    const lose = () => {
      for (const id of ['2', '3']) c.processReady(id);
      c.queue = c.queue.filter((m) => m.type !== 'preVote');
    };
    c.get('2').node.reportDisconnect('1'); // turn 0: campaigns at once, again at tick 4
    c.get('3').node.reportDisconnect('1'); // turn 1: at tick 2, again at tick 6
    lose();
    for (let t = 1; t <= 3; t++) {
      c.tick('2');
      c.tick('3');
      lose();
    }
    c.stabilize();
    expect(c.leaders()).toEqual([]);
    // Tick 4: 2's second turn.
    c.tick('2');
    c.tick('3');
    c.stabilize();
    expect(c.leaders().map((l) => l.id)).toEqual(['2']);
    expect(c.get('2').node.raft.term).toBe(term + 1);
  });

  it('of two campaigns that cross, only the better ranked wins its pre-vote: no split vote', () => {
    const ids = ['1', '2', '3'];
    const c = new Cluster({ seed: 4 });
    for (const id of ids) c.add(id, { voters: ids });
    c.get('1').node.campaign();
    c.stabilize();
    const term = c.get('1').node.raft.term;
    c.crash('1');
    c.get('2').node.reportDisconnect('1'); // turn 0: campaigns at once
    c.get('3').node.reportDisconnect('1');
    c.processReady('2');
    c.processReady('3');
    // 3's ticks run late and its turn comes before 2's pre-vote arrives: both campaign.
    c.tick('3', 2);
    c.processReady('3');
    expect(c.get('3').node.raft.state).toBe('preCandidate');
    c.stabilize();
    expect(c.leaders().map((l) => l.id)).toEqual(['2']);
    expect(c.get('2').node.raft.term).toBe(term + 1);
    expect(c.get('3').node.raft.term).toBe(term + 1);
    expect(c.get('3').node.raft.state).toBe('follower');
  });

  it('falls back to the election timeout once the retries are spent', () => {
    const c = ledBy1();
    const term = c.get('1').node.raft.term;
    c.crash('1');
    c.get('2').node.reportDisconnect('1'); // nobody else ever sees the close
    c.stabilize();
    expect(ticksToLeader(c, term, 5)).toBe(Number.POSITIVE_INFINITY);
    // The others' election timeouts still elect someone (stickiness lapses after 10 ticks).
    expect(ticksToLeader(c, term, 30)).toBeLessThan(30);
  });

  it('a stale best-ranked candidate gives way to the next one a tick later', () => {
    const c = ledBy1();
    const term = c.get('1').node.raft.term;
    // 2 misses the last entry: its pre-vote is refused by 3, 4 and 5.
    c.partition(['2'], ['1']);
    c.get('1').node.propose(new TextEncoder().encode('x'));
    c.stabilize();
    c.heal();
    c.crash('1');
    for (const id of ['2', '3', '4', '5']) c.get(id).node.reportDisconnect('1');
    c.stabilize();
    expect(c.leaders()).toEqual([]);
    expect(ticksToLeader(c, term, 3)).toBe(2);
    expect(c.leaders().map((l) => l.id)).toEqual(['3']);
    expect(c.get('3').node.raft.term).toBe(term + 1);
  });

  it('ignores a close of a peer that is not its leader, and a close seen by the leader', () => {
    const c = ledBy1();
    c.get('3').node.reportDisconnect('4');
    c.get('1').node.reportDisconnect('2');
    c.stabilize();
    expect(c.get('3').node.raft.lead).toBe('1');
    expect(c.leaders().map((l) => l.id)).toEqual(['1']);
  });

  it('keeps the old behaviour with lease reads: no campaign before the election timeout', () => {
    const c = ledBy1({ config: { readOnly: 'leaseBased' } });
    const term = c.get('1').node.raft.term;
    c.crash('1');
    for (const id of ['2', '3', '4', '5']) c.get(id).node.reportDisconnect('1');
    c.stabilize();
    expect(c.get('2').node.raft.lead).toBe('1');
    expect(ticksToLeader(c, term, 9)).toBe(Number.POSITIVE_INFINITY);
    expect(ticksToLeader(c, term, 30)).toBeLessThan(30);
  });

  it('refuses to turn it on with lease reads', () => {
    expect(
      () =>
        new RawNode({
          id: '1',
          storage: new MemoryRaftStorage(),
          random: new SeededRandom(1),
          readOnly: 'leaseBased',
          failoverOnDisconnect: true,
        }),
    ).toThrow(/failoverOnDisconnect/);
  });
});
