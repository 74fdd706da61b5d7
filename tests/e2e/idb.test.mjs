// IndexedDB storage (issue 30), asked for explicitly: `open(name, {
// storage: 'idb' })` keeps the database in IndexedDB, in every engine
// (WebKitGTK too, whose workers have no OPFS sync access handles). Its data
// outlives close, a reload without close and a new tab; a large value goes
// in and out whole; another tab shares the database through the leader;
// export() and importDatabase() move a database between OPFS and
// IndexedDB, both ways.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE, NO_OPFS, start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { test as engineTest } from './engines.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

const idb = { storage: 'idb' };

/** Opens `name` on IndexedDB in `page`, runs `sql` (a script), closes it. */
const write = (page, name, sql) =>
  inPage(
    page,
    async ({ open }, { name, sql, idb }) => {
      const db = await open(name, idb);
      await db.execute(sql);
      await db.close();
    },
    { name, sql, idb },
  );

/** Opens `name` on IndexedDB in `page` and returns the rows of `sql` (or the error), closing it again. */
const read = (page, name, sql) =>
  inPage(
    page,
    async ({ open, outcome }, { name, sql, idb }) => {
      const db = await open(name, idb);
      try {
        return await outcome(db.query(sql));
      } finally {
        await db.close();
      }
    },
    { name, sql, idb },
  );

test('an IndexedDB database keeps its data through close and reopen', async (t) => {
  const name = dbName(t);
  await write(h.page, name, 'CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
  for (const v of ['one', 'two', 'three']) await write(h.page, name, `INSERT INTO t(v) VALUES ('${v}')`);
  await write(h.page, name, "UPDATE t SET v = 'TWO' WHERE v = 'two'");
  assert.deepEqual(await read(h.page, name, 'SELECT v FROM t ORDER BY id'), {
    ok: true,
    value: [{ v: 'one' }, { v: 'TWO' }, { v: 'three' }],
  });
  assert.deepEqual(await read(h.page, name, 'PRAGMA integrity_check'), { ok: true, value: [{ integrity_check: 'ok' }] });
});

test('an IndexedDB database keeps every answered commit through a reload without close', async (t) => {
  const name = dbName(t);
  const page = await h.newPage();
  await inPage(
    page,
    async ({ open }, { name, idb }) => {
      const db = await open(name, idb);
      await db.execute('CREATE TABLE t(v)');
      await db.executeBatch('INSERT INTO t VALUES (?)', [[1], [2], [3]]);
      await db.transaction((tx) => tx.execute('INSERT INTO t VALUES (4)'));
      // No close(): the page goes away with the database open.
    },
    { name, idb },
  );
  await page.reload();
  assert.deepEqual(await read(page, name, 'SELECT v FROM t ORDER BY v'), { ok: true, value: [{ v: 1 }, { v: 2 }, { v: 3 }, { v: 4 }] });
  await page.close();
});

test('a 24 MB value goes into IndexedDB and comes back whole, after a checkpoint too', async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async ({ open }, { name, idb }) => {
      const bytes = new Uint8Array(24 << 20);
      for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i >> 12) & 255;
      const digest = async (b) => [...new Uint8Array(await crypto.subtle.digest('SHA-256', b))].join(',');
      const want = await digest(bytes);
      let db = await open(name, idb);
      await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
      await db.execute('INSERT INTO m(data) VALUES (?)', [new File([bytes], 'clip.bin')]);
      await db.close();
      db = await open(name, idb);
      const [{ data }] = await db.query('SELECT data FROM m');
      const before = (await digest(data)) === want;
      const [ckpt] = await db.query('PRAGMA wal_checkpoint(TRUNCATE)');
      await db.close();
      db = await open(name, idb);
      const [{ data: again }] = await db.query('SELECT data FROM m');
      const [{ integrity_check }] = await db.query('PRAGMA integrity_check');
      await db.close();
      return { before, busy: ckpt.busy, after: (await digest(again)) === want, integrity_check };
    },
    { name, idb },
  );
  assert.deepEqual(r, { before: true, busy: 0, after: true, integrity_check: 'ok' });
});

