import { describe, expect, it } from 'vitest';
import { banner } from './commands/serve.js';

const info = {
  url: 'http://127.0.0.1:4100',
  dataDir: '/data',
  peerId: '12D3KooW',
  addresses: [],
  strong: 'built-in Raft group',
  auth: false,
};

describe('the serve banner', () => {
  it('shows the chosen port, how to pick another, and how clients reach a port other than the default', () => {
    const text = banner(info);
    expect(text).toContain('on http://127.0.0.1:4100');
    expect(text).toMatch(/port {6}4100 \(another: npm start -- -p 4100, or parley serve -p 4100/);
    expect(text).toContain('npx parley -e http://127.0.0.1:4100 …, or export PARLEY_ENDPOINT=http://127.0.0.1:4100');
    expect(text).toContain('npx parley -e http://127.0.0.1:4100 status');
    expect(text).toContain('tls       off (HTTPS: --tls-cert FILE --tls-key FILE)');
  });

  it('on the default port says clients need nothing; with TLS it names the certificate and --cacert', () => {
    const text = banner({ ...info, url: 'https://127.0.0.1:4000', tlsCert: 'cert.pem' });
    expect(text).toContain('port      4000');
    expect(text).toContain('tls       certificate cert.pem (clients of a private CA: --cacert FILE or PARLEY_CACERT)');
    expect(text).toContain('curl --cacert <ca.pem> https://127.0.0.1:4000/readyz');
    expect(banner({ ...info, url: 'http://127.0.0.1:4000' })).toContain('clients   the CLI default');
  });
});
