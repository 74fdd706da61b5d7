// Exact and honest: a Blob/File lands only where the statement stored it; a
// small one is its bytes inside SQL; a blobStream delivers one value or
// fails; transactions can read media; no name silently becomes a memory
// database; staging without OPFS is bounded.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { ENGINE, notInNode, start } from './harness.mjs';
import { inPage, withDb, dbName } from './util.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

/** Bytes from which a Blob streams (src/codec/stream.rs STREAM_LIMIT). */
const LIMIT = 4 << 20;

test('a streamed File lands only in its own cell: not in a zero-filled BLOB of the same size bound beside it, copied from elsewhere, or left by an UPDATE', async (t) => {
  const r = await withDb(
    h.page,
    dbName(t),
    async (db, _api, N) => {
      const file = new File([Uint8Array.from({ length: N }, (_, i) => (i % 251) + 1)], 'clip.bin');
      const sum = async (table, col, id) => {
        const [row] = await db.query(
          `SELECT length(${col}) AS n, hex(substr(${col}, 1, 4)) AS head, hex(substr(${col}, -4)) AS tail FROM ${table} WHERE id = ?`,
          [id],
        );
        return row;
      };
      await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, a BLOB, b BLOB); CREATE TABLE zeros(z BLOB)');
      await db.execute('INSERT INTO zeros VALUES (zeroblob(?))', [N]);
      // Two BLOBs of the same size in one row: zeros bound as bytes, and the file.
      const one = await db.execute('INSERT INTO m(a, b) VALUES (?, ?)', [new Uint8Array(N), file]);
      // A zero-filled value copied in by the statement itself.
      const two = await db.execute('INSERT INTO m(a, b) SELECT z, ? FROM zeros', [file]);
      // An UPDATE of one column leaves the other, zero-filled, alone.
      const three = await db.execute('INSERT INTO m(a, b) VALUES (zeroblob(?), NULL)', [N]);
      await db.execute('UPDATE m SET b = ? WHERE id = ?', [file, three.lastInsertRowid]);
      const out = [];
      for (const { lastInsertRowid: id } of [one, two, three]) out.push({ a: await sum('m', 'a', id), b: await sum('m', 'b', id) });
      return out;
    },
    { arg: LIMIT + 3 },
  );
  const zeros = { n: LIMIT + 3, head: '00000000', tail: '00000000' };
  const file = {
    n: LIMIT + 3,
    head: '01020304',
    tail: [LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 2].map((i) => ((i % 251) + 1).toString(16).toUpperCase().padStart(2, '0')).join(''),
  };
  assert.deepEqual(r, [
    { a: zeros, b: file },
    { a: zeros, b: file },
    { a: zeros, b: file },
  ]);
});

test('a streamed value reaches the copies its triggers made, two Blobs of equal size each land right, and where it cannot be told it is refused with nothing stored', async (t) => {
  const r = await withDb(
    h.page,
    dbName(t),
    async (db, { outcome }, N) => {
      const fill = (seed) => new Blob([Uint8Array.from({ length: N }, (_, i) => (i + seed) & 255)]);
      const head = async (sql, args = []) => (await db.query(sql, args)).map((x) => x.h);
      await db.execute(`
        CREATE TABLE m(id INTEGER PRIMARY KEY, name TEXT, data BLOB);
        CREATE TABLE backup(id INTEGER PRIMARY KEY, data BLOB);
        CREATE TRIGGER keep AFTER INSERT ON m BEGIN INSERT INTO backup(data) VALUES (new.data); END;
        CREATE TABLE pair(id INTEGER PRIMARY KEY, x BLOB, y BLOB);
        CREATE TABLE wr(k INTEGER PRIMARY KEY, data BLOB) WITHOUT ROWID;
        CREATE VIRTUAL TABLE docs USING fts5(body);
        CREATE TABLE sizes(n INTEGER);`);
      await db.execute('INSERT INTO m(name, data) VALUES (?, ?)', ['a', fill(7)]);
      await db.execute('INSERT INTO pair(x, y) VALUES (?, ?)', [fill(1), fill(2)]);
      // An UPDATE whose WHERE matches no row stores the value nowhere, rightly.
      const noRow = await outcome(db.execute('UPDATE m SET data = ? WHERE id = 999', [fill(6)]));
      const refused = {
        withoutRowid: await outcome(db.execute('INSERT INTO wr(k, data) VALUES (1, ?)', [fill(3)])),
        virtual: await outcome(db.execute('INSERT INTO docs(body) VALUES (?)', [fill(4)])),
        nowhere: await outcome(db.execute('INSERT INTO sizes(n) VALUES (length(?))', [fill(5)])),
      };
      return {
        m: await head('SELECT hex(substr(data, 1, 2)) || hex(substr(data, -1)) AS h FROM m'),
        backup: await head('SELECT hex(substr(data, 1, 2)) || hex(substr(data, -1)) AS h FROM backup'),
        pair: await head("SELECT hex(substr(x, 1, 1)) || '/' || hex(substr(y, 1, 1)) AS h FROM pair"),
        refused,
        counts: await db.query(
          'SELECT (SELECT count(*) FROM wr) AS wr, (SELECT count(*) FROM docs) AS docs, (SELECT count(*) FROM sizes) AS sizes',
        ),
        works: await outcome(db.execute('INSERT INTO sizes(n) VALUES (1)')),
        noRow,
      };
    },
    { arg: LIMIT },
  );
  const last = ((LIMIT - 1 + 7) & 255).toString(16).toUpperCase().padStart(2, '0');
  assert.deepEqual(r.m, [`0708${last}`]);
  assert.deepEqual(r.backup, [`0708${last}`], 'the trigger copy holds the file too');
  assert.deepEqual(r.pair, ['01/02']);
  for (const [what, o] of Object.entries(r.refused)) {
    assert.equal(o.ok, false, what);
    assert.equal(o.error.code, 'RESQ_BAD_PARAM', `${what}: ${o.error.message}`);
    assert.match(o.error.message, /parameter 1|wr|virtual/, what);
  }
  assert.deepEqual(r.counts, [{ wr: 0, docs: 0, sizes: 0 }]);
  assert.equal(r.works.ok, true);
  assert.deepEqual(r.noRow, { ok: true, value: { changes: 0, lastInsertRowid: 1 } });
});

