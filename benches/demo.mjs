// The demo app with a 500 MB video (`npm run bench -- demo`): what a person
// waits for, measured through the app's own UI in headless Chromium.
//
//   - store: the video dropped on the page, until its card is in the grid
//     (its thumbnail made from the File, then one INSERT with the File as a
//     parameter, which the package streams into the row);
//   - open: a click on the card, until the player has its first frame
//     (`loadeddata`), and until it plays (`playing`);
//   - seek: `currentTime` set to the middle, until `seeked`.
//
// Opening is measured both ways the app can feed its player: the service
// worker's `media/<id>` URL, which streams the ranges the player asks for
// (`blobStream`), and a `blobFile` Blob, which the app falls back to when the
// page is not controlled (here: a reload that bypasses the service worker,
// as shift-reload does). Two passes, the ways in opposite orders, three
// opens each. Beside each figure, what the page's main thread did meanwhile:
// its busy time (gaps in a MessageChannel ping loop, benches/page/measure.js;
// the page is cross-origin isolated for 5 µs timers) and its longest task
// (PerformanceObserver 'longtask', 50 ms and over): the page must not freeze.
//
// Then the app's page size (64 KB, set in www/db.js) against SQLite's default
// (4 KB): the same video stored with the package alone into a fresh database
// of each, and the first read of 1 MB at 256 MB after the database is opened
// again (a far seek walks the value's chain of pages). Two passes, opposite
// orders.
//
// The video is real: a WebM recorded in the page from a noisy canvas with
// MediaRecorder at a high bitrate, re-muxed (tests/e2e/media-files.js) into
// a file of at least 500 MB by repeating its clusters with shifted
// timecodes, with a Duration and Cues.
// Results: benches/results/<time>-demo.json, and the tables on stdout.

import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { serve } from '../scripts/serve.mjs';
import { CHROMIUM_ARGS } from '../tests/e2e/harness.mjs';

const root = resolve(import.meta.dirname, '..');
const TARGET = 500 * 2 ** 20;
const OPENS = 3;
const server = await serve(resolve(root, 'www'), 0, {
  isolated: true,
  mounts: { '/node_modules/resq-wasm/pkg/': resolve(root, 'pkg') },
  overrides: {
    '/bench/media-files.js': readFileSync(resolve(root, 'tests/e2e/media-files.js'), 'utf8'),
    '/bench/measure.js': readFileSync(resolve(root, 'benches/page/measure.js'), 'utf8'),
  },
});
// A real on-disk profile: OPFS on disk, as for a person.
const profile = mkdtempSync(resolve(tmpdir(), 'resq-bench-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  args: CHROMIUM_ARGS,
  viewport: { width: 1280, height: 800 },
});
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fmt = (x) => (x < 1 ? x.toFixed(3) : x < 100 ? x.toFixed(2) : x.toFixed(0));

async function ready(page) {
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60_000 });
  await page.evaluate(LONG_TASKS);
}

/** Loads the app: `controlled` through the service worker, or past it (as shift-reload does). */
async function load(page, controlled) {
  if (controlled) await page.reload();
  else await (await page.context().newCDPSession(page)).send('Page.reload', { ignoreCache: true });
  await ready(page);
  const is = await page.evaluate(() => !!navigator.serviceWorker.controller);
  if (is !== controlled) throw new Error(`the page is ${is ? '' : 'not '}controlled`);
}

/** In the page: `longTasks()` starts noting the main thread's long tasks; `.longest()` gives the longest so far, in ms (0: none). */
const LONG_TASKS = `globalThis.longTasks = () => {
  let longest = 0;
  const observer = new PerformanceObserver((list) => list.getEntries().forEach((e) => (longest = Math.max(longest, e.duration))));
  observer.observe({ type: 'longtask' });
  return { longest: () => (observer.takeRecords().forEach((e) => (longest = Math.max(longest, e.duration))), observer.disconnect(), longest) };
};`;

