// The e2e harness: packs the package (`npm pack`), installs the tarball into
// an empty folder as a user would, serves that folder on 127.0.0.1 and drives
// Debian's Chromium with playwright-core. Pages import 'resq-wasm' by its bare
// name through an import map pointing into node_modules.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve.mjs';

const repo = resolve(import.meta.dirname, '../..');

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** Packs the repo and installs the tarball into a fresh app folder. */
export function installPackedApp() {
  const app = mkdtempSync(join(tmpdir(), 'resq-app-'));
  const tgz = execFileSync('npm', ['pack', '--silent', '--pack-destination', app], { cwd: repo, encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop();
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', join(app, tgz)], { cwd: app, stdio: 'inherit' });
  writeFileSync(
    join(app, 'index.html'),
    `<!doctype html><meta charset="utf-8"><title>resq-wasm test</title>
<script type="importmap">{"imports":{"resq-wasm":"./node_modules/resq-wasm/pkg/index.js"}}</script>
<body>resq-wasm test page</body>`,
  );
  return { app, tarball: join(app, tgz) };
}

/**
 * Puts tests/e2e/probe-worker.js in place of the installed package's worker
 * (the real one becomes worker-real.js): test hooks live in the test app,
 * never in the package.
 */
function installProbe(app, options) {
  const pkg = join(app, 'node_modules/resq-wasm/pkg');
  renameSync(join(pkg, 'worker.js'), join(pkg, 'worker-real.js'));
  const probe = readFileSync(join(import.meta.dirname, 'probe-worker.js'), 'utf8');
  // Imports are hoisted, so the options can come first.
  writeFileSync(join(pkg, 'worker.js'), `const PROBE_OPTIONS = ${JSON.stringify(options)};\n${probe}`);
}

/**
 * Starts the packed app, a server and a browser with a fresh profile.
 * Returns { page, newPage, url, close }. With `isolated`, pages are
 * cross-origin isolated (SharedArrayBuffer exists). With `probe` (options
 * of tests/e2e/probe-worker.js, `{}` for none), databases run in the probe
 * worker: see `probe()` in util.mjs.
 */
export async function start({ isolated = false, probe = null } = {}) {
  const { app, tarball } = installPackedApp();
  if (probe) installProbe(app, probe);
  const server = await serve(app, 0, { isolated });
  const profile = mkdtempSync(join(tmpdir(), 'resq-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
  });
  const errors = [];
  const newPage = async () => {
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e));
    await page.goto(server.url);
    return page;
  };
  const page = await newPage();
  return {
    app,
    tarball,
    url: server.url,
    context,
    page,
    newPage,
    errors,
    async close() {
      await context.close();
      server.close();
      rmSync(profile, { recursive: true, force: true });
      rmSync(app, { recursive: true, force: true });
    },
  };
}
