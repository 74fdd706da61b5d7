// Many tabs (`npm run bench -- tabs`): what following costs. Two pages of
// one origin open one OPFS database; the first leads (its worker holds
// the file), the second follows (its calls cross a MessagePort to the
// leader's worker). Measured in the same run, each pass in both tabs, the
// order of the tabs flipped between passes:
//   - a 1-row `query` round trip;
//   - W1 (INSERT of a 1 MB and an 8 MB BLOB) and W2 (SELECT of it);
//   - invalidation: from the start of a write in one tab to the `watch`
//     callback in the other, which gets the new rows;
//   - failover: the leading tab is closed while the other writes; the
//     time from the close to the follower's first write that succeeds
//     after it, 20 times;
//   - floors, no database: a bare worker in the leading tab answers a
//     message with N fresh bytes, moved, to its own page and to the other
//     tab (through a MessagePort the two tabs got from a SharedWorker),
//     so the cost of crossing between tabs stands beside the package's.
// Results: benches/results/<time>-tabs.json, and the tables on stdout.

import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { serve } from '../scripts/serve.mjs';
import { CHROMIUM_ARGS } from '../tests/e2e/harness.mjs';

const root = resolve(import.meta.dirname, '..');
const server = await serve(root, 0, { isolated: true });
const profile = mkdtempSync(resolve(tmpdir(), 'resq-bench-'));
const browser = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
const url = `${server.url}benches/page/index.html`;

async function tab(name) {
  const page = await browser.newPage();
  page.on('console', (m) => console.error(`[page] ${m.text()}`));
  await page.goto(url);
  await page.evaluate(async (name) => {
    const { open } = await import('resq-wasm');
    globalThis.db = await open(name);
    await db.execute('CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v TEXT, data BLOB)');
    await db.execute("INSERT OR REPLACE INTO t(id, v) VALUES (1, 'one row')");
    // Median and p95 of n timed runs of fn, after 3 untimed ones.
    globalThis.timed = async (fn, n) => {
      for (let i = 0; i < 3; i++) await fn(i);
      const ms = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await fn(i);
        ms.push(performance.now() - t0);
      }
      ms.sort((a, b) => a - b);
      return { median: ms[ms.length >> 1], p95: ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.95))], n };
    };
  }, name);
  return page;
}

/** The round trips, measured in `page` (its role named `role`). */
function roundTrips(page, role) {
  return page.evaluate(async (role) => {
    const rows = [];
    rows.push({ workload: 'query 1 row', role, ...(await timed(() => db.query('SELECT id, v FROM t WHERE id = 1'), 200)) });
    for (const mb of [1, 8]) {
      const bytes = crypto.getRandomValues(new Uint8Array(65536));
      const value = new Uint8Array(mb << 20);
      for (let at = 0; at < value.length; at += bytes.length) value.set(bytes, at);
      const n = mb === 1 ? 30 : 10;
      rows.push({
        workload: `W1 INSERT ${mb} MB`,
        role,
        ...(await timed((i) => db.execute('INSERT OR REPLACE INTO t(id, data) VALUES (?, ?)', [100 + (i % 4), value]), n)),
      });
      rows.push({
        workload: `W2 SELECT ${mb} MB`,
        role,
        ...(await timed((i) => db.query('SELECT data FROM t WHERE id = ?', [100 + (i % 4)]), n)),
      });
    }
    return rows;
  }, role);
}

/**
 * The floors: a bare echo worker in `home`'s tab replies with `mb` MB of
 * fresh bytes, moved; timed from `home` (same tab) and from `away` (the
 * other tab, over a port passed through a SharedWorker).
 */
async function floors(home, away, role) {
  const echo = `
    const reply = (port, mb) => {
      const bytes = new Uint8Array(mb << 20);
      port.postMessage(bytes, [bytes.buffer]);
    };
    onmessage = (e) => {
      const port = e.ports[0];
      if (port) port.onmessage = ({ data }) => reply(port, data);
      else reply(self, e.data);
    };`;
  const connect = (page, isHome) =>
    page.evaluate(
      async ([isHome, echo]) => {
        const sw = new SharedWorker('./floor-broker.js');
        const port = await new Promise((r) => (sw.port.onmessage = (e) => r(e.ports[0])));
        if (isHome) {
          const w = new Worker(URL.createObjectURL(new Blob([echo], { type: 'text/javascript' })));
          w.postMessage(null, [port]);
          globalThis.echoWorker = w;
        } else globalThis.echoPort = port;
      },
      [isHome, echo],
    );
  await Promise.all([connect(home, true), connect(away, false)]);
  const rows = [];
  for (const [page, label, target] of [
    [home, 'floor: bare worker → its own page', 'echoWorker'],
    [away, 'floor: bare worker → the other tab', 'echoPort'],
  ]) {
    rows.push(
      ...(await page.evaluate(
        async ([label, target, role]) => {
          const port = globalThis[target];
          const ask = (mb) => new Promise((r) => ((port.onmessage = (e) => r(e.data)), port.postMessage(mb)));
          const out = [];
          for (const mb of [1, 8])
            out.push({ workload: `${label}, ${mb} MB moved`, role, ...(await timed(() => ask(mb), mb === 1 ? 30 : 10)) });
          return out;
        },
        [label, target, role],
      )),
    );
  }
  return rows;
}

