// examples/vitest-browser as a user runs it: copied to a fresh folder with
// the packed package in place of the published one, installed from the
// registry (through the npm cache), and `vitest run` in browser mode on the
// system Chromium. Its tests open OPFS databases and clear them between
// tests; here they must pass, both of them.
//
// Chromium only (skipped under RESQ_ENGINE=firefox): the example runs
// Chromium through Playwright whatever the engine of this run.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ENGINE, packInto } from './harness.mjs';

const skip = ENGINE !== 'chromium' && 'Chromium only: the example drives Chromium itself (see the top of the file)';
const example = resolve(import.meta.dirname, '../../examples/vitest-browser');
let dir;

before(() => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'resq-vitest-'));
  for (const f of ['package.json', 'vitest.config.js', 'media.test.js']) cpSync(join(example, f), join(dir, f));
  const tarball = packInto(dir);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  pkg.dependencies['resq-wasm'] = `file:./${tarball}`;
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent'], { cwd: dir, stdio: 'inherit' });
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the Vitest browser-mode example passes against the packed package', { skip }, () => {
  const r = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--reporter=verbose'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, CI: '1', NO_COLOR: '1', FORCE_COLOR: '0' },
    timeout: 180_000,
  });
  const out = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, out);
  assert.match(out, /Tests\s+2 passed/, out);
});