/** Clicks the card `name`; times the first frame, playback, and a seek to the middle. */
function openAndSeek(page, name) {
  return page.evaluate(async (name) => {
    const { busy } = await import('/bench/measure.js');
    const t = {};
    const tasks = longTasks();
    const at = (event) =>
      new Promise((resolve) => document.addEventListener(event, () => resolve(performance.now()), { capture: true, once: true }));
    const card = [...document.querySelectorAll('#grid .card .open')].find((b) => b.title === name);
    t.busyOpen = await busy(async () => {
      const frame = at('loadeddata');
      const playing = at('playing');
      const t0 = performance.now();
      card.click();
      t.firstFrame = (await frame) - t0;
      t.playing = (await playing) - t0;
    });
    const video = document.querySelector('#viewer video');
    t.src = video.getAttribute('src').startsWith('blob:') ? 'blobFile' : video.getAttribute('src');
    t.longestOpen = tasks.longest();
    const seekTasks = longTasks();
    t.busySeek = await busy(async () => {
      const seeked = at('seeked');
      const t0 = performance.now();
      video.currentTime = video.duration / 2;
      t.seek = (await seeked) - t0;
    });
    t.longestSeek = seekTasks.longest();
    t.at = video.currentTime;
    t.duration = video.duration;
    document.querySelector('#viewer [data-close]').click();
    return t;
  }, name);
}

