/**
 * `coord-*`: @parley/coord's state machine applied by a real Raft group of 3
 * or 5 voters under faults, driven by simulated clients. Each voter is the
 * node's own strong group member (`StrongReplica` of @parley/node, booted over
 * the host's seams in ./host.ts).
 *
 * Clients register a session through the log, then issue one operation at a
 * time — set, CAS (`ifVersion`), create-only (`ifNotExists`), delete, get,
 * claim, lease acquire/renew/write/release/get, lock acquire (sometimes a
 * blocking wait)/renew/release/inspect and fenced writes — to the host they
 * believe leads, retrying the same (client id, seq) after a timeout or a
 * leader change; a call unanswered for long is recorded as indeterminate.
 * Voters' clocks are skewed; the leader stamps every command with its clock.
 *
 * Checked after every event: Raft's safety invariants (election safety, log
 * matching, leader completeness, state-machine safety), no driver stopped, every replica computes the
 * same result for the same log index, state-machine time never goes back on
 * a replica. After healing: byte-identical snapshots on every voter; the
 * histories are linearizable under the parley-entry, parley-lease and
 * parley-lock models (per key); the fencing checker over the applied command
 * stream; the durability checker over each voter's disk after a crash and
 * restart of every voter.
 *
 * `coord-*-ttl-skew` runs TTL rounds instead: a fresh entry or lease per
 * round is written with a short TTL, then polled by another client while
 * the leader changes. Expiry (a read finding it gone, a contender taking the
 * lease) must never happen before the deadline minus the skew bound, and a
 * lease must be free once its deadline plus the skew bound has passed (a
 * leader change neither resets nor extends the remaining time).
 *
 * Layout: ./host.ts (a voter: the node's member over the host's seams), ./config.ts
 * (configuration, constants, client shapes), ./setup.ts (the group, clients, invariants and
 * end checks), ../voter-checks.ts (snapshot agreement and durability, shared with node-strong-*), ./workload.ts (mixed and TTL
 * workloads), ./scenarios.ts (the scenario table). Importing this module registers the scenarios.
 */

import { registerScenario } from '../../registry.js';
import { COORD_SCENARIOS } from './scenarios.js';

export type { CoordScenarioConfig } from './config.js';
export { COORD_SCENARIOS } from './scenarios.js';
export { coordScenario } from './setup.js';

for (const s of COORD_SCENARIOS) registerScenario(s);
