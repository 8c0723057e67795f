// Loaded by vitest before every test file: libp2p needs the Node 20 polyfill first.
import '@parley/net/polyfill';
