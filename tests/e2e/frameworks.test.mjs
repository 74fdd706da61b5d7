// resq-wasm/react and resq-wasm/vue as users meet them: a React 19 app (in
// StrictMode, built in development mode, where StrictMode mounts twice) and
// a Vue 3 app, each installed from the packed tarball and built with Vite
// (render functions, so no framework plugin), served from the build and run
// in the engine under test. The database's worker in each build is the
// probe worker (test hooks stay out of the package): it counts live-query
// runs and the watches registered, so "one watch" and "no watch" are
// counted, not assumed. Each app
// drives the same scenes through `window.app` (tests/e2e/frameworks/), each
// a subtest:
//   - a list renders from useQuery and updates when another tab inserts
//     (in WebKitGTK, with no OPFS, when its own tab does: see ACROSS_TABS);
//   - 100 components on one query, in StrictMode for React: one query run
//     per commit;
//   - a parameter changed twice at once shows only the newest result from
//     its first appearance on;
//   - an SQL error is shown, and the list works again once it is fixed;
//   - an image and a 10 MB video play from useBlobUrl;
//   - lists whose queries differ only in bytes, 0 and -0, or a number and a
//     bigint show their own rows, and changed bytes theirs;
//   - unmounting ends every watch and revokes every object URL.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENGINE, NO_OPFS, launch, packInto, installProbe } from './harness.mjs';
import { serve } from '../../scripts/serve.mjs';

const VITE = '8.3.8';
const FRAMEWORKS = {
  react: { react: '19.3.1', 'react-dom': '19.3.1' },
  vue: { vue: '3.5.45' },
};

let browser;
let profile;
const apps = {};
const stops = [];

/** Writes, installs and builds the app of `framework`; returns its build's folder. */
function buildApp(framework) {
  const dir = mkdtempSync(join(tmpdir(), `resq-${framework}-`));
  const tarball = packInto(dir);
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify(
      {
        name: `${framework}-app`,
        private: true,
        type: 'module',
        dependencies: { 'resq-wasm': `file:./${tarball}`, ...FRAMEWORKS[framework] },
        devDependencies: { vite: VITE },
      },
      null,
      2,
    ),
  );
  cpSync(join(import.meta.dirname, 'frameworks', framework), dir, { recursive: true });
  cpSync(join(import.meta.dirname, 'frameworks/index.html'), join(dir, 'index.html'));
  cpSync(join(import.meta.dirname, 'frameworks/urls.js'), join(dir, 'src/urls.js'));
  // Media made in the page (a PNG, a WebM): served beside the build.
  mkdirSync(join(dir, 'public'));
  cpSync(join(import.meta.dirname, 'media-files.js'), join(dir, 'public/media-files.js'));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent'], { cwd: dir, stdio: 'inherit' });
  installProbe(dir, {});
  // The probe imports the real worker for its side effects, which a bundler
  // drops from a package that says it has none.
  const pkg = join(dir, 'node_modules/resq-wasm/package.json');
  writeFileSync(pkg, JSON.stringify({ ...JSON.parse(readFileSync(pkg, 'utf8')), sideEffects: ['./pkg/worker-real.js'] }, null, 2));
  // React's development build: only there does StrictMode mount every component twice.
  const mode = framework === 'react' ? ['--mode', 'development'] : [];
  execFileSync(process.execPath, ['node_modules/vite/bin/vite.js', 'build', '--logLevel', 'warn', ...mode], { cwd: dir, stdio: 'inherit' });
  return dir;
}

before(async () => {
  for (const framework of Object.keys(FRAMEWORKS)) {
    const dir = buildApp(framework);
    const server = await serve(join(dir, 'dist'));
    stops.push(server.close, () => rmSync(dir, { recursive: true, force: true }));
    apps[framework] = server.url;
  }
  profile = mkdtempSync(join(tmpdir(), 'resq-profile-'));
  browser = await launch(profile);
});

