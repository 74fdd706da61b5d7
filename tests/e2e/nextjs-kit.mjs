// The package as a Next.js user meets it: `npm pack`, then a fresh Next.js
// app (the App Router files `create-next-app` writes, trimmed to a layout, a
// page and one client component, written here without its prompts) installs
// the tarball, next@16.5.0 and React from the registry (through the user's
// own npm cache, so repeated runs are quick) and is built by one bundler:
// `next build` (Turbopack, Next 16's default) in nextjs.test.mjs, `next
// build --webpack` in nextjs-webpack.test.mjs. The client component
// imports `resq-wasm` at the top of its module, as a user writes it, so the
// server render imports the package too; in the browser, its effect opens
// an OPFS database, stores a BLOB and reads it back, and shows the answer
// in the page.
//
// For the bundler:
//   - the build: it exits 0 and says nothing about the package; both wasms
//     are emitted under the build's static assets, byte for byte the
//     package's, and so are the database worker's code and the broker's
//     (found by their content: each bundler names its chunks its own way);
//     no client chunk imports Node's worker_threads; and the page is not
//     prerendered, so `next start` renders it for every request;
//   - `next start`: the server render answers 200 with the client
//     component in its HTML and logs no error; in headless Chromium the
//     page shows the BLOB read back with its exact bytes, and a second tab
//     adds its own row through the broker, without a worker of its own;
//     the worker's code and the wasm came from the app's own URLs (the
//     assets found in the build) with a 200, and the wasm was fetched by
//     the worker, never by the page.
//
// Chromium only (under other RESQ_ENGINE values the tests are skipped
// without installing anything): what these files check is what Next.js
// emits and serves, the same for every browser, while each engine's own
// behaviour with the package is what the other e2e files check; an install
// and two builds per engine would cost minutes for nothing new.
//
// One file a bundler: each installs its own app, so that the two run side
// by side (tests/e2e/run.mjs) and neither takes two builds' time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENGINE, launch, packInto } from './harness.mjs';
import { portOf } from './processes.mjs';

const skip =
  ENGINE !== 'chromium' &&
  'Chromium only: the Next.js files check what Next.js emits and serves, the same for every browser (see the top of nextjs-kit.mjs)';

const NEXT = '16.5.0';
const REACT = '19.3.1';

/** The two bundlers: the flags of `next build` for each, and what its output says. */
const BUNDLERS = {
  turbopack: { command: 'next build', flags: [], banner: '(Turbopack)' },
  webpack: { command: 'next build --webpack', flags: ['--webpack'], banner: '(webpack)' },
};

let app;
let browser;
let profile;
const stops = [];
/** What the build test found in the build, for the serving test after it: URL paths of the assets. */
let built = null;

/** The BLOB the app stores: 300 KB (past the 64 KB above which the package transfers a BLOB's buffer), starting 00 FF 01 FE. */
function blob() {
  const bytes = new Uint8Array(300 * 1024);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 8)) & 255;
  bytes.set([0, 255, 1, 254]);
  return bytes;
}

