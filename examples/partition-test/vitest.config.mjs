export default { test: { include: ['*.test.mjs'], testTimeout: 60_000 } };
