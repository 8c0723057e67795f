/** The etcd fixture's rule: without etcd, CI fails and a developer's run skips loudly. */
import { describe, expect, it, vi } from 'vitest';
import { requireEtcd } from './etcd-fixture.js';

describe('requireEtcd', () => {
  it('under CI=true a missing etcd throws, after printing how to install it', () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect(() => requireEtcd('a test', { CI: 'true', PARLEY_ETCD_BIN: '/nonexistent/etcd' })).toThrow(
        /CI=true: a test needs etcd.*\n.*etcd was not found/s,
      );
      expect(String(err.mock.calls[0]?.[0])).toContain('apt-get install etcd-server');
    } finally {
      err.mockRestore();
    }
  });

  it('outside CI a missing etcd says so loudly and skips', () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect(requireEtcd('a test', { PARLEY_ETCD_BIN: '/nonexistent/etcd' })).toBeUndefined();
      expect(String(err.mock.calls[0]?.[0])).toMatch(/\*\*\* SKIPPING a test: no etcd/);
    } finally {
      err.mockRestore();
    }
  });
});