/** Writes the app as `create-next-app` (App Router, JavaScript) lays it out, with a client component that uses resq-wasm. */
function writeApp(dir, tarball) {
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify(
      {
        name: 'next-app',
        version: '0.1.0',
        private: true,
        scripts: { dev: 'next dev', build: 'next build', start: 'next start' },
        dependencies: { next: NEXT, react: REACT, 'react-dom': REACT, 'resq-wasm': `file:./${tarball}` },
      },
      null,
      2,
    ),
  );
  mkdirSync(join(dir, 'app'));
  writeFileSync(
    join(dir, 'app/layout.js'),
    `export const metadata = { title: 'resq-wasm in Next.js' };

export default function RootLayout({ children }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
`,
  );
  // Rendered for every request, so the server render that imports the
  // package happens in \`next start\`, where the test watches it, and not
  // only once in the build.
  writeFileSync(
    join(dir, 'app/page.js'),
    `import Store from './store';

export const dynamic = 'force-dynamic';

export default function Home() {
  return (
    <main>
      <h1>resq-wasm in Next.js</h1>
      <Store />
    </main>
  );
}
`,
  );
  // Each tab adds a row and reads it back: the second tab's count shows it
  // reached the first tab's database. Errors are shown too, with their code.
  writeFileSync(
    join(dir, 'app/store.js'),
    `'use client';

import { useEffect, useState } from 'react';
import { open } from 'resq-wasm';

${blob}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

export default function Store() {
  const [result, setResult] = useState('pending');
  useEffect(() => {
    (async () => {
      const db = await open('next.db');
      await db.execute('CREATE TABLE IF NOT EXISTS media(id INTEGER PRIMARY KEY, data BLOB)');
      const { lastInsertRowid } = await db.execute('INSERT INTO media(data) VALUES (?)', [blob()]);
      const [row] = await db.query('SELECT data, (SELECT count(*) FROM media) AS rows FROM media WHERE id = ?', [lastInsertRowid]);
      return {
        rows: row.rows,
        isBytes: row.data instanceof Uint8Array,
        length: row.data.length,
        head: hex(row.data.subarray(0, 4)),
        sha256: hex(new Uint8Array(await crypto.subtle.digest('SHA-256', row.data))),
      };
    })().then(
      (answer) => setResult(JSON.stringify(answer)),
      (e) => setResult(JSON.stringify({ error: String(e?.message ?? e), code: e?.code ?? null })),
    );
  }, []);
  return <output id="result">{result}</output>;
}
`,
  );
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** What each tab must show: its row read back with the exact bytes stored, and `rows` rows in the database. */
const answer = (rows) => {
  const bytes = blob();
  return { rows, isBytes: true, length: bytes.length, head: '00ff01fe', sha256: sha256(bytes) };
};

/** Every file under `dir`, as paths relative to it. */
const filesUnder = (dir) => readdirSync(dir, { recursive: true }).filter((f) => statSync(join(dir, f)).isFile());

/** The environment of `next build` and `next start`: no telemetry (the network is closed here). */
const nextEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };

/**
 * Starts `next start` on the app's build, on a port it picks (0);
 * resolves, once it listens, to its URL and what it has written to stderr
 * so far (a getter).
 */
async function nextStart() {
  const child = spawn(process.execPath, ['node_modules/next/dist/bin/next', 'start', '-H', '127.0.0.1', '-p', '0'], {
    cwd: app,
    env: nextEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stderr = '';
  let exited = null;
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => {
    out += chunk;
    stderr += chunk;
  });
  const gone = new Promise((done) => child.on('exit', (code, signal) => done((exited = code ?? signal))));
  stops.push(() => {
    if (exited === null) child.kill();
    return gone;
  });
  const port = await portOf(child, 'next start listening', () => out);
  return { url: `http://127.0.0.1:${port}/`, stderr: () => stderr };
}

/**
 * A proxy in front of `target` that logs { path, status, dest } for each
 * request, as scripts/serve.mjs does for the Vite test (`dest`: the
 * browser's Sec-Fetch-Dest): `next start` keeps no log, and a shared
 * worker's fetches show in no page's timeline.
 */
function loggingProxy(target, log) {
  const { port } = new URL(target);
  const server = createHttpServer((req, res) => {
    const upstream = request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      log.push({
        path: decodeURIComponent(new URL(req.url, target).pathname),
        status: answer.statusCode,
        dest: req.headers['sec-fetch-dest'],
      });
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (e) => res.writeHead(502).end(String(e)));
    req.pipe(upstream);
  });
  return new Promise((done) => {
    server.listen(0, '127.0.0.1', () => {
      stops.push(() => {
        server.close();
        server.closeAllConnections();
      });
      done(`http://127.0.0.1:${server.address().port}/`);
    });
  });
}

