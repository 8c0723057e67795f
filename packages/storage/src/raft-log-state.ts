/** The Raft log state every store shares lives beside the contract, in @parley/interface. */
export { ENTRY_OVERHEAD_BYTES, entrySizeBytes, RaftLogState, type SavePlan } from '@parley/interface/raft-log-kit';