test('another tab shares an IndexedDB database through the tab that holds it', async (t) => {
  const name = dbName(t);
  const holder = await h.newPage();
  const other = await h.newPage();
  await inPage(
    holder,
    async ({ open }, { name, idb }) => {
      globalThis.held = await open(name, idb);
      await globalThis.held.execute("CREATE TABLE t(v); INSERT INTO t VALUES ('held')");
    },
    { name, idb },
  );
  const shared = await inPage(
    other,
    async ({ open, outcome }, { name, idb }) => {
      const db = await open(name, idb);
      await db.execute("INSERT INTO t VALUES ('other')");
      return outcome(db.query('SELECT v FROM t ORDER BY rowid'));
    },
    { name, idb },
  );
  assert.deepEqual(shared, { ok: true, value: [{ v: 'held' }, { v: 'other' }] });
  await Promise.all([holder.close(), other.close()]);
  assert.deepEqual(await read(h.page, name, 'SELECT count(*) AS n FROM t'), { ok: true, value: [{ n: 2 }] });
});

/** In the page: opens `name` with `options`, notes where it lives, closes it; or the error. */
const TRY_OPEN = `async (open, name, options) => {
  try {
    const db = await open(name, options);
    const storage = db.storage;
    await db.close();
    return { ok: true, storage };
  } catch (e) {
    return { ok: false, code: e.code, message: e.message };
  }
}`;

test('db.storage says where a database lives; a name in IndexedDB opens there by default, and not on OPFS', async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async ({ open }, { name, idb, TRY_OPEN }) => {
      const tryOpen = (0, eval)(TRY_OPEN);
      const memory = await tryOpen(open, ':memory:');
      let db = await open(name, idb);
      const asked = db.storage;
      await db.execute("CREATE TABLE t(v); INSERT INTO t VALUES ('in idb')");
      await db.close();
      // Without storage: where its data is, even where OPFS works.
      db = await open(name);
      const byDefault = db.storage;
      const rows = await db.query('SELECT v FROM t');
      await db.close();
      const opfs = await tryOpen(open, name, { storage: 'opfs' });
      // Another name, opened without storage: OPFS where it works.
      const fresh = await tryOpen(open, `${name}-fresh`);
      return { memory, asked, byDefault, rows, opfs, fresh };
    },
    { name, idb, TRY_OPEN },
  );
  assert.deepEqual(r.memory, { ok: true, storage: 'memory' });
  assert.equal(r.asked, 'idb');
  assert.equal(r.byDefault, 'idb');
  assert.deepEqual(r.rows, [{ v: 'in idb' }]);
  assert.equal(r.opfs.code, 'RESQ_UNSUPPORTED', JSON.stringify(r.opfs));
  assert.match(r.opfs.message, /lives in idb, not opfs/);
  // Without OPFS sync access handles (WebKitGTK), a new name goes to IndexedDB.
  assert.deepEqual(r.fresh, { ok: true, storage: NO_OPFS ? 'idb' : 'opfs' });
});

test("a database named as another's WAL file keeps its own files: 'x' and 'x-wal' both open, write and reopen", async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async ({ open }, { name, idb }) => {
      const a = await open(name, idb);
      await a.execute("CREATE TABLE t(v); INSERT INTO t VALUES ('a')");
      // a's WAL (its file `<name>-wal`) holds that commit while b opens.
      const b = await open(`${name}-wal`, idb);
      await b.execute("CREATE TABLE u(w); INSERT INTO u VALUES ('b')");
      await a.execute("INSERT INTO t VALUES ('a2')");
      await Promise.all([a.close(), b.close()]);
      const a2 = await open(name, idb);
      const b2 = await open(`${name}-wal`, idb);
      const out = { a: await a2.query('SELECT v FROM t'), b: await b2.query('SELECT w FROM u') };
      await Promise.all([a2.close(), b2.close()]);
      return out;
    },
    { name, idb },
  );
  assert.deepEqual(r, { a: [{ v: 'a' }, { v: 'a2' }], b: [{ w: 'b' }] });
});

