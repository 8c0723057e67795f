/** The server's pure pieces: time format, loopback detection, error mapping, metrics from node events. */
import { Emitter, NotLeaderError, OutcomeUnknownError, VersionMismatchError } from '@parley/interface';
import type { NodeEvents } from '@parley/node';
import { describe, expect, it } from 'vitest';
import { checkBind, isLoopbackHost } from './auth.js';
import { toErrorEnvelope } from './errors.js';
import { ServerMetrics } from './metrics.js';
import { isoMicros } from './time.js';

describe('isoMicros', () => {
  it('prints UTC with six fractional digits', () => {
    expect(isoMicros(Date.UTC(2026, 7, 28, 4, 35, 33, 991))).toBe('2026-08-28T04:35:33.991000Z');
    expect(isoMicros(0)).toBe('1970-01-01T00:00:00.000000Z');
  });
});

describe('binding', () => {
  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.1', 'example.com', '128.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });

  it('refuses a non-loopback bind without a token, and an empty token anywhere', () => {
    expect(() => checkBind('0.0.0.0', undefined)).toThrow(/PARLEY_API_TOKEN/);
    expect(() => checkBind('0.0.0.0', 'secret')).not.toThrow();
    expect(() => checkBind('127.0.0.1', undefined)).not.toThrow();
    expect(() => checkBind('127.0.0.1', '')).toThrow(/empty/);
  });
});

describe('error envelope', () => {
  it('words a version mismatch as seed 000 does, naming both versions', () => {
    const { envelope } = toErrorEnvelope(new VersionMismatchError('feature-flag', 'mQJnTDvDgJQs', 'CFCvYSgtZnBu'), {
      namespace: 'docs4-config',
      key: 'feature-flag',
    });
    expect(envelope).toEqual({
      status: 409,
      msg: 'Version mismatch for key docs4-config/feature-flag: expected mQJnTDvDgJQs, got CFCvYSgtZnBu',
      error: 'version_mismatch',
    });
    const absent = toErrorEnvelope(new VersionMismatchError('k', 'v1', undefined), { namespace: 'n', key: 'k' });
    expect(absent.envelope.msg).toBe('Version mismatch for key n/k: expected v1, got none');
  });

  it('a retryable error carries Retry-After and the leader hint', () => {
    const { envelope, headers } = toErrorEnvelope(new NotLeaderError('12D3KooWLeader'), {});
    expect(envelope).toMatchObject({ status: 503, error: 'not_leader' });
    expect(headers).toEqual({ 'retry-after': '1', 'x-parley-leader': '12D3KooWLeader' });
  });

  it('an unknown outcome is 504 outcome_unknown, without Retry-After (not to be retried as is)', () => {
    const err = new OutcomeUnknownError('the claim was sent 2 times and its answer was lost', {
      reason: 'stale_sequence',
    });
    const { envelope, headers, unexpected } = toErrorEnvelope(err, {});
    expect(envelope).toMatchObject({ status: 504, error: 'outcome_unknown' });
    expect([headers, unexpected]).toEqual([{}, false]);
  });

  it('framework errors are 4xx; anything else is an internal 500', () => {
    expect(toErrorEnvelope({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }, {}).envelope).toMatchObject({
      status: 413,
      error: 'value_too_large',
    });
    expect(toErrorEnvelope({ validation: [], message: 'body must have required property value' }, {}).envelope).toEqual(
      {
        status: 400,
        msg: 'body must have required property value',
        error: 'invalid_argument',
      },
    );
    const unexpected = toErrorEnvelope(new TypeError('x is undefined'), {});
    expect(unexpected.envelope).toEqual({ status: 500, msg: 'internal error', error: 'internal' });
    expect(unexpected.unexpected).toBe(true);
  });
});

describe('metrics from node events', () => {
  async function scrape(events: Emitter<NodeEvents>, emit: (e: Emitter<NodeEvents>) => void): Promise<string> {
    const metrics = new ServerMetrics(events, { defaultMetrics: false });
    emit(events);
    const { body } = await metrics.render();
    metrics.close();
    return body;
  }

  it('counts leader changes, not term announcements of the same leader', async () => {
    const body = await scrape(new Emitter<NodeEvents>(), (e) => {
      e.emit('raft:term', { term: 1, leader: 'A' });
      e.emit('raft:term', { term: 1, leader: 'A' });
      e.emit('raft:term', { term: 2, leader: null });
      e.emit('raft:term', { term: 2, leader: 'B' });
      e.emit('raft:term', { term: 3, leader: 'B' });
      e.emit('raft:term', { term: 4, leader: 'A' });
    });
    expect(body).toMatch(/^parley_raft_leader_changes_total 2$/m);
    expect(body).toMatch(/^parley_raft_term 4$/m);
    expect(body).toMatch(/^parley_raft_has_leader 1$/m);
  });

  it('exports every hook', async () => {
    const body = await scrape(new Emitter<NodeEvents>(), (e) => {
      e.emit('raft:commit', { ms: 3 });
      e.emit('raft:apply-lag', { entries: 5 });
      e.emit('lock:wait', { namespace: 'n', key: 'k', ms: 1500, granted: true });
      e.emit('gossip:bytes', { direction: 'out', bytes: 100, namespace: 'n' });
      e.emit('gossip:bytes', { direction: 'out', bytes: 20, namespace: 'n' });
      e.emit('delta:applied', { namespace: 'n', keys: 4, origin: 'P' });
      e.emit('antientropy:round', { namespace: 'n', peer: 'P', repairedEntries: 7, bytes: 900 });
      e.emit('replication:lag', { namespace: 'n', lagMs: 250 });
      e.emit('reject:drift', { namespace: 'n', count: 2, peer: 'P' });
      e.emit('reject:decode', { namespace: 'n', peer: 'P', code: 'decode_error' });
      e.emit('storage:fsync', { ms: 2, ops: 10 });
    });
    expect(body).toMatch(/^parley_raft_commit_latency_seconds_count 1$/m);
    expect(body).toMatch(/^parley_raft_apply_lag_entries 5$/m);
    expect(body).toMatch(/^parley_lock_wait_seconds_count\{granted="true"\} 1$/m);
    expect(body).toMatch(/^parley_gossip_bytes_total\{direction="out"\} 120$/m);
    expect(body).toMatch(/^parley_deltas_applied_keys_total 4$/m);
    expect(body).toMatch(/^parley_antientropy_repaired_entries_total 7$/m);
    expect(body).toMatch(/^parley_antientropy_bytes_total 900$/m);
    expect(body).toMatch(/^parley_replication_lag_seconds 0.25$/m);
    expect(body).toMatch(/^parley_rejections_total\{reason="drift"\} 2$/m);
    expect(body).toMatch(/^parley_rejections_total\{reason="decode"\} 1$/m);
    expect(body).toMatch(/^parley_storage_fsync_seconds_count 1$/m);
  });

  it('stops listening when closed', () => {
    const events = new Emitter<NodeEvents>();
    const metrics = new ServerMetrics(events, { defaultMetrics: false });
    expect(events.listenerCount('raft:term')).toBe(1);
    metrics.close();
    expect(events.listenerCount('raft:term')).toBe(0);
  });
});