test('a File below the stream limit is its bytes inside SQL: CHECK constraints, expressions and query() see the file', async (t) => {
  const r = await withDb(h.page, dbName(t), async (db, { outcome }) => {
    const png = new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3])], 'a.png', { type: 'image/png' });
    const text = new File(['not a png'], 'a.txt');
    await db.execute("CREATE TABLE photos(id INTEGER PRIMARY KEY, head TEXT, data BLOB CHECK (substr(data, 1, 8) = x'89504E470D0A1A0A'))");
    const ok = await outcome(db.execute('INSERT INTO photos(head, data) VALUES (hex(substr(?1, 1, 4)), ?1)', [png]));
    const bad = await outcome(db.execute('INSERT INTO photos(head, data) VALUES (NULL, ?)', [text]));
    const rows = await db.query('SELECT head, hex(data) AS hex, length(data) AS n FROM photos');
    const q = await db.query('SELECT hex(?) AS h, length(?2) AS n', [new Blob([new Uint8Array([1, 2])]), png]);
    return { ok, bad, rows, q };
  });
  assert.equal(r.ok.ok, true, JSON.stringify(r.ok));
  assert.equal(r.bad.ok, false);
  assert.equal(r.bad.error.code, 'SQLITE_CONSTRAINT_CHECK');
  assert.deepEqual(r.rows, [{ head: '89504E47', hex: '89504E470D0A1A0A010203', n: 11 }]);
  assert.deepEqual(r.q, [{ h: '0102', n: 11 }]);
});

test('above the stream limit, SQL sees the documented 32-byte placeholder during the statement, and the stored cell holds the file', async (t) => {
  const r = await withDb(
    h.page,
    dbName(t),
    async (db, _api, N) => {
      await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, seen INTEGER, data BLOB)');
      await db.execute('INSERT INTO m(seen, data) VALUES (length(?1), ?1)', [new Blob([new Uint8Array(N).fill(9)])]);
      return db.query('SELECT seen, length(data) AS n, hex(substr(data, -2)) AS tail FROM m');
    },
    { arg: LIMIT },
  );
  assert.deepEqual(r, [{ seen: 32, n: LIMIT, tail: '0909' }]);
});