test('a name with data in OPFS is not opened as a new IndexedDB database; once its files are gone, it can be', {
  skip: NO_OPFS,
}, async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async ({ open }, { name, idb, TRY_OPEN }) => {
      const tryOpen = (0, eval)(TRY_OPEN);
      const db = await open(name);
      const where = db.storage;
      await db.execute("CREATE TABLE t(v); INSERT INTO t VALUES ('in opfs')");
      await db.close();
      const asIdb = await tryOpen(open, name, idb);
      // Its OPFS files removed (the name needs no escaping).
      const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm');
      await top.removeEntry(name, { recursive: true });
      const afterDelete = await tryOpen(open, name, idb);
      return { where, asIdb, afterDelete };
    },
    { name, idb, TRY_OPEN },
  );
  assert.equal(r.where, 'opfs');
  assert.equal(r.asIdb.code, 'RESQ_UNSUPPORTED', JSON.stringify(r.asIdb));
  assert.match(r.asIdb.message, /has data in OPFS.*importDatabase/);
  assert.deepEqual(r.afterDelete, { ok: true, storage: 'idb' });
});

test("where OPFS fails this time (Safari's UnknownError), a new name is refused, never put in IndexedDB; storage: 'idb' opens it", async (t) => {
  const hf = await start({ probe: { opfsFails: 'UnknownError' } });
  t.after(() => hf.close());
  const name = dbName(t);
  const r = await inPage(
    hf.page,
    async ({ open }, { name, idb, TRY_OPEN }) => {
      const tryOpen = (0, eval)(TRY_OPEN);
      const byDefault = await tryOpen(open, name);
      const db = await open(name, idb);
      await db.execute('CREATE TABLE t(v)');
      await db.close();
      return { byDefault, asIdb: db.storage, after: await tryOpen(open, name) };
    },
    { name, idb, TRY_OPEN },
  );
  assert.equal(r.byDefault.code, 'RESQ_UNSUPPORTED', JSON.stringify(r.byDefault));
  assert.match(r.byDefault.message, /OPFS failed here .*UnknownError.*try again/);
  assert.equal(r.asIdb, 'idb');
  // Its data is in IndexedDB now: the default finds it there.
  assert.deepEqual(r.after, { ok: true, storage: 'idb' });
});

test('a tab that asks for another storage than the database has in the leading tab is refused', async (t) => {
  const name = dbName(t);
  const holder = await h.newPage();
  const other = await h.newPage();
  await inPage(
    holder,
    async ({ open }, { name, idb }) => {
      globalThis.held = await open(name, idb);
      await globalThis.held.execute('CREATE TABLE t(v)');
    },
    { name, idb },
  );
  const r = await inPage(
    other,
    async ({ open }, { name, TRY_OPEN }) => {
      const tryOpen = (0, eval)(TRY_OPEN);
      return { asked: await tryOpen(open, name, { storage: 'opfs' }), plain: await tryOpen(open, name) };
    },
    { name, TRY_OPEN },
  );
  await Promise.all([holder.close(), other.close()]);
  assert.equal(r.asked.code, 'RESQ_UNSUPPORTED', JSON.stringify(r.asked));
  assert.deepEqual(r.plain, { ok: true, storage: 'idb' }, 'without storage, it follows the leading tab');
});

