/**
 * `node.cluster`: the Raft group's status as this member sees it, and its
 * membership operations (one server at a time, through the leader: any node
 * may call them and they are forwarded like every strong call).
 */
import type { PeerId } from '@parley/interface';
import type { Cluster, ClusterStatus, PeerLag } from '../api.js';
import type { NodeContext } from '../context.js';
import type { ResolvedStrongOptions } from './options.js';
import type { StrongReplica } from './replica.js';
import type { StrongRouter } from './router.js';
import type { AdminAction } from './wire.js';

export class ClusterImpl implements Cluster {
  constructor(
    private readonly ctx: NodeContext,
    private readonly replica: StrongReplica,
    private readonly router: StrongRouter,
    private readonly options: ResolvedStrongOptions,
  ) {}

  async status(): Promise<ClusterStatus> {
    const st = this.replica.status();
    const last = this.ctx.storage.raftLog.lastIndex();
    const peers: PeerLag[] = [];
    if (st.state === 'leader' && st.progress) {
      for (const [peer, pr] of Object.entries(st.progress).sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
        if (peer === this.ctx.peerId) continue;
        peers.push({ peer, match: pr.match, lag: Math.max(0, last - pr.match) });
      }
    }
    return {
      self: this.ctx.peerId,
      leader: st.lead === '' ? null : st.lead,
      term: st.term,
      voters: [...st.voters],
      learners: [...st.learners],
      commitIndex: st.commit,
      appliedIndex: this.replica.appliedThrough,
      peers,
    };
  }

  private async admin(action: AdminAction, peer: PeerId): Promise<void> {
    await this.router.send({ kind: 'admin', action, peer }, this.ctx.clock.nowMs() + this.options.callTimeoutMs);
  }

  /**
   * Adds `peer` as a voter (or promotes a learner). `addrs` are not dialled
   * here: the node's transport must already reach the peer (bootstrap list,
   * discovery); the new member catches up by InstallSnapshot and appends.
   */
  addVoter(peer: PeerId, _addrs?: string[]): Promise<void> {
    return this.admin('addVoter', peer);
  }

  addLearner(peer: PeerId, _addrs?: string[]): Promise<void> {
    return this.admin('addLearner', peer);
  }

  promote(peer: PeerId): Promise<void> {
    return this.admin('addVoter', peer);
  }

  removeVoter(peer: PeerId): Promise<void> {
    return this.admin('removeNode', peer);
  }

  transferLeadership(to: PeerId): Promise<void> {
    return this.admin('transferLeadership', to);
  }
}