/** Paths, origins and statuses of the resources a page or worker fetched, from its own performance timeline. */
const fetched = () =>
  performance.getEntriesByType('resource').map((e) => {
    const url = new URL(e.name);
    return { path: decodeURIComponent(url.pathname), origin: url.origin, status: e.responseStatus };
  });

/** The one file of `files` (paths under the build's static/) whose content `has`, as the URL path Next serves it at. */
function oneAsset(static_, files, has, what) {
  const found = files.filter((f) => has(readFileSync(join(static_, f))));
  assert.equal(found.length, 1, `${what}: one file in static/ (found: ${found.join(', ') || 'none'})`);
  return `/_next/static/${found[0]}`;
}

/**
 * The tests of one bundler (a key of BUNDLERS): the app installed, built by
 * it, and served by `next start` to Chromium.
 */
export function nextjsTests(bundler) {
  const { command, flags, banner } = BUNDLERS[bundler];
  before(async () => {
    if (skip) return;
    app = mkdtempSync(join(tmpdir(), 'resq-next-'));
    const tarball = packInto(app);
    writeApp(app, tarball);
    // --prefer-offline: what the user's npm cache holds is used without asking the registry again.
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent'], { cwd: app, stdio: 'inherit' });
    profile = mkdtempSync(join(tmpdir(), 'resq-profile-'));
    browser = await launch(profile, { engine: 'chromium' });
  });

  after(async () => {
    for (const stop of stops) await stop();
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (app) rmSync(app, { recursive: true, force: true });
  });

  test(`${command} (${bundler}): both wasms, unchanged, and the worker and the broker are emitted as assets`, {
    skip,
  }, () => {
    const build = spawnSync(process.execPath, ['node_modules/next/dist/bin/next', 'build', ...flags], {
      cwd: app,
      env: nextEnv,
      encoding: 'utf8',
    });
    const output = build.stdout + build.stderr;
    assert.equal(build.status, 0, `next build exits 0:\n${output}`);
    assert.ok(output.includes(banner), `built by ${bundler}:\n${output}`);
    assert.doesNotMatch(output, /resq-wasm|resq_wasm|\.wasm|Critical dependency/i, 'the build says nothing about the package (no warning)');

    const static_ = join(app, '.next', 'static');
    const files = filesUnder(static_);
    const wasm = files.filter((f) => f.endsWith('.wasm'));
    // Two: the plain one, and the one with ciphers that only open(name, { key }) loads.
    assert.equal(wasm.length, 2, `two wasms in static/ (found: ${wasm.join(', ')})`);
    const assets = {};
    for (const name of ['resq_wasm_bg', 'resq_wasm_cipher_bg']) {
      const bytes = sha256(readFileSync(join(app, `node_modules/resq-wasm/pkg/wasm/${name}.wasm`)));
      assets[name] = oneAsset(static_, wasm, (content) => sha256(content) === bytes, `the package's ${name}.wasm, byte for byte`);
    }
    // The chunks: the worker's code calls the wasm's exports by name, which
    // no minifier renames, and only the broker's sets `onconnect`.
    const chunks = files.filter((f) => f.startsWith('chunks/') && f.endsWith('.js'));
    assets.worker = oneAsset(static_, chunks, (content) => content.includes('connection_execute'), 'the database worker’s code');
    assets.broker = oneAsset(static_, chunks, (content) => content.includes('onconnect'), 'the broker’s code');
    // The browser's chunks get the browser entry: nothing of the Node one (its `node` condition).
    const withNode = chunks.filter((f) => readFileSync(join(static_, f), 'utf8').includes('worker_threads'));
    assert.deepEqual(withNode, [], 'no client chunk imports worker_threads');

    const { routes } = JSON.parse(readFileSync(join(app, '.next', 'prerender-manifest.json'), 'utf8'));
    assert.equal(routes['/'], undefined, '/ is not prerendered: next start renders it for each request');
    built = assets;
  });

  test(`next start (${bundler}): server render, then in Chromium OPFS, exact bytes, two tabs; worker and wasm from the build’s assets`, {
    skip,
  }, async () => {
    const assets = built;
    assert.ok(assets, `the ${bundler} build test passed`);
    const server = await nextStart();

    // The server render: the client component is in the HTML, so its module, which imports resq-wasm, ran on the server.
    const html = await fetch(server.url);
    assert.equal(html.status, 200, 'the server render of / answers 200');
    assert.match(await html.text(), /<output id="result">pending<\/output>/, 'the client component was rendered on the server');

    const log = [];
    const url = await loggingProxy(server.url, log);
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url);
    const shown = async (tab) => {
      await tab.waitForFunction(() => document.querySelector('#result')?.textContent !== 'pending', null, { timeout: 60_000 });
      return JSON.parse(await tab.textContent('#result'));
    };
    assert.deepEqual(await shown(page), answer(1), 'the page shows the BLOB read back from OPFS, exact bytes');

    // The database's worker, while it lives: its own timeline shows what it fetched.
    assert.equal(page.workers().length, 1, `one dedicated worker (workers: ${page.workers().map((w) => w.url())})`);
    const [worker] = page.workers();
    const workerFetched = await worker.evaluate(fetched);

    const other = await browser.newPage();
    other.on('pageerror', (e) => errors.push(e.message));
    await other.goto(url);
    assert.deepEqual(await shown(other), answer(2), 'a second tab adds its row to the same database');
    assert.deepEqual(
      other.workers().map((w) => w.url()),
      [],
      'the second tab has no worker of its own: it goes through the broker to the first tab’s',
    );
    await other.close();

    const pageFetched = await page.evaluate(fetched);
    await page.close();
    assert.deepEqual(errors, [], 'no uncaught error on either page');

    const { origin } = new URL(url);
    const elsewhere = [...pageFetched, ...workerFetched].filter((r) => r.origin !== origin);
    assert.deepEqual(elsewhere, [], 'nothing was fetched from another origin');
    assert.deepEqual(
      pageFetched.filter((r) => r.path.endsWith('.wasm')),
      [],
      'the page never fetches the wasm',
    );
    assert.deepEqual(
      workerFetched.filter((r) => r.path.endsWith('.wasm')).map(({ path, status }) => ({ path, status })),
      [{ path: assets.resq_wasm_bg, status: 200 }],
      'the worker fetched the wasm the build emitted, once (and not the cipher one)',
    );
    // The worker's code is its script (webpack) or a chunk its script loads (Turbopack).
    const workerScript = decodeURIComponent(new URL(worker.url()).pathname);
    assert.ok(
      [workerScript, ...workerFetched.map((r) => r.path)].includes(assets.worker),
      `the worker ran the code the build emitted (${assets.worker}; its script ${workerScript}, it fetched ${JSON.stringify(workerFetched)})`,
    );

    // Who asked for what: the browser's Sec-Fetch-Dest.
    const asked = (which) => log.filter(which).map(({ path, status, dest }) => ({ path, status, dest }));
    assert.deepEqual(
      asked((e) => e.dest === 'worker'),
      [{ path: workerScript, status: 200, dest: 'worker' }],
      'the first tab started the worker, from the app’s own URL (the other follows)',
    );
    assert.equal(asked((e) => e.dest === 'sharedworker').length, 1, `one broker, loaded as a SharedWorker: ${JSON.stringify(log)}`);
    assert.deepEqual(
      asked((e) => e.path === assets.broker).map((e) => e.status),
      [200],
      'the broker’s code was served from the build',
    );
    assert.deepEqual(
      asked((e) => e.path.endsWith('.wasm')),
      [{ path: assets.resq_wasm_bg, status: 200, dest: 'empty' }],
      'the wasm was fetched once, by a fetch() (the worker’s), from the build',
    );
    assert.deepEqual(
      log.filter((e) => e.status !== 200 && e.path !== '/favicon.ico'),
      [],
      'every request was answered',
    );
    assert.doesNotMatch(server.stderr(), /resq|error|⨯/i, `the server logged no error:\n${server.stderr()}`);
  });
}
