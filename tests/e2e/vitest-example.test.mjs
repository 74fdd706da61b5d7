// The Vitest examples as a user runs them: each copied to a fresh folder
// with the packed package in place of the published one, installed from
// the registry (through the npm cache), and `vitest run`:
// - examples/vitest-browser, in browser mode on the system Chromium: its
//   tests open OPFS databases and clear them between tests;
// - examples/vitest-node, in Vitest's default environment, Node: an app
//   module tested on memory databases through the package's Node entry.
// Every test of each must pass.
//
// In the Chromium pass only (skipped under RESQ_ENGINE=firefox): the
// browser example runs Chromium through Playwright whatever the engine of
// this run, and the Node one needs no browser.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ENGINE, packInto } from './harness.mjs';

const skip = ENGINE !== 'chromium' && 'in the Chromium pass only (see the top of the file)';
const dirs = [];

/** Example `name` in a fresh folder, the packed package installed in it. */
function install(name) {
  const example = resolve(import.meta.dirname, '../../examples', name);
  const dir = mkdtempSync(join(tmpdir(), `resq-${name}-`));
  dirs.push(dir);
  for (const f of readdirSync(example)) if (f !== 'README.md') cpSync(join(example, f), join(dir, f));
  const tarball = packInto(dir);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  pkg.dependencies['resq-wasm'] = `file:./${tarball}`;
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent'], { cwd: dir, stdio: 'inherit' });
  return dir;
}

/** `vitest run` in `dir`; asserts it passed `passed` tests. */
function vitest(dir, passed) {
  const r = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--reporter=verbose'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, CI: '1', NO_COLOR: '1', FORCE_COLOR: '0' },
    timeout: 180_000,
  });
  const out = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, out);
  assert.match(out, new RegExp(`Tests\\s+${passed} passed`), out);
}

after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test('the Vitest browser-mode example passes against the packed package', { skip }, () => {
  vitest(install('vitest-browser'), 2);
});

test("the Vitest Node example (Vitest's default environment) passes against the packed package", { skip }, () => {
  vitest(install('vitest-node'), 3);
});
