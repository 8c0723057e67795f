/** @parley/net — transport implementations. */
import './polyfill.js';