/** From the start of a write in `writer` to the watch callback in `watcher`, n times. */
async function invalidation(writer, watcher, n) {
  await watcher.evaluate(async () => {
    globalThis.lat = [];
    globalThis.sub = db.watch('SELECT max(id) AS id, v FROM t WHERE id >= 1000000', [], (rows) => {
      if (rows[0].id !== null) lat.push(performance.timeOrigin + performance.now() - Number(rows[0].v));
    });
    await sub.ready;
  });
  await writer.evaluate(async (n) => {
    for (let i = 0; i < n; i++) {
      await db.execute('INSERT INTO t(id, v) VALUES (?, ?)', [1000000 + i, String(performance.timeOrigin + performance.now())]);
      await new Promise((r) => setTimeout(r, 20));
    }
    await db.execute('DELETE FROM t WHERE id >= 1000000');
  }, n);
  return watcher.evaluate(async () => {
    await new Promise((r) => setTimeout(r, 200));
    sub();
    const ms = [...lat].sort((a, b) => a - b);
    return {
      workload: 'invalidation: write start → watch callback in the other tab',
      median: ms[ms.length >> 1],
      p99: ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))],
      n: ms.length,
    };
  });
}

/** The leading tab closes while the other writes: close → first success after it, `times` times. */
async function failovers(times) {
  const gaps = [];
  let died = 0;
  for (let i = 0; i < times; i++) {
    const name = `failover-${i}.db`;
    const leader = await tab(name);
    const follower = await tab(name);
    const writing = follower.evaluate(async () => {
      globalThis.closedAt = null;
      let rejected = 0;
      for (;;) {
        try {
          await db.execute("INSERT INTO t(v) VALUES ('w')");
          const now = performance.timeOrigin + performance.now();
          if (globalThis.closedAt !== null && now > globalThis.closedAt) return { gap: now - globalThis.closedAt, rejected };
        } catch (e) {
          if (e.code !== 'RESQ_WORKER_DIED') throw e;
          rejected += 1;
        }
      }
    });
    await new Promise((r) => setTimeout(r, 100));
    const closedAt = await follower.evaluate(() => performance.timeOrigin + performance.now());
    await leader.close();
    await follower.evaluate((t) => (globalThis.closedAt = t), closedAt);
    const { gap, rejected } = await writing;
    gaps.push(gap);
    died += rejected;
    await follower.evaluate(() => db.close());
    await follower.close();
  }
  const sorted = [...gaps].sort((a, b) => a - b);
  return {
    workload: 'failover: leader tab closed → first write that succeeds in the follower',
    median: sorted[sorted.length >> 1],
    worst: sorted.at(-1),
    n: times,
    rejectedInFlight: died,
  };
}

const fmt = (x) => (x === undefined ? '' : x < 1 ? x.toFixed(3) : x < 100 ? x.toFixed(2) : x.toFixed(0));
const results = [];
try {
  for (const [pass, order] of [
    [1, ['leader', 'follower']],
    [2, ['follower', 'leader']],
  ]) {
    const name = `tabs-pass-${pass}.db`;
    const leader = await tab(name);
    const follower = await tab(name);
    const pages = { leader, follower };
    const rows = [];
    for (const role of order) rows.push(...(await roundTrips(pages[role], role)));
    rows.push({ ...(await invalidation(leader, follower, 100)), role: 'leader writes, follower watches' });
    rows.push({ ...(await invalidation(follower, leader, 100)), role: 'follower writes, leader watches' });
    rows.push(...(await floors(leader, follower, 'floor')));
    results.push({ pass, order, rows });
    await Promise.all([leader.close(), follower.close()]);
    console.log(`\n### tabs, pass ${pass} (measured in order: ${order.join(', ')})\n`);
    console.log('| workload | tab | median ms | p95 / p99 ms | n |\n|---|---|---:|---:|---:|');
    for (const r of rows)
      console.log(
        `| ${r.workload} | ${r.role} | ${fmt(r.median)} | ${fmt(r.p95 ?? r.p99)}${r.p99 !== undefined ? ' (p99)' : ''} | ${r.n} |`,
      );
  }
  const f = await failovers(20);
  results.push({ failover: f });
  console.log(
    `\n### failover\n\n| workload | median ms | worst ms | n | in-flight calls rejected |\n|---|---:|---:|---:|---:|\n| ${f.workload} | ${fmt(f.median)} | ${fmt(f.worst)} | ${f.n} | ${f.rejectedInFlight} |`,
  );
  const out = resolve(root, 'benches/results');
  mkdirSync(out, { recursive: true });
  const file = resolve(out, `${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}-tabs.json`);
  const page = await browser.newPage();
  const ua = await page.evaluate(() => navigator.userAgent);
  writeFileSync(file, JSON.stringify({ name: 'tabs', date: new Date().toISOString(), userAgent: ua, results }, null, 2));
  console.log(`\nsaved ${file}`);
} finally {
  await browser.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
