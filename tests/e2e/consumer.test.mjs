// The package as a Vite user meets it: `npm pack`, then a fresh Vite app
// (the files `npm create vite` writes for its vanilla template, written here
// without its prompts) installs the tarball and vite@8.3.8 from the registry
// (through the user's own npm cache, so repeated runs are quick), imports
// `resq-wasm` by name and is bundled by `vite build` with Vite's defaults:
// no vite.config at all. In headless Chromium, each way of serving the app
// opens an OPFS database, stores a BLOB and reads back its exact bytes, and a
// second tab reads it through the broker:
//   - the build, from a plain static server (no COOP/COEP headers);
//   - the same build under a strict Content-Security-Policy;
//   - the Vite dev server, defaults.
// Each checks that the worker, the broker and the wasm survived bundling:
// the worker script and the wasm came from the app's own URLs with a 200,
// and the wasm was fetched by the worker, never by the page.
//
// Chromium only (under RESQ_ENGINE=firefox the tests are skipped): what this
// file checks is Vite's output (the URLs and the bundle), which is the same
// for every browser, while each engine's own behaviour with the package is
// what the other e2e files check in Firefox too; an install and a build per
// engine would double the slowest file for nothing new.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENGINE, launch, packInto } from './harness.mjs';
import { portOf } from './processes.mjs';
import { serve } from '../../scripts/serve.mjs';

const skip =
  ENGINE !== 'chromium' && 'Chromium only: this file checks what Vite emits, the same for every browser (see the top of the file)';

const VITE = '8.3.8';
const CSP = "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'";

let app;
let browser;
let profile;
const stops = [];

/** Writes the app as `npm create vite` (vanilla) lays it out, importing resq-wasm. */
function writeApp(dir, tarball) {
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify(
      {
        name: 'vite-project',
        private: true,
        version: '0.0.0',
        type: 'module',
        scripts: { dev: 'vite', build: 'vite build', preview: 'vite preview' },
        dependencies: { 'resq-wasm': `file:./${tarball}` },
        devDependencies: { vite: VITE },
      },
      null,
      2,
    ),
  );
  writeFileSync(
    join(dir, 'index.html'),
    `<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>resq-wasm in Vite</title>
  </head>
  <body>
    <div id="app"></div>
    <script type="module" src="/src/main.js"></script>
  </body>
</html>
`,
  );
  mkdirSync(join(dir, 'src'));
  // The app hands the package, as Vite bundled it, to the test.
  writeFileSync(
    join(dir, 'src/main.js'),
    `import { open, ResqError } from 'resq-wasm';

window.resq = { open, ResqError };
document.querySelector('#app').textContent = 'resq-wasm loaded';
`,
  );
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/**
 * Starts `vite` (dev, defaults) in the app, on a port it picks (0);
 * resolves to its URL once it listens (read from /proc, not from Vite's
 * banner: with `CI` set, Vite colours the port inside the URL it prints).
 */
