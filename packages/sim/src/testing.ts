/**
 * `@parley/sim/testing`: the user harness moved to its own package,
 * `@parley/testing`; this path re-exports it for now. Import `@parley/testing`
 * (or `parley/testing`). Compiled by tsconfig.testing.json, after
 * `@parley/testing`, which itself builds on this package.
 */
export * from '@parley/testing';