try {
  const page = await browser.newPage();
  page.on('console', (m) => m.type() === 'error' && console.error(`[page] ${m.text()}`));
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(server.url);
  await ready(page);

  console.error('recording a clip and building the 500 MB video…');
  const file = await page.evaluate(async (target) => {
    const m = await import('/bench/media-files.js');
    const clip = await m.recordWebm({ seconds: 4, width: 1280, height: 720, bitrate: 40e6, keyframeMs: 1000, noise: true });
    const video = new File([await m.longWebm(clip, target)], 'big-video.webm', { type: 'video/webm' });
    globalThis.bigVideo = video;
    return { clip: clip.size, bytes: video.size };
  }, TARGET);
  console.error(`clip ${file.clip} bytes, video ${file.bytes} bytes`);

  // Store: the drop, until the card shows.
  const store = await page.evaluate(async () => {
    const { busy } = await import('/bench/measure.js');
    const out = {};
    const tasks = longTasks();
    out.busy = await busy(async () => {
      const t0 = performance.now();
      const dt = new DataTransfer();
      dt.items.add(globalThis.bigVideo);
      document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      while (![...document.querySelectorAll('#grid .card .name')].some((e) => e.textContent === 'big-video.webm'))
        await new Promise((r) => setTimeout(r, 20));
      out.ms = performance.now() - t0;
    });
    out.longestTask = tasks.longest();
    const sizes = await (await import('resq-wasm')).open('library.db').then(async (db) => {
      const [row] = await db.query("SELECT size, length(data) AS n, duration FROM items WHERE name = 'big-video.webm'");
      await db.close();
      return row;
    });
    return { ...out, ...sizes };
  });
  if (store.n !== file.bytes) throw new Error(`stored ${store.n} bytes of ${file.bytes}`);
  console.error(`stored in ${fmt(store.ms)} ms`);

  // The page size: the same video into a fresh database at 4 KB and at 64 KB pages.
  const pageSizes = [];
  for (const [i, order] of [
    [4096, 65536],
    [65536, 4096],
  ].entries()) {
    const rows = await page.evaluate(async (order) => {
      const { open } = await import('resq-wasm');
      const MB = 2 ** 20;
      const rows = [];
      for (const size of order) {
        const name = `page-size-${size}-${Math.random().toString(36).slice(2, 8)}.db`;
        let db = await open(name);
        await db.execute(`PRAGMA page_size = ${size}`);
        await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
        let t0 = performance.now();
        await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [globalThis.bigVideo]);
        const store = performance.now() - t0;
        const [{ page_size }] = await db.query('SELECT page_size FROM pragma_page_size()');
        const far = [];
        for (let n = 0; n < 3; n++) {
          await db.close();
          db = await open(name);
          t0 = performance.now();
          await db.readBlob('v', 'data', 1, { offset: 256 * MB, length: MB });
          far.push(performance.now() - t0);
        }
        await db.close();
        rows.push({ pageSize: page_size, store, far: far.sort((a, b) => a - b), farMedian: far[1] });
      }
      return rows;
    }, order);
    pageSizes.push({ pass: i + 1, order, rows });
  }
  await page.evaluate(() => delete globalThis.bigVideo);

  const passes = [
    ['route', 'file'],
    ['file', 'route'],
  ];
  const results = [];
  for (const [i, order] of passes.entries()) {
    const rows = [];
    for (const way of order) {
      await load(page, way === 'route');
      const runs = [];
      for (let n = 0; n < OPENS; n++) runs.push(await openAndSeek(page, 'big-video.webm'));
      if (runs.some((r) => (r.src === 'blobFile') !== (way === 'file'))) throw new Error(`the ${way} way played from ${runs[0].src}`);
      for (const [key, label] of [
        ['firstFrame', 'open: click to first frame (loadeddata)'],
        ['playing', 'open: click to playing'],
        ['seek', 'seek to the middle: to seeked'],
        ['busyOpen', 'open: main-thread busy'],
        ['longestOpen', 'open: longest main-thread task'],
        ['busySeek', 'seek: main-thread busy'],
        ['longestSeek', 'seek: longest main-thread task'],
      ]) {
        const xs = runs.map((r) => r[key]);
        rows.push({
          workload: label,
          config: way === 'route' ? 'service worker (media/<id>?v=…, blobStream)' : 'blobFile',
          median: median(xs),
          p95: Math.max(...xs),
          n: xs.length,
          samples: xs,
        });
      }
      rows.push({
        workload: 'seeked to (s) of duration (s)',
        config: way,
        median: median(runs.map((r) => r.at)),
        duration: runs[0].duration,
        n: runs.length,
      });
    }
    results.push({ pass: i + 1, args: { order }, rows });
  }

  console.log(
    `\n### demo: a ${file.bytes.toLocaleString('en-US')}-byte WebM (${fmt(results[0].rows.find((r) => r.duration).duration)} s)\n`,
  );
  console.log(
    `store through the app (drop to card): ${fmt(store.ms)} ms, main-thread busy ${fmt(store.busy)} ms, longest task ${fmt(store.longestTask)} ms\n`,
  );
  for (const { pass, args, rows } of results) {
    console.log(`pass ${pass} ${JSON.stringify(args)}\n\n| workload | way | median ms | max ms | n |\n|---|---|---:|---:|---:|`);
    for (const r of rows) if (!r.duration) console.log(`| ${r.workload} | ${r.config} | ${fmt(r.median)} | ${fmt(r.p95)} | ${r.n} |`);
    console.log('');
  }
  console.log('page size | store the video, ms | 1 MB at 256 MB after open, ms (3 reads: low, median, high)\n---|---:|---');
  for (const { pass, rows } of pageSizes)
    for (const r of rows) console.log(`${r.pageSize} (pass ${pass}) | ${fmt(r.store)} | ${r.far.map(fmt).join(', ')}`);
  const out = resolve(root, 'benches/results');
  mkdirSync(out, { recursive: true });
  const path = resolve(out, `${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}-demo.json`);
  const userAgent = await page.evaluate(() => navigator.userAgent);
  writeFileSync(
    path,
    JSON.stringify({ name: 'demo', date: new Date().toISOString(), userAgent, video: file, store, results, pageSizes }, null, 1),
  );
  console.log(`raw figures: ${path}`);
} finally {
  await browser.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