engineTest(
  'a database moves from OPFS to IndexedDB and back: export() from one, importDatabase() into the other, every row and byte the same',
  {
    opfs: true,
  },
  async (t) => {
    const r = await inPage(
      h.page,
      async ({ open, importDatabase, sha }, { names: [a, b, c] }) => {
        const rows = async (db) => {
          const list = await db.query('SELECT id, name, length(data) AS n FROM m ORDER BY id');
          for (const row of list) row.sha = await sha(await db.blobFile('m', 'data', row.id));
          const [{ integrity_check: ok }] = await db.query('PRAGMA integrity_check');
          return { list, ok, storage: db.storage };
        };
        const src = await open(a, { storage: 'opfs' });
        await src.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
        const clip = new Uint8Array(6 << 20).map((_, i) => (i * 7 + (i >> 12)) & 255);
        await src.execute('INSERT INTO m(name, data) VALUES (?, ?), (?, ?)', ['clip', clip, 'note', new Uint8Array([1, 2, 3])]);
        const before = await rows(src);
        await importDatabase(b, src.export(), { storage: 'idb' });
        await src.close();
        // Opened by name alone: each name is found where it was put.
        const mid = await open(b);
        const inIdb = await rows(mid);
        await importDatabase(c, mid.export(), { storage: 'opfs' });
        await mid.close();
        const back = await open(c);
        const inOpfs = await rows(back);
        await back.close();
        return { before, inIdb, inOpfs };
      },
      { names: [dbName(t, 'a.db'), dbName(t, 'b.db'), dbName(t, 'c.db')] },
    );
    assert.equal(r.before.storage, 'opfs');
    assert.equal(r.before.list.length, 2);
    assert.deepEqual({ ...r.inIdb, storage: 'opfs' }, r.before, 'in IndexedDB: the same rows and bytes');
    assert.equal(r.inIdb.storage, 'idb');
    assert.deepEqual(r.inOpfs, r.before, 'back in OPFS: the same rows and bytes');
  },
);

test("once a value is stored, the browser reads its segments from IndexedDB's files: none of the Blobs the worker made stays in memory", {
  skip: ENGINE !== 'chromium' && "chrome://blob-internals, which lists the Blobs a browser holds, is Chromium's",
}, async (t) => {
  const hb = await start();
  t.after(() => hb.close());
  const name = dbName(t);
  await inPage(
    hb.page,
    async ({ open }, { name }) => {
      globalThis.kept = await open(name, { storage: 'idb' });
      await kept.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
      await kept.execute('INSERT INTO m(data) VALUES (?)', [new File([new Uint8Array(48 << 20).fill(5)], 'v.bin')]);
      // Written twice under WAL (the -wal file, then the database file at
      // the checkpoint), and each segment read back once stored: a moment.
      await new Promise((r) => setTimeout(r, 1000));
    },
    { name },
  );
  // Two more calls: until then the page's File itself is still held (by
  // the last request of the page or of the worker: not yet found), and it
  // is a Blob made from bytes too.
  await inPage(hb.page, async () => {
    await kept.execute('INSERT INTO m(data) VALUES (1)');
    await kept.execute('INSERT INTO m(data) VALUES (2)');
  });
  await hb.collectGarbage(hb.page);
  const blobs = await hb.blobs();
  const made = Object.entries(blobs)
    .filter(([type]) => type !== 'readable data handle')
    .reduce((n, [, b]) => n + b.bytes, 0);
  t.diagnostic(`the browser's Blobs after the value was stored: ${JSON.stringify(blobs)}`);
  assert.ok((blobs['readable data handle']?.bytes ?? 0) >= 48 << 20, "the value's segments are IndexedDB's");
  assert.ok(made < 4 << 20, `${made} bytes of Blobs made in the page or the worker are still held`);
  const [{ n }] = await inPage(hb.page, async () => kept.query('SELECT length(data) AS n FROM m'));
  assert.equal(n, 48 << 20);
});

test('databases stored in a newer layout (a higher IndexedDB version) are refused with RESQ_UNSUPPORTED, never read, and stay as they were', async (t) => {
  // A browser of its own: the origin's IndexedDB is raised past this package's layout.
  const fresh = await start();
  t.after(() => fresh.close());
  const newer = await fresh.page.evaluate(async () => {
    const req = indexedDB.open('resq-wasm', 2);
    req.onupgradeneeded = () => {
      for (const s of ['files', 'chunks', 'segments', 'later']) req.result.createObjectStore(s);
      req.transaction.objectStore('files').put({ seq: 7 }, ['kept.db']);
    };
    const idb = await new Promise((resolve, reject) =>
      Object.assign(req, { onsuccess: () => resolve(req.result), onerror: () => reject(req.error) }),
    );
    idb.close();
    return idb.version;
  });
  assert.equal(newer, 2);
  const r = await inPage(fresh.page, async ({ open, outcome }, { idb }) => outcome(open('kept.db', idb)), { idb });
  assert.equal(r.ok, false);
  assert.equal(r.error.code, 'RESQ_UNSUPPORTED', JSON.stringify(r.error));
  assert.match(r.error.message, /newer resq-wasm/);
  const after = await fresh.page.evaluate(async () => {
    const done = (req) =>
      new Promise((resolve, reject) => Object.assign(req, { onsuccess: () => resolve(req.result), onerror: () => reject(req.error) }));
    const idb = await done(indexedDB.open('resq-wasm'));
    const seq = await done(idb.transaction('files').objectStore('files').get(['kept.db']));
    idb.close();
    return { version: idb.version, seq, stores: [...idb.objectStoreNames] };
  });
  assert.deepEqual(after, { version: 2, seq: { seq: 7 }, stores: ['chunks', 'files', 'later', 'segments'] });
});

