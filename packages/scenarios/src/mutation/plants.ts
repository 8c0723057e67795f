/**
 * Planted bugs: one per class of defect the simulator used to miss. Each is
 * a textual patch of the compiled JavaScript of one engine package, applied
 * in a scratch copy (never in the tree), and names the scenario that must
 * catch it within a seed budget. `npm run mutation-smoke -w @parley/scenarios`
 * (and the CI test beside this file) applies each one and runs its scenario
 * until it fails.
 *
 * A patch matches the compiled text of its package exactly once; when the
 * engine's code changes under it, the smoke test says so (update `find`).
 */

export interface Plant {
  /** Short kebab-case name. */
  readonly name: string;
  /** The gap of docs/simulation.md it stands for. */
  readonly gap: string;
  /** What the bug does, in one line. */
  readonly bug: string;
  /** Package directory under packages/. */
  readonly pkg: 'crdt' | 'raft' | 'coord' | 'node';
  /**
   * Text that occurs exactly once in the package's compiled sources (.js files under dist/, tests
   * excluded), whichever file holds it, so that moving code between files keeps the plant.
   */
  readonly find: string;
  readonly replace: string;
  /** Scenario module under dist/families/ (without .js) and scenario name. */
  readonly module: string;
  readonly scenario: string;
  readonly firstSeed: number;
  /** Seeds the scenario may use to catch it. */
  readonly budget: number;
  /**
   * Known to get through its budget: reported by the smoke program, left out of the CI test
   * (docs/simulation.md says why).
   */
  readonly missed?: true;
}

