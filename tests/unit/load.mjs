// Loads a module of src/js for a unit test under `node --test`, with no
// browser and no build: esbuild bundles the TypeScript (and what it
// imports) into one ES module in a temporary folder, and Node imports it.
// The modules tested this way must not need a browser to load: a worker's
// `self` or the wasm glue would fail here, which keeps them pure.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../../', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'resq-unit-'));
after(() => rmSync(out, { recursive: true, force: true }));

/** The module at `path` (relative to the repository, e.g. 'src/js/store.ts'). */
export async function load(path) {
  const file = join(out, `${path.replace(/[^\w.-]/g, '_')}.mjs`);
  await build({ entryPoints: [join(root, path)], bundle: true, format: 'esm', platform: 'neutral', outfile: file, logLevel: 'error' });
  return import(pathToFileURL(file).href);
}