/** In `page`: segments of database `name` that no stored map names (numbered from their file's `next` on), counted. */
const unnamedSegments = (page, name) =>
  page.evaluate(async (name) => {
    const done = (req) =>
      new Promise((resolve, reject) => Object.assign(req, { onsuccess: () => resolve(req.result), onerror: () => reject(req.error) }));
    const idb = await done(indexedDB.open('resq-wasm'));
    let n = 0;
    for (const path of [name, `${name}-journal`, `${name}-wal`]) {
      const tx = idb.transaction(['files', 'segments']);
      const next = (await done(tx.objectStore('files').get([name, path])))?.next ?? 0;
      n += await done(tx.objectStore('segments').count(IDBKeyRange.bound([name, path, next], [name, path, Infinity])));
    }
    idb.close();
    return n;
  }, name);

test('segments stored ahead of a commit that never came are deleted when the database opens again, and every commit before it stays', async (t) => {
  const name = dbName(t);
  const page = await h.newPage();
  await inPage(
    page,
    async ({ open, mediaFile }, { name, idb }) => {
      const db = await open(name, idb);
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)');
      await db.execute('INSERT INTO t(v) VALUES (?)', [new Uint8Array(10).fill(7)]);
      // A 48 MiB value in a transaction left open: its segments are stored
      // ahead of a commit that never comes.
      db.transaction(async (tx) => {
        await tx.execute('INSERT INTO t(v) VALUES (?)', [mediaFile(48 << 20, 3)]);
        await new Promise(() => {});
      }).catch(() => {});
    },
    { name, idb },
  );
  let ahead = 0;
  for (let i = 0; i < 600 && ahead < 8; i++) {
    ahead = await unnamedSegments(page, name);
    if (ahead < 8) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(ahead >= 8, `segments stored ahead of the commit: ${ahead}`);
  await page.close(); // its worker with it: the transaction never commits
  const again = await h.newPage();
  t.after(() => again.close());
  const r = await inPage(
    again,
    async ({ open }, { name, idb }) => {
      globalThis.db = await open(name, idb);
      const rows = await db.query('SELECT id, length(v) AS n FROM t ORDER BY id');
      await db.execute('INSERT INTO t(v) VALUES (?)', [new Uint8Array(10).fill(8)]);
      const after = await db.query('SELECT id, length(v) AS n FROM t ORDER BY id');
      return { rows, after };
    },
    { name, idb },
  );
  assert.deepEqual(r.rows, [{ id: 1, n: 10 }]);
  assert.deepEqual(r.after, [
    { id: 1, n: 10 },
    { id: 2, n: 10 },
  ]);
  // Counted with the database open: a close deletes its WAL, and with it
  // any of the WAL's segments.
  assert.equal(await unnamedSegments(again, name), 0, 'segments no map names are left in IndexedDB');
  await again.evaluate(() => globalThis.db.close());
});

