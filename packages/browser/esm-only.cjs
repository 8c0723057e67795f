// Parley's packages are ES modules only. The "require" condition of every subpath in this
// package's exports map points here, so require() fails with this message rather than a puzzle.
const { name } = require('./package.json');
const error = new Error(
  `${name} is an ES module package (ESM-only): load it with import, or with await import('${name}') from CommonJS; require() is not supported.`,
);
error.code = 'ERR_REQUIRE_ESM';
throw error;