test('a blobStream whose value is replaced or deleted between pulls delivers it whole from its snapshot (OPFS) or fails with SQLITE_ABORT (memory, or begun in a transaction that rolls back), never a mix', async (t) => {
  const r = await withDb(h.page, dbName(t), async (db) => {
    const MB = 1 << 20;
    await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
    for (const b of [1, 2, 3, 4]) await db.execute('INSERT INTO v(data) VALUES (?)', [new Uint8Array(3 * MB).fill(b)]);
    // Reads the stream chunk by chunk, running `between` after the first.
    const drain = async (id, between) => {
      const reader = db.blobStream('v', 'data', id, { chunkSize: MB }).getReader();
      const seen = [];
      try {
        for (let first = true; ; first = false) {
          const { done, value } = await reader.read();
          if (done) return { ok: true, seen };
          seen.push(...new Set(value));
          if (first) await between();
        }
      } catch (e) {
        return { ok: false, seen, code: e.code, errno: e.errno, isResqError: e instanceof Error && e.name === 'ResqError' };
      }
    };
    const drainAcross = async (begin, undo) => {
      await db.execute(begin);
      await db.execute('UPDATE v SET data = ? WHERE id = 3', [new Uint8Array(3 * MB).fill(5)]);
      return drain(3, () => db.execute(undo));
    };
    return {
      replaced: await drain(1, () => db.execute('UPDATE v SET data = ? WHERE id = 1', [new Uint8Array(3 * MB).fill(7)])),
      deleted: await drain(2, () => db.execute('DELETE FROM v WHERE id = 2')),
      other: await drain(3, () => db.execute('UPDATE v SET data = ? WHERE id = 4', [new Uint8Array(3 * MB).fill(8)])),
      // A stream begun on a value a transaction wrote; the transaction is
      // then undone, by ROLLBACK and by ROLLBACK TO a savepoint.
      rolledBack: await drainAcross('BEGIN', 'ROLLBACK'),
      rolledBackTo: await drainAcross('SAVEPOINT s', 'ROLLBACK TO s; RELEASE s'),
      after: await db.query('SELECT id, hex(substr(data, 1, 1)) AS h FROM v ORDER BY id'),
      // Stored databases are in WAL mode, and their streams read snapshots.
      snapshots: db.storage !== 'memory',
    };
  });
  if (r.snapshots) {
    assert.deepEqual(r.replaced, { ok: true, seen: [1, 1, 1] }, 'the value it began on, whole');
    assert.deepEqual(r.deleted, { ok: true, seen: [2, 2, 2] });
  } else {
    assert.deepEqual(r.replaced, { ok: false, seen: [1], code: 'SQLITE_ABORT', errno: 4, isResqError: true });
    assert.equal(r.deleted.ok, false);
    assert.equal(r.deleted.code, 'SQLITE_ABORT');
  }
  assert.deepEqual(r.other, { ok: true, seen: [3, 3, 3] });
  for (const k of ['rolledBack', 'rolledBackTo']) {
    assert.deepEqual(r[k].seen, [5], k);
    assert.equal(r[k].code, 'SQLITE_ABORT', k);
  }
  assert.deepEqual(r.after, [
    { id: 1, h: '07' },
    { id: 3, h: '03' },
    { id: 4, h: '08' },
  ]);
});

test('transaction callbacks read media through tx (readBlob, blobStream, blobFile); a db call made inside one waits for its commit', async (t) => {
  const page = await h.newPage();
  const r = await withDb(page, dbName(t), async (db) => {
    await db.execute("CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB); INSERT INTO v(data) VALUES (x'0102030405')");
    const inside = await db.transaction(async (tx) => {
      await tx.execute("UPDATE v SET data = x'0A0B0C' WHERE id = 1");
      const range = Array.from(await tx.readBlob('v', 'data', 1, { offset: 1, length: 2 }));
      const streamed = [];
      for await (const chunk of tx.blobStream('v', 'data', 1, { chunkSize: 1 })) streamed.push(...chunk);
      const file = Array.from(new Uint8Array(await (await tx.blobFile('v', 'data', 1)).arrayBuffer()));
      // A db call made inside the callback waits for the transaction (not
      // awaited here: awaited, it would wait until transactionTimeout).
      const waiting = db.query('SELECT hex(data) AS h FROM v');
      await new Promise((done) => setTimeout(done, 300));
      return { range, streamed, file, waiting };
    });
    return { ...inside, waited: await inside.waiting, waiting: undefined };
  });
  assert.deepEqual(r.range, [11, 12]);
  assert.deepEqual(r.streamed, [10, 11, 12]);
  assert.deepEqual(r.file, [10, 11, 12]);
  assert.deepEqual(r.waited, [{ h: '0A0B0C' }], 'it ran after the commit');
  await page.close();
});

test('names that would be a memory database under OPFS are refused: :memory: with storage opfs, file: URIs', {
  skip: notInNode("it refuses storage: 'opfs' (RESQ_UNSUPPORTED) before it looks at the name"),
}, async () => {
  const r = await inPage(h.page, async ({ open, outcome }) => ({
    memoryOpfs: await outcome(open(':memory:', { storage: 'opfs' })),
    uri: await outcome(open('file:x?mode=memory')),
    uriMemory: await outcome(open('file:y.db', { storage: 'memory' })),
    after: await outcome(open('plain.db').then(async (db) => (await db.query('SELECT 1 AS x'), db.close()))),
  }));
  for (const k of ['memoryOpfs', 'uri', 'uriMemory']) {
    assert.equal(r[k].ok, false, k);
    assert.equal(r[k].error.isResqError, true, k);
    assert.equal(r[k].error.code, 'RESQ_BAD_PARAM', k);
  }
  assert.match(r.memoryOpfs.error.message, /memory/);
  assert.equal(r.after.ok, true);
});