test("a WAL's small commits are stored as their bytes, not Blobs, and read back from them: every row after a reload, and the commits after it", async (t) => {
  const name = dbName(t);
  const page = await h.newPage();
  t.after(() => page.close());
  const rows = 40;
  await inPage(
    page,
    async ({ open }, { name, idb, rows }) => {
      const db = await open(name, idb);
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)');
      for (let i = 0; i < rows; i++) await db.execute('INSERT INTO t(v) VALUES (?)', [new Uint8Array(3000).fill(i + 1)]);
      // No close(): the rows stay in the WAL.
    },
    { name, idb, rows },
  );
  await page.reload();
  const kinds = await page.evaluate(async (name) => {
    const done = (req) =>
      new Promise((resolve, reject) => Object.assign(req, { onsuccess: () => resolve(req.result), onerror: () => reject(req.error) }));
    const idb = await done(indexedDB.open('resq-wasm'));
    const wal = `${name}-wal`;
    const values = await done(
      idb
        .transaction('segments')
        .objectStore('segments')
        .getAll(IDBKeyRange.bound([name, wal, 0], [name, wal, Infinity])),
    );
    idb.close();
    return { bytes: values.filter((v) => v instanceof ArrayBuffer).length, all: values.length };
  }, name);
  assert.ok(kinds.bytes >= rows, `the WAL's small segments as bytes: ${kinds.bytes} of ${kinds.all}`);
  const got = await inPage(
    page,
    async ({ open }, { name, idb }) => {
      const db = await open(name, idb);
      const sums = async () =>
        (await db.query('SELECT id, v FROM t ORDER BY id')).map((r) => [r.id, r.v.length, r.v.every((b) => b === r.id)]);
      const before = await sums();
      await db.execute('INSERT INTO t(v) VALUES (?)', [new Uint8Array(3000).fill(99)]);
      const [{ integrity_check: check }] = await db.query('PRAGMA integrity_check');
      const after = await db.query('SELECT count(*) AS n FROM t');
      await db.close();
      return { before, check, n: after[0].n };
    },
    { name, idb },
  );
  assert.deepEqual(
    got.before,
    Array.from({ length: rows }, (_, i) => [i + 1, 3000, true]),
  );
  assert.equal(got.check, 'ok');
  assert.equal(got.n, rows + 1);
});

test('the worker starts no IndexedDB transaction with nothing in it: small commits, a large one, a checkpoint, reads and a reopen', async (t) => {
  // In WebKitGTK, an empty transaction started just before a worker ends
  // (a leader stopped right after a commit) can stay open for good, and
  // every other tab's write then waits behind it (failover.test.mjs).
  const hp = await start({ probe: {} });
  t.after(() => hp.close());
  const name = dbName(t);
  const empty = await inPage(
    hp.page,
    async ({ open, probe }, { name, idb }) => {
      const work = async (db) => {
        await db.execute('CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB)');
        for (let i = 0; i < 20; i++) await db.execute('INSERT INTO t(v) VALUES (?)', [new Uint8Array(3000).fill(i)]);
        await db.execute('INSERT INTO t(v) VALUES (?)', [new File([new Uint8Array(20 << 20).fill(7)], 'v.bin')]);
        await db.query('SELECT id, length(v) FROM t');
        await db.execute('PRAGMA wal_checkpoint(TRUNCATE)');
        await db.execute('DELETE FROM t WHERE id % 2 = 0');
        await db.query('SELECT sum(length(v)) FROM t');
      };
      const db = await open(name, idb);
      await work(db);
      const first = await probe(name, 'emptyTransactions');
      await db.close();
      const again = await open(name, idb);
      await work(again);
      const second = await probe(name, 'emptyTransactions');
      await again.close();
      return [first, second];
    },
    { name, idb },
  );
  assert.deepEqual(empty, [0, 0], 'empty transactions, in the first worker and in the one that opened it again');
});

