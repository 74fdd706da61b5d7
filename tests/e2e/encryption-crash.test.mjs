// An encrypted database after a crash mid-transaction (the renderer, and
// its worker, killed while 25 MB of changes had spilled into the file and
// its journal): a wrong key is RESQ_BAD_KEY and changes nothing, and the
// right key then rolls the hot journal back: every committed row, none of
// the transaction, integrity ok.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests({ key: 'a passphrase' });

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

test('a wrong key on a crashed encrypted database is RESQ_BAD_KEY and changes nothing; the right key rolls it back', async () => {
  const name = 'encrypted-crash.db';
  let page = await h.newPage();
  await inPage(
    page,
    async ({ open }, { name }) => {
      const db = await open(name, { key: 'right' });
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)');
      const blob = new Uint8Array(256 << 10).fill(3);
      for (let i = 0; i < 40; i++) await db.execute('INSERT INTO t(b) VALUES (?)', [blob]);
      await db.close();
    },
    { name },
  );
  await page.close();
  page = await h.newPage();
  const crash = await h.crasher(page);
  await inPage(
    page,
    async ({ open }, { name }) => {
      const db = await open(name, { key: 'right' });
      const blob = new Uint8Array(256 << 10).fill(9);
      // More than the 16 MB page cache: pages spill into the file, the
      // journal holds the old ones; never committed.
      void db.transaction(async (tx) => {
        await tx.execute('UPDATE t SET b = ?', [blob]);
        for (let i = 0; i < 100; i++) await tx.execute('INSERT INTO t(b) VALUES (?)', [blob]);
        window.spilled = true;
        await new Promise(() => {});
      });
      while (!window.spilled) await new Promise((r) => setTimeout(r, 20));
    },
    { name },
  );
  // The crash's own promise may never settle: the page is gone.
  void crash().catch(() => {});
  await new Promise((r) => setTimeout(r, 300));
  await page.close().catch(() => {});
  page = await h.newPage();
  const got = await inPage(
    page,
    async ({ open, outcome }, { name }) => {
      const wrong = await outcome(open(name, { key: 'wrong' }));
      const none = await outcome(open(name));
      const db = await open(name, { key: 'right' });
      const [rows] = await db.query('SELECT count(*) AS n, sum(unicode(substr(b, 100, 1))) AS s FROM t');
      const [{ integrity_check: ok }] = await db.query('PRAGMA integrity_check');
      await db.close();
      return { wrong, none, rows, ok };
    },
    { name },
  );
  await page.close();
  assert.equal(got.wrong.ok, false);
  assert.equal(got.wrong.error.code, 'RESQ_BAD_KEY', got.wrong.error.message);
  assert.equal(got.none.ok, false);
  assert.equal(got.none.error.code, 'RESQ_BAD_KEY', got.none.error.message);
  assert.deepEqual(got.rows, { n: 40, s: 40 * 3 }, 'the committed rows, none of the transaction');
  assert.equal(got.ok, 'ok');
});