async function viteDev() {
  const child = spawn(process.execPath, ['node_modules/vite/bin/vite.js', '--host', '127.0.0.1', '--port', '0', '--strictPort'], {
    cwd: app,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stops.push(() => child.kill());
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (out += chunk));
  const port = await portOf(child, 'vite listening', () => out);
  return `http://127.0.0.1:${port}/`;
}

before(async () => {
  if (skip) return;
  app = mkdtempSync(join(tmpdir(), 'resq-vite-'));
  const tarball = packInto(app);
  writeApp(app, tarball);
  // --prefer-offline: what the user's npm cache holds is used without asking the registry again.
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent'], { cwd: app, stdio: 'inherit' });
  execFileSync(process.execPath, ['node_modules/vite/bin/vite.js', 'build', '--logLevel', 'warn'], { cwd: app, stdio: 'inherit' });
  profile = mkdtempSync(join(tmpdir(), 'resq-profile-'));
  browser = await launch(profile, { engine: 'chromium' });
});

after(async () => {
  for (const stop of stops) await stop();
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  if (app) rmSync(app, { recursive: true, force: true });
});

/** Paths and statuses of the resources a page or worker fetched, from its own performance timeline. */
const fetched = () => performance.getEntriesByType('resource').map((e) => ({ path: new URL(e.name).pathname, status: e.responseStatus }));

/**
 * Loads `url` in a new tab, opens the OPFS database `name`, stores a 300 KB
 * BLOB and reads it back; a second tab then reads the same row through the
 * broker. Returns what each side saw: { stored, page, worker, follower },
 * with the resources the page and the database worker fetched.
 */
async function roundTrip(url, name) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.addInitScript(() => {
    window.violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.violations.push(`${e.effectiveDirective} ${e.blockedURI}`));
  });
  await page.goto(url);
  await page.waitForFunction(() => window.resq);
  // Each step first waits for a task of the page's own: during the
  // synchronous part of page.evaluate the inspector lets eval and
  // new Function run whatever the page's policy says, which would hide a
  // package that needs them.
  const stored = await page.evaluate(async (name) => {
    await new Promise((task) => setTimeout(task));
    const bytes = new Uint8Array(300 * 1024);
    for (let i = 0; i < bytes.length; i += 65536) crypto.getRandomValues(bytes.subarray(i, i + 65536));
    bytes.set([0, 255, 1, 254], 0);
    window.db = await window.resq.open(name);
    await window.db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
    const { lastInsertRowid } = await window.db.execute('INSERT INTO media(data) VALUES (?)', [bytes]);
    const [row] = await window.db.query('SELECT data FROM media WHERE id = ?', [lastInsertRowid]);
    const digest = async (b) =>
      Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b)), (x) => x.toString(16).padStart(2, '0')).join('');
    return {
      id: lastInsertRowid,
      sent: await digest(bytes),
      got: await digest(row.data),
      length: row.data.length,
      isBytes: row.data instanceof Uint8Array,
    };
  }, name);
  // The database's worker, while it lives: its own timeline shows what it fetched.
  const worker = page.workers().find((w) => w.url().includes('worker'));
  assert.ok(worker, `the database worker is running (workers: ${page.workers().map((w) => w.url())})`);
  const workerFetched = await worker.evaluate(fetched);

  const other = await browser.newPage();
  await other.goto(url);
  await other.waitForFunction(() => window.resq);
  const follower = await other.evaluate(
    async ({ name, id }) => {
      await new Promise((task) => setTimeout(task));
      const db = await window.resq.open(name);
      const [row] = await db.query('SELECT length(data) AS length, hex(substr(data, 1, 4)) AS head FROM media WHERE id = ?', [id]);
      await db.close();
      return row;
    },
    { name, id: stored.id },
  );
  await other.close();

  const seen = await page.evaluate(async () => {
    await new Promise((task) => setTimeout(task));
    await window.db.close();
    const opfs = [];
    for await (const entry of (await navigator.storage.getDirectory()).keys()) opfs.push(entry);
    // Whether the page's policy is in force, tried last: its own violation is not counted.
    const violations = window.violations.slice();
    let evalRuns;
    try {
      evalRuns = eval('true');
    } catch (e) {
      evalRuns = e.name;
    }
    return { opfs, evalRuns, violations, isolated: crossOriginIsolated };
  });
  seen.fetched = await page.evaluate(fetched);
  await page.close();
  assert.deepEqual(errors, [], 'no uncaught error on the page');
  return { stored, page: seen, worker: workerFetched, follower };
}

/** What every way of serving must show: exact bytes in OPFS, and the second tab reading them. */
function assertWorks({ stored, page, follower }) {
  assert.deepEqual(page.violations, [], 'no Content-Security-Policy violation');
  assert.equal(stored.isBytes, true, 'a BLOB comes back as a Uint8Array');
  assert.equal(stored.length, 300 * 1024);
  assert.equal(stored.got, stored.sent, 'the bytes read back are the bytes stored (SHA-256)');
  assert.ok(page.opfs.includes('.resq-wasm'), `the database is in OPFS (root holds: ${page.opfs})`);
  assert.deepEqual(follower, { length: 300 * 1024, head: '00FF01FE' }, 'a second tab reads the row through the broker');
  assert.deepEqual(
    page.fetched.filter((r) => r.path.endsWith('.wasm')),
    [],
    'the page never fetches the wasm',
  );
}

/** The one entry of `list` whose path matches `pattern`. */
function one(list, pattern, what) {
  const found = list.filter((r) => pattern.test(r.path));
  assert.equal(found.length, 1, `${what}: one fetch matching ${pattern} in ${JSON.stringify(list)}`);
  return found[0];
}

