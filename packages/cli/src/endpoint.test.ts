import { describe, expect, it } from 'vitest';
import { UsageError } from './client.js';
import { parseEndpoint } from './endpoint.js';

describe('parseEndpoint', () => {
  it('takes URLs, and host:port as plain http', () => {
    expect(parseEndpoint('--endpoint', 'http://127.0.0.1:4000')).toBe('http://127.0.0.1:4000');
    expect(parseEndpoint('--endpoint', 'https://parley.example/base/')).toBe('https://parley.example/base');
    expect(parseEndpoint('--endpoint', '127.0.0.1:4100')).toBe('http://127.0.0.1:4100');
    expect(parseEndpoint('--endpoint', 'localhost:4100')).toBe('http://localhost:4100');
    expect(parseEndpoint('--endpoint', ' [::1]:4100 ')).toBe('http://[::1]:4100');
    expect(parseEndpoint('--endpoint', 'node-3')).toBe('http://node-3');
  });

  it('refuses anything else with a UsageError naming the flag', () => {
    for (const bad of [
      '',
      ' ',
      'not a url',
      ':4100',
      '127.0.0.1:99999',
      'ftp://h:1',
      'http://',
      'http://u:p@h:1',
      'h:1/?x=1',
      'h:1#f',
    ]) {
      let caught: unknown;
      try {
        parseEndpoint('PARLEY_ENDPOINT', bad);
      } catch (err) {
        caught = err;
      }
      expect(caught, bad).toBeInstanceOf(UsageError);
      expect((caught as Error).message, bad).toMatch(/^PARLEY_ENDPOINT: /);
    }
  });
});
