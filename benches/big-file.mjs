// The largest value a row holds (`npm run bench -- big-file`): a File of
// 2,147,483,640 bytes (2 GiB − 8: SQLite's 2 GiB − 1 limit on a row, less
// the record header beside an INTEGER PRIMARY KEY) made on disk, picked
// through an <input type=file> as a person would, stored and read back
// (benches/page/big-file.js), two passes with the floor and the engine in
// opposite orders. RESQ_BIG_FILE_BYTES sets another size;
// RESQ_BIG_FILE_ENGINES (comma-separated: /pkg/, /target/variants/<name>/)
// compares builds of the package in the same passes (benches/variants.sh).
// RESQ_BIG_FILE_STORAGE=idb stores it with `storage: 'idb'`, beside the
// same bytes written raw into IndexedDB. RESQ_BIG_FILE_HEAP=1 takes heap
// snapshots of each worker of the page meanwhile (tests/e2e/worker-heap.mjs)
// and prints the most one held alive: its JS heap and ArrayBuffers, the
// wasm memory among them. It slows the runs: its timings are not for
// tables.
// Results: benches/results/<time>-big-file.json, and a table on stdout.

import { chromium } from 'playwright-core';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { serveWithProbe } from './probe-server.mjs';
import { CHROMIUM_ARGS } from '../tests/e2e/harness.mjs';
import { sampleWorkerHeaps } from '../tests/e2e/worker-heap.mjs';

const SIZE = Number(process.env.RESQ_BIG_FILE_BYTES ?? 2147483640);
const root = resolve(import.meta.dirname, '..');
const work = mkdtempSync(resolve(tmpdir(), 'resq-big-file-'));
const path = resolve(work, 'big.bin');
// Random bytes, a fresh MiB every 64 MiB and the MiB's index in its first
// 8 bytes, so no two MiB are alike and a misplaced chunk shows.
{
  const fd = openSync(path, 'w');
  let block = randomBytes(1 << 20);
  for (let at = 0, i = 0; at < SIZE; at += block.length, i++) {
    if (i % 64 === 0) block = randomBytes(1 << 20);
    block.writeBigUInt64LE(BigInt(i), 0);
    writeSync(fd, block, 0, Math.min(block.length, SIZE - at));
  }
  closeSync(fd);
}
const engines = (process.env.RESQ_BIG_FILE_ENGINES ?? '/pkg/').split(',');
const storage = process.env.RESQ_BIG_FILE_STORAGE;
const server = await serveWithProbe(root);
let heaps;

const profile = mkdtempSync(resolve(tmpdir(), 'resq-bench-'));
const browser = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage();
  page.on('console', (m) => console.error(`[page] ${m.text()}`));
  if (process.env.RESQ_BIG_FILE_HEAP) heaps = await sampleWorkerHeaps(page, { every: 500 });
  await page.goto(`${server.url}benches/page/index.html`);
  await page.evaluate(() => document.body.append(Object.assign(document.createElement('input'), { type: 'file' })));
  await page.setInputFiles('input[type=file]', path);
  const rows = await page.evaluate(async (args) => (await import('./big-file.js')).run(args), { engines, storage }, { timeout: 0 });
  const fmt = (x) => x.toFixed(x < 10 ? 2 : 0);
  console.log(`\n### a ${SIZE.toLocaleString('en')}-byte File, storage ${rows[0].storage}\n`);
  console.log(
    '| workload | engine | pass | ms | MB/s | floor ms | floor MB/s | engine ÷ floor throughput | wasm memory MB | bytes exact |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|',
  );
  for (const r of rows)
    console.log(
      `| ${r.workload} | ${r.engine} | ${r.pass} | ${fmt(r.median)} | ${fmt(r.mbps)} | ${fmt(r.floorMs)} | ${fmt(r.floorMbps)} | ${r.ratio.toFixed(2)} | ${r.wasmMemory === null ? '' : (r.wasmMemory / 2 ** 20).toFixed(1)} | ${r.exact} |`,
    );
  console.log(`\none byte more: ${rows[0].refused}; rows after: ${rows[0].rowsAfter}`);
  const out = resolve(root, 'benches/results');
  mkdirSync(out, { recursive: true });
  const file = resolve(out, `${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}-big-file${storage ? `-${storage}` : ''}.json`);
  const ua = await page.evaluate(() => navigator.userAgent);
  // Each worker's peak, by where it was served from (the port changes).
  const held = ((await heaps?.stop()) ?? []).map((w) => ({ ...w, url: new URL(w.url).pathname }));
  for (const w of held)
    console.log(`worker ${w.url}: held ${(w.peak / 2 ** 20).toFixed(1)} MiB alive at most, in ${w.samples} heap snapshots`);
  const heapFields = heaps ? { heaps: held } : {};
  writeFileSync(
    file,
    JSON.stringify(
      { name: 'big-file', date: new Date().toISOString(), userAgent: ua, size: SIZE, engines, storage, rows, ...heapFields },
      null,
      1,
    ),
  );
  console.log(`\nraw figures: ${file}`);
} finally {
  await browser.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
