/**
 * The public API has doc comments: every export of the public packages' entry points
 * (what `npm run docs` renders with TypeDoc) must carry one. Exports that lacked one
 * when this check was written are listed in api-docs.baseline.json; the list may only
 * shrink — a new undocumented export fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from './http-harness.js';

const PACKAGES = ['interface', 'crdt', 'raft', 'coord', 'etcd', 'storage', 'net', 'node', 'server', 'mcp'];
const baseline = JSON.parse(readFileSync(join(ROOT, 'test/api-docs.baseline.json'), 'utf8')) as Record<
  string,
  string[]
>;

function undocumentedExports(): Record<string, string[]> {
  const files = PACKAGES.map((p) => join(ROOT, 'packages', p, 'src/index.ts'));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const out: Record<string, string[]> = {};
  PACKAGES.forEach((p, i) => {
    const source = program.getSourceFile(files[i] as string);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`no module for @parley/${p}`);
    out[p] = checker
      .getExportsOfModule(module)
      .filter((exp) => {
        const symbol = exp.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exp) : exp;
        return ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim() === '';
      })
      .map((exp) => exp.name)
      .sort();
  });
  return out;
}

describe('public API doc comments', () => {
  it('every export of the public packages has a doc comment (or is in the shrinking baseline)', () => {
    const missing = undocumentedExports();
    const fresh: string[] = [];
    const fixed: string[] = [];
    for (const p of PACKAGES) {
      const known = new Set(baseline[p] ?? []);
      for (const name of missing[p] ?? []) if (!known.has(name)) fresh.push(`@parley/${p}: ${name}`);
      for (const name of known) if (!(missing[p] ?? []).includes(name)) fixed.push(`@parley/${p}: ${name}`);
    }
    if (fixed.length > 0) {
      console.info(`documented since the baseline (remove from test/api-docs.baseline.json): ${fixed.join(', ')}`);
    }
    expect(fresh, 'exports without a doc comment: add one (/** … */) where they are declared').toEqual([]);
    // Sanity: the check sees the exports it is about.
    expect(missing.mcp).toEqual([]);
  }, 60_000);
});