test('without OPFS, a staged value past the memory cap spills into Blobs and is stored exactly; the next one works', {
  skip: notInNode('the probe worker, a browser worker, counts the Blobs'),
}, async (t) => {
  const hn = await start({ probe: { noOpfs: true } });
  t.after(() => hn.close());
  const r = await withDb(hn.page, ':memory:', async (db) => {
    const MB = 1 << 20;
    const staged = await db.stageBlob();
    for (let i = 0; i < 80; i++) await staged.append(new Uint8Array(MB).fill(i + 1));
    await db.execute('CREATE TABLE t(data BLOB)');
    await db.execute('INSERT INTO t VALUES (?)', [staged]);
    // One byte from each MB, and the edges of the first spill.
    const marks = await db.query(
      "WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < 79) SELECT group_concat(hex(substr(data, n * 1048576 + 1, 1)) || hex(substr(data, n * 1048576 + 1048576, 1)), '') AS h FROM i, t",
    );
    const again = await db.stageBlob();
    await again.append(new Uint8Array(10));
    await db.execute('INSERT INTO t VALUES (?)', [again]);
    return { marks: marks[0].h, rows: await db.query('SELECT length(data) AS n FROM t ORDER BY rowid') };
  });
  const want = Array.from({ length: 80 }, (_, i) => (i + 1).toString(16).toUpperCase().padStart(2, '0').repeat(2)).join('');
  assert.equal(r.marks, want);
  assert.deepEqual(r.rows, [{ n: 80 << 20 }, { n: 10 }]);
});

test('in a Firefox private window, where OPFS is refused, open() of a file name opens it in IndexedDB; OPFS asked for is RESQ_UNSUPPORTED; 80 MB stage and are stored', {
  skip: ENGINE !== 'firefox' && "Firefox private windows only (Chromium's incognito keeps OPFS; WebKitGTK has none in any window)",
}, async (t) => {
  const hp = await start({ privateWindow: true });
  t.after(() => hp.close());
  const r = await inPage(hp.page, async ({ open, outcome }) => {
    const root = await outcome(navigator.storage.getDirectory());
    const named = await open('private.db');
    await named.execute("CREATE TABLE t(v); INSERT INTO t VALUES ('kept in IndexedDB')");
    const placed = { storage: named.storage, rows: await named.query('SELECT v FROM t') };
    await named.close();
    const opfs = await outcome(open('other.db', { storage: 'opfs' }));
    const db = await open(':memory:');
    const staged = await db.stageBlob();
    const MB = 1 << 20;
    for (let i = 0; i < 80; i++) await staged.append(new Uint8Array(MB).fill(i));
    await db.execute('CREATE TABLE t(data BLOB)');
    await db.execute('INSERT INTO t VALUES (?)', [staged]);
    const [stored] = await db.query('SELECT length(data) AS n, hex(substr(data, 79 * 1048576 + 1, 1)) AS last FROM t');
    await db.close();
    return { root: root.ok || root.error.name, placed, opfs, stored };
  });
  assert.equal(r.root, 'SecurityError', 'the private window refuses OPFS');
  assert.deepEqual(r.placed, { storage: 'idb', rows: [{ v: 'kept in IndexedDB' }] });
  assert.equal(r.opfs.ok, false);
  assert.equal(r.opfs.error.code, 'RESQ_UNSUPPORTED');
  assert.match(r.opfs.error.message, /OPFS.*SecurityError/);
  assert.deepEqual(r.stored, { n: 80 << 20, last: '4F' });
});

test('a staged blob belongs to the database that staged it: another database refuses it', async (t) => {
  const r = await inPage(
    h.page,
    async ({ open, outcome }, [a, b]) => {
      const one = await open(a);
      const two = await open(b);
      await two.execute('CREATE TABLE t(data BLOB)');
      const mine = await two.stageBlob();
      await mine.append(new Uint8Array([1]));
      const theirs = await one.stageBlob();
      await theirs.append(new Uint8Array([2, 2]));
      const refused = await outcome(two.execute('INSERT INTO t VALUES (?)', [theirs]));
      const stored = await outcome(two.execute('INSERT INTO t VALUES (?)', [mine]));
      const rows = await two.query('SELECT hex(data) AS h FROM t');
      await one.close();
      await two.close();
      return { refused, stored, rows };
    },
    [dbName(t, 'a.db'), dbName(t, 'b.db')],
  );
  assert.equal(r.refused.error.code, 'RESQ_BAD_PARAM');
  assert.match(r.refused.error.message, /another database/);
  assert.equal(r.stored.ok, true);
  assert.deepEqual(r.rows, [{ h: '01' }]);
});