test('a WAL stored as it is, before frame groups, is read as it is: every row after a reopen, and the commits after it', async (t) => {
  const name = dbName(t);
  const page = await h.newPage();
  t.after(() => page.close());
  await inPage(
    page,
    async ({ open }, { name, idb }) => {
      const db = await open(name, idb);
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)');
      for (let i = 0; i < 60; i++) await db.execute('INSERT INTO t(v) VALUES (?)', [new Uint8Array(3000).fill(i)]);
      // No close(): the rows stay in the WAL.
    },
    { name, idb },
  );
  await page.reload();
  // The WAL's records rewritten as the package stored them before frame
  // groups: its own bytes in blocks, and no `frames` in its record.
  const laid = await page.evaluate(async (name) => {
    const done = (req) =>
      new Promise((resolve, reject) => Object.assign(req, { onsuccess: () => resolve(req.result), onerror: () => reject(req.error) }));
    const idb = await done(indexedDB.open('resq-wasm'));
    const wal = `${name}-wal`;
    const range = IDBKeyRange.bound([name, wal, 0], [name, wal, Infinity]);
    let tx = idb.transaction(['files', 'chunks', 'segments'], 'readonly');
    const rec = await done(tx.objectStore('files').get([name, wal]));
    const chunks = await done(tx.objectStore('chunks').getAll(range));
    const keys = await done(tx.objectStore('segments').getAllKeys(range));
    const values = await done(tx.objectStore('segments').getAll(range));
    const segs = new Map();
    for (const [i, v] of values.entries()) segs.set(keys[i][2], new Uint8Array(v instanceof Blob ? await v.arrayBuffer() : v));
    const { size, block, next, frames } = rec;
    const stored = new Uint8Array(size);
    for (let i = 0; i * block < size; i++) {
      const words = chunks[Math.floor(i / 4096)];
      const [seg, place] = [words[2 * (i % 4096)], words[2 * (i % 4096) + 1]];
      if (seg !== 0xffffffff)
        stored.set(
          segs
            .get(seg)
            .subarray(place * block, (place + 1) * block)
            .subarray(0, size - i * block),
          i * block,
        );
    }
    // Frame groups laid out again as the plain file (src/codec/frames.rs).
    const group = (block - 32) / 24;
    const plain = new Uint8Array(frames);
    plain.set(stored.subarray(0, 32));
    for (let k = 0, at = 32; at < frames; k++, at += 24 + block) {
      const base = Math.floor(k / group) * (group + 1) * block;
      plain.set(stored.subarray(base + 32 + (k % group) * 24, base + 56 + (k % group) * 24), at);
      plain.set(stored.subarray(base + block * (1 + (k % group)), base + block * (2 + (k % group))), at + 24);
    }
    const count = Math.ceil(frames / block);
    const words = new Uint32Array(2 * count);
    for (let i = 0; i < count; i++) words.set([next, i], 2 * i);
    const packed = new Uint8Array(count * block);
    packed.set(plain);
    tx = idb.transaction(['files', 'chunks', 'segments'], 'readwrite');
    tx.objectStore('chunks').delete(range);
    tx.objectStore('segments').delete(range);
    tx.objectStore('segments').put(new Blob([packed]), [name, wal, next]);
    tx.objectStore('chunks').put(words, [name, wal, 0]);
    tx.objectStore('files').put({ size: frames, block, next: next + 1 }, [name, wal]);
    await new Promise((resolve, reject) => Object.assign(tx, { oncomplete: resolve, onerror: () => reject(tx.error) }));
    idb.close();
    return { frames, size, count };
  }, name);
  t.diagnostic(`the WAL: ${JSON.stringify(laid)}`);
  assert.ok(laid.frames > 60 * 3000, 'the WAL was laid out in frame groups, with the rows in it');
  const hex = (i) => i.toString(16).toUpperCase().padStart(2, '0');
  const want = Array.from({ length: 60 }, (_, i) => ({ id: i + 1, n: 3000, ends: hex(i).repeat(2) }));
  const rows = 'SELECT id, length(v) AS n, hex(substr(v, 1, 1)) || hex(substr(v, 3000, 1)) AS ends FROM t ORDER BY id';
  assert.deepEqual(await read(page, name, rows), { ok: true, value: want });
  await write(page, name, "INSERT INTO t(v) VALUES (x'ff')");
  assert.deepEqual(await read(page, name, 'SELECT count(*) AS n FROM t'), { ok: true, value: [{ n: 61 }] });
  assert.deepEqual(await read(page, name, 'PRAGMA integrity_check'), { ok: true, value: [{ integrity_check: 'ok' }] });
});