after(async () => {
  await browser?.close();
  for (const stop of stops) await stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** Polls `check` (run in the page, with `arg`) until it returns something truthy; that, or a timeout error. */
function until(page, check, arg, what) {
  return page.evaluate(
    async ({ check, arg, what }) => {
      const fn = (0, eval)(`(${check})`);
      const deadline = performance.now() + 20_000;
      for (;;) {
        const got = await fn(arg);
        if (got) return got;
        if (performance.now() > deadline)
          throw new Error(`timed out waiting for ${what}; the page shows: ${document.body.innerText.slice(0, 300)}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    { check: check.toString(), arg, what },
  );
}

/** Asks the database's worker (the probe worker) for `what`: `watchRuns` (live-query runs so far) or `watches` (registered now). */
const probe = (page, name, what) =>
  page.evaluate(
    async ({ name, what }) => {
      const channel = new BroadcastChannel('resq-wasm-probe');
      const id = Math.random();
      try {
        return await new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('the probe worker did not answer')), 5000);
          channel.onmessage = ({ data }) => {
            if (data.id !== id) return;
            clearTimeout(timer);
            resolve(data.value);
          };
          channel.postMessage({ probe: what, worker: `resq-wasm: ${name}`, id });
        });
      } finally {
        channel.close();
      }
    },
    { name, what },
  );
const watchRuns = (page, name) => probe(page, name, 'watchRuns');

// Where OPFS holds the database, a second tab writes to it and the lists
// follow that tab's commits. In WebKitGTK, whose OPFS cannot hold one (see
// engines.mjs), the database is a memory one, which only its own tab can
// reach: the app's tab writes, and the lists follow its own commits.
const ACROSS_TABS = !NO_OPFS;
// WebKitGTK here plays no video at all (not even a served WebM) and its
// MediaRecorder writes empty files: there the video's object URL is checked
// for the stored bytes instead.
const PLAYS_VIDEO = ENGINE !== 'webkit';

/** In tab `page`: runs `sql` with `params` on `name` (opened once, as `window.db`, and kept open). */
const run = (page, name, sql, params = []) =>
  page.evaluate(
    async ({ name, sql, params, options }) => {
      window.db ??= await window.resq.open(name, options);
      return window.db.execute(sql, params);
    },
    { name, sql, params, options: ACROSS_TABS ? {} : { storage: 'memory' } },
  );

const texts = (page) => page.evaluate(() => [...document.querySelectorAll('.list')].map((p) => p.textContent));

for (const framework of Object.keys(FRAMEWORKS)) {
  test(`${framework}: useQuery and useBlobUrl in an app built with Vite`, async (t) => {
    const name = `${framework}-app.db`;
    const url = apps[framework];
    const page = await browser.newPage();
    const writer = ACROSS_TABS ? await browser.newPage() : page;
    const sql = 'SELECT s FROM t WHERE k = ? ORDER BY id';
    try {
      if (ACROSS_TABS) await writer.goto(url);
      await page.goto(url);

      await t.test(
        `a list renders from useQuery and updates when ${ACROSS_TABS ? 'another tab' : 'its tab'} inserts; 100 components on one query (React: in StrictMode) are one watch and one query run per commit`,
        async () => {
          // The writer opens the database first: with two tabs, its worker leads and runs the watches.
          await run(writer, name, 'CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, s TEXT)');
          await run(writer, name, "INSERT INTO t(k, s) VALUES (1, 'a'), (2, 'b'), (3, 'c')");
          await page.evaluate(({ name, sql }) => window.app.mount({ name, sql, params: [1], copies: 100 }), { name, sql });
          const first = await until(
            page,
            () => [...document.querySelectorAll('.list')].every((p) => p.textContent === 'a') && document.querySelectorAll('.list').length,
            null,
            '100 lists showing "a"',
          );
          assert.equal(first, 100);
          assert.equal(
            await probe(page, name, 'watches'),
            1,
            'one watch for 100 components on one query (React: in StrictMode, which mounts each twice)',
          );
          const before = await watchRuns(page, name);
          await run(writer, name, "INSERT INTO t(k, s) VALUES (1, 'a2')");
          await until(page, () => [...document.querySelectorAll('.list')].every((p) => p.textContent === 'a,a2'), null, 'the inserted row');
          await new Promise((r) => setTimeout(r, 200));
          assert.equal(
            (await watchRuns(page, name)) - before,
            1,
            'one query run for one commit, whatever the number of components (and StrictMode)',
          );
        },
      );

      await t.test('two parameter changes at once: from the newest result on, nothing older renders', async () => {
        await page.evaluate(() => {
          window.app.renders.length = 0;
          window.app.set({ params: [2] });
          window.app.set({ params: [3] });
        });
        await until(page, () => document.querySelector('.list').textContent === 'c', null, "the newest parameter's result");
        await new Promise((r) => setTimeout(r, 200));
        const renders = await page.evaluate(() => window.app.renders.slice());
        const from = renders.indexOf('c');
        assert.ok(from >= 0, JSON.stringify(renders));
        assert.deepEqual(
          renders.slice(from).filter((r) => r !== 'c'),
          [],
          `after the newest result, only it: ${JSON.stringify(renders)}`,
        );
      });

      await t.test('an SQL error shows in error, and the list works again once the SQL is fixed', async () => {
        await page.evaluate(() => window.app.set({ sql: 'SELECT nope FROM t WHERE k = ?' }));
        const shown = await until(
          page,
          () => /^error: /.test(document.querySelector('.list').textContent) && document.querySelector('.list').textContent,
          null,
          'the error',
        );
        assert.match(shown, /^error: SQLITE_ERROR/);
        await page.evaluate((sql) => window.app.set({ sql }), sql);
        await until(page, () => [...document.querySelectorAll('.list')].every((p) => p.textContent === 'c'), null, 'the list again');
      });

      await t.test(
        `an image ${PLAYS_VIDEO ? 'and a 10 MB video play' : "shows, and a 10 MB video's URL gives its bytes,"} from useBlobUrl, one object URL each`,
        async () => {
          const stored = await writer.evaluate(async (plays) => {
            const { pngFile, recordWebm, longWebm } = await import('/media-files.js');
            // Where nothing plays, the "video" is 10 MB of known bytes.
            const video = plays
              ? await longWebm(await recordWebm({ seconds: 2 }), 10 << 20)
              : new Blob([new Uint8Array(10 << 20).map((_, i) => (i * 7) & 255)]);
            await window.db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
            await window.db.execute('INSERT INTO m(id, data) VALUES (1, ?)', [await pngFile('frameworks')]);
            await window.db.execute('INSERT INTO m(id, data) VALUES (2, ?)', [video]);
            return {
              size: video.size,
              sha: Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', await video.arrayBuffer()))).join(),
            };
          }, PLAYS_VIDEO);
          assert.ok(stored.size >= 10 << 20, `the video is 10 MB (${stored.size} bytes)`);
          await page.evaluate(() => window.app.set({ media: { image: 1, video: 2 } }));
          const shown = await until(
            page,
            async (plays) => {
              const img = document.querySelector('#img');
              const video = document.querySelector('#video');
              if (!(img?.complete && img.naturalWidth > 0 && video && (!plays || video.readyState >= 2))) return null;
              const bytes = plays ? null : await (await fetch(video.src)).arrayBuffer();
              return {
                width: img.naturalWidth,
                duration: plays ? video.duration : null,
                served: bytes && {
                  size: bytes.byteLength,
                  sha: Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))).join(),
                },
                live: window.app.liveUrls(),
              };
            },
            PLAYS_VIDEO,
            'the image and the video',
          );
          assert.ok(shown.width > 0, JSON.stringify(shown));
          if (PLAYS_VIDEO) assert.ok(shown.duration > 0, JSON.stringify(shown));
          else assert.deepEqual(shown.served, stored, "the video's object URL serves the stored bytes");
          assert.equal(shown.live, 2, 'one object URL each');
        },
      );

      await t.test(
        'lists whose queries differ only in an ArrayBuffer, a Uint8Array, 0 and -0, or a number and a bigint show their own rows; changed bytes show theirs at the next render',
        async () => {
          // Eight lists, in pairs that differ in one parameter; each shows how its parameter bound.
          await page.evaluate(() => {
            const bufferOf = (...b) => new Uint8Array(b).buffer;
            window.lists = [[bufferOf(1, 2, 3)], [bufferOf(9, 9, 9)], [new Uint8Array([4, 5, 6])], [new Uint8Array([7, 8, 9])]];
            window.lists.push([0], [-0], [2 ** 53], [2n ** 53n]);
            window.app.set({ sql: "SELECT typeof(?1) || ' ' || quote(?1) AS s", lists: window.lists });
          });
          const shown = (expected) =>
            until(
              page,
              (expected) => {
                const texts = [...document.querySelectorAll('.list')].map((p) => p.textContent);
                return texts.length === 8 && texts.every((text, i) => new RegExp(expected[i]).test(text)) && texts;
              },
              expected,
              `the eight lists' own rows (${expected.join(' | ')})`,
            );
          const pairs = ["^blob X'010203'$", "^blob X'090909'$", "^blob X'040506'$", "^blob X'070809'$"];
          const numbers = ['^integer 0$', '^real ', '^real ', '^integer 9007199254740992$'];
          await shown([...pairs, ...numbers]);
          // The same arrays and buffers, their bytes changed; rendered again.
          await page.evaluate(() => {
            new Uint8Array(window.lists[0][0]).set([7, 7, 7]);
            window.lists[2][0].set([1, 1, 1]);
            window.app.set({});
          });
          const changed = await shown(["^blob X'070707'$", pairs[1], "^blob X'010101'$", ...pairs.slice(3), ...numbers]);
          assert.equal(new Set(changed).size, 8, JSON.stringify(changed));
        },
      );

      await t.test('unmounting ends every watch and revokes every object URL', async () => {
        await page.evaluate(() => window.app.unmount());
        await new Promise((r) => setTimeout(r, 100));
        const gone = await watchRuns(page, name);
        await run(writer, name, "INSERT INTO t(k, s) VALUES (3, 'c2')");
        await writer.evaluate(async () => window.db.query('SELECT count(*) FROM t'));
        await new Promise((r) => setTimeout(r, 300));
        assert.equal((await watchRuns(page, name)) - gone, 0, 'no query run: no watch left');
        assert.equal(await probe(page, name, 'watches'), 0, 'every watch unregistered');
        assert.equal(await page.evaluate(() => window.app.liveUrls()), 0, 'every object URL revoked');
        assert.deepEqual(await texts(page), []);
      });
    } finally {
      await writer.evaluate(() => window.db?.close()).catch(() => {});
      await page.close();
      if (writer !== page) await writer.close();
    }
  });
}