test('vite build, defaults: the worker, the broker and both wasms are emitted as assets, unchanged', { skip }, () => {
  const assets = readdirSync(join(app, 'dist/assets'));
  // Two: the plain one, and the one with ciphers that only open(name, { key }) loads.
  for (const name of ['resq_wasm_bg', 'resq_wasm_cipher_bg']) {
    const wasm = assets.filter((f) => f.startsWith(`${name}-`) && f.endsWith('.wasm'));
    assert.equal(wasm.length, 1, `one ${name} wasm in ${assets}`);
    assert.equal(
      sha256(readFileSync(join(app, 'dist/assets', wasm[0]))),
      sha256(readFileSync(join(app, `node_modules/resq-wasm/pkg/wasm/${name}.wasm`))),
      `the emitted ${name} is the package’s, byte for byte`,
    );
  }
  assert.equal(assets.filter((f) => f.endsWith('.wasm')).length, 2, `no other wasm in ${assets}`);
  assert.equal(assets.filter((f) => /^worker-.*\.js$/.test(f)).length, 1, `a worker chunk in ${assets}`);
  assert.equal(assets.filter((f) => /^broker-.*\.js$/.test(f)).length, 1, `a broker chunk in ${assets}`);
  // Nothing of the Node entry reaches a browser build (its `node` condition).
  const withNode = assets.filter(
    (f) => f.endsWith('.js') && /\bnode:|worker_threads/.test(readFileSync(join(app, 'dist/assets', f), 'utf8')),
  );
  assert.deepEqual(withNode, [], 'no chunk imports node: modules');
});

/**
 * What serving the build must show, from the server's log and the timelines:
 * the worker script and the wasm came from the build's assets (the wasm
 * fetched once, by the worker), the broker loaded as a SharedWorker, and
 * nothing was asked for outside the build.
 */
function assertServedFromBuild(r, log) {
  assert.equal(
    one(r.page.fetched, /^\/assets\/worker-[^/]+\.js$/, 'the page').status,
    200,
    'the page loaded the worker script from the build',
  );
  assert.equal(
    one(r.worker, /^\/assets\/resq_wasm_bg-[^/]+\.wasm$/, 'the worker').status,
    200,
    'the worker fetched the wasm from the build',
  );
  // Who asked for what: the browser's Sec-Fetch-Dest.
  const asked = (pattern) => log.filter((e) => pattern.test(e.path)).map(({ status, dest }) => ({ status, dest }));
  assert.deepEqual(
    asked(/^\/assets\/worker-/),
    [{ status: 200, dest: 'worker' }],
    'the leading tab started the worker (the other follows)',
  );
  assert.deepEqual(asked(/^\/assets\/broker-/), [{ status: 200, dest: 'sharedworker' }], 'one broker, loaded as a SharedWorker');
  assert.deepEqual(asked(/\.wasm$/), [{ status: 200, dest: 'empty' }], 'the wasm was fetched once: by the worker, not by the page');
  assert.deepEqual(
    log.filter((e) => e.status !== 200 && e.path !== '/favicon.ico'),
    [],
    'every request was answered from the build',
  );
}

test('the build, served plainly (no COOP/COEP): OPFS, exact bytes, two tabs; worker and wasm from the build’s assets', {
  skip,
}, async () => {
  const log = [];
  const server = await serve(join(app, 'dist'), 0, { log });
  stops.push(server.close);
  const r = await roundTrip(server.url, 'plain.db');
  assertWorks(r);
  assertServedFromBuild(r, log);
  assert.equal(r.page.isolated, false, 'not cross-origin isolated');
  assert.equal(r.page.evalRuns, true, 'no policy here');
});

test('the build under a strict CSP (script-src self + wasm-unsafe-eval, worker-src self), no COOP/COEP', { skip }, async () => {
  const log = [];
  const server = await serve(join(app, 'dist'), 0, { log, headers: { 'content-security-policy': CSP } });
  stops.push(server.close);
  const r = await roundTrip(server.url, 'csp.db');
  assertWorks(r);
  assertServedFromBuild(r, log);
  assert.equal(r.page.isolated, false, 'not cross-origin isolated');
  assert.equal(r.page.evalRuns, 'EvalError', 'the policy is in force: eval is refused');
});

test('the Vite dev server, defaults: OPFS, exact bytes, two tabs; the worker fetches the wasm', { skip }, async () => {
  const url = await viteDev();
  const r = await roundTrip(url, 'dev.db');
  assertWorks(r);
  assert.equal(
    one(r.page.fetched, /\/resq-wasm\/pkg\/worker\.js$/, 'the page').status,
    200,
    'the worker script came from the installed package',
  );
  assert.equal(one(r.worker, /\/resq-wasm\/pkg\/wasm\/resq_wasm_bg\.wasm$/, 'the worker').status, 200, 'the worker fetched the wasm');
});
