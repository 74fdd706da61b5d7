// What exactly-once costs a following tab (`npm run bench -- follower-cost`).
// Two pages of one origin open one OPFS database; the first leads, the
// second follows. In the follower, in one run: W1 (an INSERT of a 4 KB and
// of a 1 MB BLOB) and W4 (10,000 small rows in one executeBatch), each with
// the record of its answer written in its transaction (as shipped) and
// without (the probe worker strips the calls' numbers before the worker
// sees them, so nothing is recorded), in the order A B B A per pass, two
// passes. Beside them, the page's own part of the bookkeeping, which both
// columns include: the copy of a moved buffer the follower keeps until the
// answer (a structuredClone of the same bytes), and the leader's W1, which
// records nothing.
// Results: benches/results/<time>-follower-cost.json and a table on stdout.

import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { serveWithProbe } from './probe-server.mjs';
import { CHROMIUM_ARGS } from '../tests/e2e/harness.mjs';

const root = resolve(import.meta.dirname, '..');
const server = await serveWithProbe(root);
const profile = mkdtempSync(resolve(tmpdir(), 'resq-bench-'));
const browser = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
const url = `${server.url}benches/page/index.html`;
const NAME = 'follower-cost.db';

async function tab() {
  const page = await browser.newPage();
  page.on('console', (m) => console.error(`[page] ${m.text()}`));
  await page.goto(url);
  await page.evaluate(async (name) => {
    const lib = await import('resq-wasm');
    globalThis.db = await lib.open(name);
    await db.execute(
      'CREATE TABLE IF NOT EXISTS w(id INTEGER PRIMARY KEY, data BLOB); CREATE TABLE IF NOT EXISTS r(id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB, n NULL)',
    );
    const fill = (n) => {
      const v = new Uint8Array(n);
      crypto.getRandomValues(v.subarray(0, Math.min(n, 65536)));
      for (let at = 65536; at < n; at += 65536) v.copyWithin(at, 0, Math.min(65536, n - at));
      return v;
    };
    const small = fill(64);
    const sets = Array.from({ length: 10000 }, (_, i) => [i, i / 7, `row ${i}`, small, null]);
    globalThis.work = {
      'W1 INSERT 4 KB': [() => db.execute('INSERT OR REPLACE INTO w(id, data) VALUES (1, ?)', [fill(4096)]), 100],
      'W1 INSERT 1 MB': [() => db.execute('INSERT OR REPLACE INTO w(id, data) VALUES (2, ?)', [fill(1 << 20)]), 30],
      'W4 INSERT 10,000 rows, one transaction': [
        async () => {
          await db.execute('DELETE FROM r');
          await db.executeBatch('INSERT INTO r(i, f, s, b, n) VALUES (?, ?, ?, ?, ?)', sets);
        },
        5,
      ],
      'page: keep a copy of 4 KB (structuredClone)': [async () => structuredClone(fill(4096)), 100],
      'page: keep a copy of 1 MB (structuredClone)': [async () => structuredClone(fill(1 << 20)), 30],
    };
    // Median of n timed runs, after 3 untimed ones.
    globalThis.timed = async (label) => {
      const [fn, n] = work[label];
      for (let i = 0; i < 3; i++) await fn();
      const ms = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await fn();
        ms.push(performance.now() - t0);
      }
      ms.sort((a, b) => a - b);
      return { median: ms[ms.length >> 1], n };
    };
    globalThis.probe = (what, value) =>
      new Promise((resolve) => {
        const channel = new BroadcastChannel('resq-wasm-probe');
        const id = Math.random();
        channel.onmessage = ({ data }) => data.id === id && (channel.close(), resolve(data.value));
        channel.postMessage({ probe: what, worker: `resq-wasm: ${name}`, id, value });
      });
  }, NAME);
  return page;
}

const fmt = (x) => (x < 1 ? x.toFixed(3) : x < 100 ? x.toFixed(2) : x.toFixed(0));
const results = [];
try {
  const leader = await tab();
  const follower = await tab();
  const rows = ['W1 INSERT 4 KB', 'W1 INSERT 1 MB', 'W4 INSERT 10,000 rows, one transaction'];
  for (const pass of [1, 2]) {
    const order = pass === 1 ? [true, false, false, true] : [false, true, true, false];
    for (const row of rows) {
      for (const [k, record] of order.entries()) {
        await follower.evaluate((on) => probe('recordCalls', on), record);
        const r = await follower.evaluate((row) => timed(row), row);
        results.push({ pass, row, tab: 'follower', record, slot: k, ...r });
      }
    }
    for (const row of rows.slice(0, 2))
      results.push({ pass, row, tab: 'leader', record: false, ...(await leader.evaluate((row) => timed(row), row)) });
    for (const row of ['page: keep a copy of 4 KB (structuredClone)', 'page: keep a copy of 1 MB (structuredClone)']) {
      results.push({ pass, row, tab: 'follower', ...(await follower.evaluate((row) => timed(row), row)) });
    }
  }
  await follower.evaluate(() => probe('recordCalls', true));
  const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];
  console.log(
    '\n| row | pass | follower, recorded (ms) | follower, not recorded (ms) | ratio | leader (ms) |\n|---|---:|---:|---:|---:|---:|',
  );
  for (const row of rows) {
    for (const pass of [1, 2]) {
      const of = (record) =>
        results.filter((r) => r.row === row && r.pass === pass && r.tab === 'follower' && r.record === record).map((r) => r.median);
      const [on, off] = [of(true), of(false)];
      const lead = results.find((r) => r.row === row && r.pass === pass && r.tab === 'leader');
      console.log(
        `| ${row} | ${pass} | ${on.map(fmt).join(' / ')} | ${off.map(fmt).join(' / ')} | ${(median(on) / median(off)).toFixed(3)} | ${lead ? fmt(lead.median) : ''} |`,
      );
    }
  }
  for (const r of results.filter((r) => r.row.startsWith('page:'))) console.log(`| ${r.row} | ${r.pass} | ${fmt(r.median)} | | | |`);
  const out = resolve(root, 'benches/results');
  mkdirSync(out, { recursive: true });
  const file = resolve(out, `${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}-follower-cost.json`);
  const ua = await leader.evaluate(() => navigator.userAgent);
  writeFileSync(file, JSON.stringify({ name: 'follower-cost', date: new Date().toISOString(), userAgent: ua, results }, null, 2));
  console.log(`\nsaved ${file}`);
} finally {
  await browser.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