export const PLANTS: readonly Plant[] = [
  {
    name: 'commit-old-term-by-counting',
    gap: 'Raft §5.4.2 (Figure 8)',
    bug: "the leader commits any entry on a quorum, whatever its term (the commit rule's term test dropped)",
    pkg: 'raft',
    find: 'this.maybeTerm(maxIndex) === term',
    replace: 'this.maybeTerm(maxIndex) !== undefined',
    module: 'raft/figure8',
    scenario: 'raft-5-figure8',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'commit-old-term-by-counting-coord',
    gap: 'Raft §5.4.2 (Figure 8) under coord',
    bug: "the same plant, caught by Figure 8 scripted under the coord state machine's client load",
    pkg: 'raft',
    find: 'this.maybeTerm(maxIndex) === term',
    replace: 'this.maybeTerm(maxIndex) !== undefined',
    module: 'coord/family',
    scenario: 'coord-5-figure8',
    firstSeed: 1,
    budget: 3,
  },
  {
    name: 'commit-old-term-by-counting-random',
    gap: 'Raft §5.4.2 (Figure 8) at random',
    bug: 'the same plant, caught by the leader-reactive nemesis (no script)',
    pkg: 'raft',
    find: 'this.maybeTerm(maxIndex) === term',
    replace: 'this.maybeTerm(maxIndex) !== undefined',
    module: 'raft/family',
    scenario: 'raft-5-figure8-random',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'send-before-persist',
    gap: 'persist before send',
    bug: 'the driver sends votes and acknowledgements before the save that records them resolves',
    pkg: 'raft',
    find: 'for (const m of rd.messages)\n            this.send(m);',
    replace:
      'for (const m of [...rd.messages, ...rd.messagesAfterPersist])\n            this.send(m);\n        rd.messagesAfterPersist.length = 0;',
    module: 'raft/family',
    scenario: 'raft-3-slow-disk',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'state-machine-time-adopts-stamp',
    gap: 'state-machine time',
    bug: "the state machine adopts every command's stamp, even one behind its time",
    pkg: 'coord',
    find: 'if (stamp !== undefined && stamp > this.s.nowMs) {',
    replace: 'if (stamp !== undefined) {',
    module: 'coord/family',
    scenario: 'coord-5-ttl-clock-behind',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'gc-ignores-grace',
    gap: 'tombstone GC',
    bug: 'gc collects every tombstone and expired entry at once, ignoring the grace period',
    pkg: 'crdt',
    find: 'const old = collectableAt(state, nowMs, this.tombstoneGraceMs);',
    replace: 'const old = true;',
    module: 'crdt/family',
    scenario: 'crdt-gc',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'lww-tie-ignores-node',
    gap: 'LWW ties',
    bug: 'two states with equal (wallMs, logical) compare equal whatever their node ids',
    pkg: 'crdt',
    find: 'function compareBorn(a, b) {',
    replace:
      'function compareBorn(a, b) {\n    if (a.wallMs === b.wallMs && a.logical === b.logical)\n        return 0;',
    module: 'crdt/family',
    scenario: 'crdt-ties',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'read-index-unconfirmed',
    gap: 'reads',
    bug: 'the leader answers a ReadIndex request at once, without confirming its leadership with a heartbeat round',
    pkg: 'raft',
    find: "if (this.readOnlyOption === 'leaseBased' && allowLease && this.leaseValid()) {",
    replace: 'if (true) {',
    module: 'coord/family',
    scenario: 'coord-5-stale-reads',
    firstSeed: 1,
    budget: 3,
  },
  {
    name: 'lock-expires-at-half-ttl',
    gap: 'locks and leases in time',
    bug: 'a granted lock expires after half its TTL, so a second holder takes it inside the first one’s TTL',
    pkg: 'coord',
    find: 'expiresAt: s.stampMs + ttlSeconds * 1000,',
    replace: 'expiresAt: s.stampMs + ttlSeconds * 500,',
    module: 'coord/family',
    scenario: 'coord-3-partition',
    firstSeed: 1,
    budget: 10,
  },
  {
    name: 'vote-twice-in-a-term',
    gap: 'Raft invariants in coord-*',
    bug: 'a member that voted in this term votes again for another candidate while it knows no leader',
    pkg: 'raft',
    find: '(this.vote === NONE && this.lead === NONE)',
    replace: '(this.lead === NONE)',
    module: 'coord/family',
    scenario: 'coord-5-partition',
    firstSeed: 1,
    budget: 20,
  },
  {
    name: 'lease-ignores-drift-margin',
    gap: 'lease reads under tick drift',
    bug: "the lease lasts E − 1 of the leader's ticks (the drift margin dropped), so a slow leader serves reads after a successor is elected",
    pkg: 'raft',
    find: 'const margin = cfg.leaseDriftMarginTicks ?? Math.ceil(this.electionTimeout / 5);',
    replace: 'const margin = 0;',
    module: 'coord/family',
    scenario: 'coord-5-lease-drift',
    firstSeed: 1,
    budget: 10,
  },
  {
    name: 'lease-always-valid',
    gap: 'lease reads under tick drift',
    bug: 'a leader holds its lease whatever its acknowledgements (no transfer pending): it serves reads until it steps down',
    pkg: 'raft',
    find: 'return quorumAckedWithin(this.id, this.voters, this.progress, this.ticks, this.leaseTicks, this.quorum());',
    replace: 'return true;',
    module: 'coord/family',
    scenario: 'coord-5-lease-drift',
    firstSeed: 1,
    budget: 10,
  },
  {
    name: 'failover-breaks-lease',
    gap: 'failover on connection loss',
    bug: 'a follower that sees its leader’s connection close campaigns at once even with lease reads, so a leader cut off (alive) serves reads from its lease after a successor committed writes',
    pkg: 'raft',
    find: "this.failoverOnDisconnect = cfg.failoverOnDisconnect ?? this.readOnlyOption !== 'leaseBased';",
    replace: 'this.failoverOnDisconnect = true;',
    module: 'coord/family',
    scenario: 'coord-5-lease-drift',
    firstSeed: 1,
    budget: 10,
  },
  {
    name: 'late-timer-counts-one-tick',
    gap: 'lease reads after a pause',
    bug: 'the Raft driver counts one tick per firing of its tick timer, however late it fired: a leader waking from a pause keeps its lease',
    pkg: 'raft',
    find: 'this.pendingTicks += this.dueTicks();',
    replace: 'this.dueTicks();\n            this.pendingTicks++;',
    module: 'coord/family',
    scenario: 'coord-5-stale-lease-reads',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'grant-counts-from-lagging-time',
    gap: 'TTLs after a leaderless stretch',
    bug: 'new deadlines count from state-machine time, which lags the clocks after a whole-cluster outage: a grant made during the catch-up is already over',
    pkg: 'coord',
    find: 'this.s.stampMs = Math.max(this.s.nowMs, stamp ?? 0);',
    replace: 'this.s.stampMs = this.s.nowMs;',
    module: 'coord/family',
    scenario: 'coord-3-ttl-outage',
    firstSeed: 1,
    budget: 6,
  },
  {
    name: 'reissue-on-stale-sequence',
    gap: 'exactly-once through a node',
    bug: "the node's session pool re-sends a retried write as a new command when coord answers stale_sequence or session_expired (its result forgotten), so it applies twice",
    pkg: 'node',
    find: "if (reason === 'session_expired' && trace.attempts === 1 && !reissued)",
    replace: 'if (!reissued)',
    module: 'node-strong/sessions',
    scenario: 'node-strong-3-forgotten-results',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'window-counts-in-flight',
    gap: 'exactly-once through a node',
    bug: "a session's window counts only the commands in flight, so a retried one's result is forgotten once 64 later results passed it",
    pkg: 'coord',
    find: 'return this.nextSeq - 1 - this.ackSeq();',
    replace: 'return this.inFlight.size;',
    module: 'node-strong/sessions',
    scenario: 'node-strong-3-lost-answers',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'ambiguous-write-fails-fast',
    gap: 'fail fast through a node',
    bug: "the node's router answers unavailable for a write that may have been proposed (once the node knows no leader, or at its deadline), so a write its caller was told failed applies",
    pkg: 'node',
    find: 'const ambiguous = hasOutcome && maybeProposed;',
    replace: 'const ambiguous = false;',
    module: 'node-strong/sessions',
    scenario: 'node-strong-3-fail-fast',
    firstSeed: 1,
    budget: 15,
  },
  {
    name: 'queue-requeue-forgotten',
    gap: 'the work queue: redelivery',
    bug: 'take skips every task with a holder, so a task whose worker crashed holding it is never taken again once its lease ran out',
    pkg: 'node',
    find: 'if (doc.holder !== null && doc.deadlineAt > now)',
    replace: 'if (doc.holder !== null)',
    module: 'node-strong/queue',
    scenario: 'queue-strong',
    firstSeed: 1,
    budget: 2,
  },
  {
    name: 'queue-complete-without-fence',
    gap: 'the work queue: completion once',
    bug: 'complete writes the task done with a cooperative write, not a release fenced by (holder, epoch): a worker paused past its TTL completes a task another worker took over',
    pkg: 'node',
    find: "type: 'lease_release',\n            ...this.fenced(),\n            state: done,",
    replace:
      "type: 'lease_cooperative_write',\n            namespace: this.queue.namespace,\n            key: this.key,\n            state: done,",
    module: 'node-strong/queue',
    scenario: 'queue-strong',
    firstSeed: 1,
    budget: 3,
  },
  {
    name: 'cas-fast-fail-without-read-index',
    gap: 'a CAS sure to fail: linearizable read point',
    bug: 'a leader answers a CAS whose version its own state says is stale at once, without confirming a read point, so a deposed leader fails a CAS whose version its successor made current',
    pkg: 'node',
    find: 'let stage = this.m.atReadPoint(() => this.m.sm().doomed(command, { nowMs: this.m.stampMs(), retry }));',
    replace:
      'let stage = { promise: Promise.resolve(this.m.sm().doomed(command, { nowMs: this.m.stampMs(), retry })), cancel() { } };',
    module: 'coord/family',
    scenario: 'coord-5-hot-cas-stale-leader',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'cas-fast-fail-retried',
    gap: 'a CAS sure to fail: exactly once',
    bug: 'the fast path also answers a retried attempt, or a seq the session table knows: a CAS that won, whose answer was lost, is told on its retry that it lost (issue 23)',
    pkg: 'coord',
    find: 'if (at.retry || !session || seq <= session.floorSeq || session.results.has(seq))',
    replace: 'if (!session)',
    module: 'coord/family',
    scenario: 'coord-5-hot-cas',
    firstSeed: 1,
    budget: 6,
  },
  {
    name: 'bounded-read-ignores-apply',
    gap: 'strong reads: bounded staleness',
    bug: 'a bounded read is served once its read point is young enough, whether or not the member has applied through the point, so it can miss writes acknowledged long before',
    pkg: 'node',
    find: 'this.replica.appliedThrough >= p.index - maxLagEntries',
    replace: 'true',
    module: 'node-strong/reads',
    scenario: 'node-strong-3-reads',
    firstSeed: 1,
    // Caught at seed 17 since an idle leader stopped proposing `expire` every second: fewer
    // entries in the log, so a member lags its read point by enough entries less often.
    budget: 25,
  },
  {
    name: 'serializable-read-unapplied-state',
    gap: 'strong reads: serializable',
    bug: 'a node outside the group answers a serializable read from its own state, which applies nothing, instead of asking a member',
    pkg: 'node',
    find: 'if (member)\n                return observed(await this.local.serve(op, c, deadlineMs, minIndex), session);',
    replace:
      'if (true)\n                return observed(await this.local.serve(op, c, deadlineMs, minIndex), session);',
    module: 'node-strong/reads',
    scenario: 'node-strong-3-reads',
    firstSeed: 1,
    budget: 3,
  },
  {
    name: 'serializable-read-below-session',
    gap: 'sessions: strong reads',
    bug: "a member answers a session's serializable or bounded read from its state without waiting to have applied through the session's token",
    pkg: 'node',
    find: 'return this.replica.appliedThrough >= minIndex;',
    replace: 'return true;',
    module: 'node-strong/session-reads',
    scenario: 'node-strong-3-session-reads',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'joined-log-keeps-last-write',
    gap: 'eventual durability: joined log records',
    bug: 'a group commit logs only the last local write of each run it joins into one delta',
    pkg: 'node',
    find: 'joinDeltas(this.ns, deltas)',
    replace: 'joinDeltas(this.ns, deltas.slice(-1))',
    module: 'node-eventual/family',
    scenario: 'node-eventual-isolated-crash',
    firstSeed: 1,
    budget: 10,
  },
  {
    name: 'eventual-read-below-session',
    gap: 'eventual sessions: reads and writes wait for the token',
    bug: 'an eventual call with a session is served at once, whether or not the node covers the session token',
    pkg: 'node',
    find: 'covers: (f) => this.local.replica.covers(f),',
    replace: 'covers: (_f) => true,',
    module: 'node-eventual/sessions',
    scenario: 'node-eventual-5-sessions',
    firstSeed: 1,
    budget: 5,
  },
  {
    name: 'causal-dependency-dropped',
    gap: 'eventual sessions: causal delivery',
    bug: "a replica applies a delta at once, without waiting until it covers the delta's causal deps",
    pkg: 'crdt',
    find: 'if (delta.deps !== undefined && options?.ignoreDeps !== true && !depsCovered(this.ctx, delta)) {',
    replace: 'if (false) {',
    module: 'node-eventual/sessions',
    scenario: 'node-eventual-5-sessions',
    firstSeed: 1,
    budget: 10,
  },
];
