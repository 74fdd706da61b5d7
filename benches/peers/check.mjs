// Proves the peer workers work: for each engine, in headless Chromium on a
// cross-origin isolated page (as the benchmarks run), open a database, write
// with exec and batch, read back, round-trip a 1 MB random BLOB exactly,
// append to it with CAST(data || ? AS BLOB), check errors and rollback,
// close, and (for the OPFS engines) reopen and find the rows still there.
//
//   node benches/peers/check.mjs
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { CHROMIUM_ARGS } from '../../tests/e2e/harness.mjs';

const ENGINES = ['sqlite-wasm', 'wa-sqlite', 'sql.js'];
const root = resolve(import.meta.dirname, '../..');
const server = await serve(root, 0, { isolated: true });
const profile = mkdtempSync(resolve(tmpdir(), 'resq-peers-'));
const browser = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });

// Runs in the page.
async function check(engine) {
  const { openPeer } = await import('/benches/peers/client.js');
  const assert = (ok, what) => {
    if (!ok) throw new Error(`${engine}: ${what}`);
  };
  const random = (n) => {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i += 65536) crypto.getRandomValues(b.subarray(i, i + 65536));
    return b;
  };
  const same = (a, b) => a instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i]);
  const name = `check-${engine.replace('.', '')}`;

  const t0 = performance.now();
  let db = await openPeer(engine, name);
  const [{ x }] = await db.query('SELECT 1 AS x');
  const coldMs = performance.now() - t0;
  assert(x === 1, 'SELECT 1');

  await db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, r REAL, s TEXT, b BLOB, n NULL)');
  const big = random(1 << 20);
  const r1 = await db.exec('INSERT INTO t(id, r, s, b, n) VALUES (?, ?, ?, ?, ?)', [1, 1.5, 'héllo ✓', big, null]);
  assert(r1.changes === 1 && r1.lastInsertRowid === 1, `exec insert reply ${JSON.stringify(r1)}`);

  const sets = Array.from({ length: 100 }, (_, i) => [i + 2, i / 3, `row ${i + 2}`, random(i * 37), null]);
  const rb = await db.batch('INSERT INTO t(id, r, s, b, n) VALUES (?, ?, ?, ?, ?)', sets);
  assert(rb.changes === 100, `batch reply ${JSON.stringify(rb)}`);

  const rows = await db.query('SELECT id, r, s, b, n, typeof(b) AS tb FROM t ORDER BY id');
  assert(rows.length === 101, `row count ${rows.length}`);
  assert(rows[0].r === 1.5 && rows[0].s === 'héllo ✓' && rows[0].n === null && rows[0].tb === 'blob', 'row 1 values');
  assert(same(rows[0].b, big), '1 MB BLOB round trip');
  for (const [i, [id, r, s, b]] of sets.entries()) {
    const row = rows[i + 1];
    assert(row.id === id && row.r === r && row.s === s, `batch row ${id}`);
    // An empty BLOB comes back as an empty Uint8Array (or null for some APIs).
    assert(b.length === 0 ? row.b === null || row.b?.length === 0 : same(row.b, b), `batch BLOB ${id}`);
  }
  const one = await db.query('SELECT b FROM t WHERE id = ?', [50]);
  assert(one.length === 1 && same(one[0].b, sets[48][3]), 'query with params');

  const tail = random(100_000);
  const ra = await db.exec('UPDATE t SET b = CAST(b || ? AS BLOB) WHERE id = ?', [tail, 1]);
  assert(ra.changes === 1, 'append changes');
  const [{ b: appended, tb, len }] = await db.query('SELECT b, typeof(b) AS tb, length(b) AS len FROM t WHERE id = 1');
  const want = new Uint8Array(big.length + tail.length);
  want.set(big);
  want.set(tail, big.length);
  assert(tb === 'blob' && len === want.length && same(appended, want), 'CAST(b || ? AS BLOB) append');

  // A rowid past 32 bits, bound as a number, and reported back.
  const rl = await db.exec('INSERT INTO t(id, s) VALUES (?, ?)', [2 ** 40 + 3, 'big rowid']);
  const bigRowid = rl.lastInsertRowid;
  const [{ id: bigId }] = await db.query('SELECT id FROM t WHERE s = ?', ['big rowid']);
  assert(bigId === 2 ** 40 + 3, `big id read back ${bigId}`);
  assert(bigRowid === 2 ** 40 + 3, `lastInsertRowid past 32 bits: ${bigRowid}`);

  // Errors reject; a failing batch rolls back.
  let err = '';
  await db.query('SELECT * FROM nope').catch((e) => (err = e.message));
  assert(/no such table/.test(err), `error reply "${err}"`);
  err = '';
  await db
    .batch('INSERT INTO t(id, s) VALUES (?, ?)', [
      [500, 'a'],
      [2, 'duplicate'],
    ])
    .catch((e) => (err = e.message));
  assert(/UNIQUE|constraint/i.test(err), `batch error "${err}"`);
  const [{ c }] = await db.query('SELECT count(*) AS c FROM t');
  assert(c === 102, `rollback left ${c} rows`);
  await db.exec('SELECT 1'); // usable after the failed batch

  const settings = db.settings;
  await db.close();
  let reopened = 'n/a (memory)';
  if (engine !== 'sql.js') {
    db = await openPeer(engine, name);
    const [{ c: c2, tot }] = await db.query('SELECT count(*) AS c, sum(length(b)) AS tot FROM t');
    const [{ ps }] = await db.query('SELECT page_size AS ps FROM pragma_page_size');
    assert(c2 === 102, `after reopen ${c2} rows`);
    reopened = `${c2} rows, ${tot} BLOB bytes, page_size ${ps}`;
    await db.close();
  }
  return { settings, coldMs, reopened };
}

let failed = 0;
try {
  const page = await browser.newPage();
  page.on('console', (m) => {
    if (m.location().url.endsWith('/favicon.ico')) return; // the bench page has none
    console.error(`[page ${m.type()}] ${m.text()}`);
  });
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(`${server.url}benches/page/index.html`);
  if (!(await page.evaluate(() => crossOriginIsolated))) throw new Error('the page must be cross-origin isolated');
  console.log(`Chromium ${browser.browser()?.version() ?? ''}, crossOriginIsolated: true`);
  for (const engine of ENGINES) {
    try {
      const { settings: s, coldMs, reopened } = await page.evaluate(check, engine);
      console.log(
        `OK ${engine.padEnd(11)} SQLite ${s.version}, vfs ${s.vfs}: journal_mode=${s.journal_mode} ` +
          `synchronous=${s.synchronous} page_size=${s.page_size}; cold start ${coldMs.toFixed(0)} ms; reopened: ${reopened}`,
      );
    } catch (e) {
      failed++;
      console.log(`FAIL ${engine}: ${e.message.split('\n')[0]}`);
    }
  }
} finally {
  await browser.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
