// OPFS persistence through the packed package: data outlives close, a page
// reload and a new tab; one database name is held by one open() at a time.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

/** Opens `name` in `page`, runs `sql` (a script), closes it. */
const write = (page, name, sql) =>
  inPage(
    page,
    async ({ open }, { name, sql }) => {
      const db = await open(name);
      await db.execute(sql);
      await db.close();
    },
    { name, sql },
  );

/** Opens `name` in `page` and returns the rows of `sql` (or the error), closing it again. */
const read = (page, name, sql) =>
  inPage(
    page,
    async ({ open, outcome }, { name, sql }) => {
      const db = await open(name);
      try {
        return await outcome(db.query(sql));
      } finally {
        await db.close();
      }
    },
    { name, sql },
  );

test('data survives close and reopen, several times', async (t) => {
  const name = dbName(t);
  await write(h.page, name, 'CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
  for (const v of ['one', 'two', 'three']) await write(h.page, name, `INSERT INTO t(v) VALUES ('${v}')`);
  await write(h.page, name, "UPDATE t SET v = 'TWO' WHERE v = 'two'");
  assert.deepEqual(await read(h.page, name, 'SELECT v FROM t ORDER BY id'), {
    ok: true,
    value: [{ v: 'one' }, { v: 'TWO' }, { v: 'three' }],
  });
});

test('data survives a page reload (closed first)', async (t) => {
  const name = dbName(t);
  const page = await h.newPage();
  await write(page, name, "CREATE TABLE t(v); INSERT INTO t VALUES ('before reload'), (x'00ff')");
  await page.reload();
  assert.deepEqual(await read(page, name, 'SELECT typeof(v) AS t, length(v) AS n FROM t ORDER BY rowid'), {
    ok: true,
    value: [
      { t: 'text', n: 13 },
      { t: 'blob', n: 2 },
    ],
  });
  await page.close();
});

test('committed data survives a page reload without close', async (t) => {
  const name = dbName(t);
  const page = await h.newPage();
  await inPage(
    page,
    async ({ open }, name) => {
      const db = await open(name);
      await db.execute('CREATE TABLE t(v)');
      await db.executeBatch('INSERT INTO t VALUES (?)', [[1], [2], [3]]);
      await db.transaction((tx) => tx.execute('INSERT INTO t VALUES (4)'));
      // No close(): the page goes away with the database open.
    },
    name,
  );
  await page.reload();
  assert.deepEqual(await read(page, name, 'SELECT v FROM t ORDER BY v'), { ok: true, value: [{ v: 1 }, { v: 2 }, { v: 3 }, { v: 4 }] });
  await page.close();
});

test('data written in one page is read by a new page in the same browser context', async (t) => {
  const name = dbName(t);
  await write(h.page, name, "CREATE TABLE t(v); INSERT INTO t VALUES ('from the first page')");
  const other = await h.newPage();
  assert.deepEqual(await read(other, name, 'SELECT v FROM t'), { ok: true, value: [{ v: 'from the first page' }] });
  await other.close();
});

test('a name open in another tab opens there too, as a share of the same database', async (t) => {
  const name = dbName(t);
  const holder = await h.newPage();
  const other = await h.newPage();
  await inPage(
    holder,
    async ({ open }, name) => {
      globalThis.held = await open(name);
      await globalThis.held.execute("CREATE TABLE t(v); INSERT INTO t VALUES ('held')");
    },
    name,
  );
  const shared = await inPage(
    other,
    async ({ open, outcome }, name) => {
      const db = await open(name);
      await db.execute("INSERT INTO t VALUES ('other')");
      return outcome(db.query('SELECT v FROM t ORDER BY rowid'));
    },
    name,
  );
  assert.deepEqual(shared, { ok: true, value: [{ v: 'held' }, { v: 'other' }] });
  assert.deepEqual(await inPage(holder, async () => (await globalThis.held.query('SELECT count(*) AS n FROM t'))[0].n), 2);
  await Promise.all([holder.close(), other.close()]);
});

test('names that differ only in escaped characters are different databases', async (t) => {
  const base = dbName(t);
  const names = [`dir/${base}`, `dir%2F${base}`, `.${base}`, `${base} ü 🐈`];
  for (const [i, name] of names.entries()) await write(h.page, name, `CREATE TABLE t(v); INSERT INTO t VALUES (${i})`);
  for (const [i, name] of names.entries()) {
    assert.deepEqual(await read(h.page, name, 'SELECT v FROM t'), { ok: true, value: [{ v: i }] }, name);
  }
});
