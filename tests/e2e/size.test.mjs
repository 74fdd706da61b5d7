// Size budgets: what the package makes a page download, gzip-compressed,
// against size-budgets.json (budgets beside the sizes they were set at).
// Passing a budget fails here; a commit that raises one says why. Every
// JS and wasm file the package exports has a budget, so a new entry point
// gets one.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

const repo = resolve(import.meta.dirname, '../..');
const budgets = JSON.parse(readFileSync(join(repo, 'size-budgets.json'), 'utf8'));

const gzip = (file) => gzipSync(readFileSync(join(repo, file)), { level: 9 }).length;

/** The files a module loads by its static imports, itself included (paths from the repository). */
function graph(entry, seen = new Set()) {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  const text = readFileSync(join(repo, entry), 'utf8');
  for (const [, spec] of text.matchAll(/(?:^|[\n;])\s*(?:import|export)\s(?:[^;'"]*?\sfrom\s)?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    graph(join(dirname(entry), spec), seen);
  }
  return seen;
}

/** Bytes of one budget's files: `files` as they are, or the static graph of `graph` less that of `beyond`. */
function measure(b) {
  let files = b.files ?? [...graph(b.graph)];
  if (b.beyond) {
    const core = graph(b.beyond);
    files = files.filter((f) => !core.has(f));
  }
  return { files, bytes: files.reduce((n, f) => n + gzip(f), 0) };
}

test('every size is within its budget (size-budgets.json)', (t) => {
  for (const b of budgets.sizes) {
    const { files, bytes } = measure(b);
    t.diagnostic(
      `${b.what}: ${bytes} bytes gzip (${files.length} file${files.length === 1 ? '' : 's'}); set at ${b.today}, budget ${b.budget}`,
    );
    assert.ok(
      bytes <= b.budget,
      `${b.what}: ${bytes} bytes gzip, over its budget of ${b.budget} (size-budgets.json; a commit that raises it says why)`,
    );
  }
});

test('every JS and wasm file the package exports has a budget', () => {
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  const exported = Object.values(pkg.exports)
    .flatMap((e) => (typeof e === 'string' ? [e] : [e.default, e.node].filter(Boolean)))
    .filter((f) => /\.(js|wasm)$/.test(f))
    .map((f) => f.replace(/^\.\//, ''));
  const budgeted = new Set(budgets.sizes.flatMap((b) => b.files ?? [b.graph]));
  assert.deepEqual(
    exported.filter((f) => !budgeted.has(f)),
    [],
    'exports without a budget',
  );
  // The graph parser finds what it should: the core's modules.
  assert.ok(graph('pkg/index.js').has('pkg/link.js') && graph('pkg/index.js').has('pkg/database.js'));
});
