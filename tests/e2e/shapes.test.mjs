// Statement shapes with streamed values (a Blob or File at or above the
// 4 MB stream limit, bound as a placeholder and written afterwards through
// blob I/O): figures of multi-row writes, RETURNING through query,
// queryBytes, Kysely and Drizzle, tables with generated columns, and the
// roads by which a placeholder could reach a virtual table, an index or a
// CHECK constraint, each refused with nothing stored.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, withDb, dbName } from './util.mjs';

let h;
before(async () => {
  h = await start({ peers: ['kysely', 'drizzle-orm'] });
});
after(async () => {
  await h?.close();
});

const MB = 1 << 20;
const onDb = (t, body, arg = null) => withDb(h.page, dbName(t), body, { arg });

/** An outcome that must be a refusal: never counts as a match when it succeeded. */
function refused(o, code, pattern, what) {
  assert.equal(o.ok, false, `${what}: expected ${code}, got ${JSON.stringify(o.value)}`);
  assert.equal(o.error.code, code, `${what}: ${o.error.message}`);
  if (pattern) assert.match(o.error.message, pattern, what);
}

test("changes and lastInsertRowid of multi-row streamed INSERT … SELECT and UPDATE are the statement's, and every cell holds the file", async (t) => {
  const r = await onDb(
    t,
    async (db, { mediaFile, sha }, MB) => {
      await db.execute(
        'CREATE TABLE src(k INTEGER); INSERT INTO src VALUES (10), (20), (30); CREATE TABLE m(id INTEGER PRIMARY KEY, k INTEGER, data BLOB)',
      );
      const hashes = async () => Promise.all([1, 2, 3].map(async (id) => sha(await db.readBlob('m', 'data', id))));
      const f = mediaFile(5 * MB, 1);
      const g = mediaFile(5 * MB + 3, 2);
      const inserted = await db.execute('INSERT INTO m(k, data) SELECT k, ? FROM src', [f]);
      const afterInsert = await hashes();
      const updated = await db.execute('UPDATE m SET data = ? WHERE id <= 3', [g]);
      const afterUpdate = await hashes();
      return {
        inserted,
        updated,
        afterInsert,
        afterUpdate,
        f: await sha(f),
        g: await sha(g),
        sizes: await db.query('SELECT id, k, length(data) AS n FROM m ORDER BY id'),
      };
    },
    MB,
  );
  assert.deepEqual(r.inserted, { changes: 3, lastInsertRowid: 3 });
  assert.deepEqual(r.updated, { changes: 3, lastInsertRowid: 3 });
  assert.deepEqual(r.afterInsert, [r.f, r.f, r.f]);
  assert.deepEqual(r.afterUpdate, [r.g, r.g, r.g]);
  assert.deepEqual(
    r.sizes,
    [10, 20, 30].map((k, i) => ({ id: i + 1, k, n: 5 * MB + 3 })),
  );
});

test('a write with RETURNING takes a streamed File through query and queryBytes; RETURNING that would see the placeholder is refused, nothing stored', async (t) => {
  const r = await onDb(
    t,
    async (db, { mediaFile, sha, outcome }, MB) => {
      await db.execute('CREATE TABLE clip(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      const f = mediaFile(5 * MB, 3);
      const g = mediaFile(4 * MB, 4);
      const viaQuery = await outcome(db.query('INSERT INTO clip(name, data) VALUES (?, ?) RETURNING id, name', ['a', f]));
      const bytes = await outcome(db.queryBytes('INSERT INTO clip(name, data) VALUES (:name, :data) RETURNING id', { name: 'b', data: f }));
      const viaBytes = bytes.ok ? JSON.parse(new TextDecoder().decode(new Uint8Array(bytes.value.bytes))) : bytes;
      const update = await outcome(db.query("UPDATE clip SET data = ? WHERE name = 'a' RETURNING id, name", [g]));
      const refusals = {
        value: await outcome(db.query('INSERT INTO clip(data) VALUES (?) RETURNING id, length(data), data', [f])),
        all: await outcome(db.query('INSERT INTO clip(data) VALUES (?) RETURNING *', [f])),
        itself: await outcome(db.queryBytes('INSERT INTO clip(data) VALUES (?1) RETURNING ?1 AS p', [f])),
        select: await outcome(db.query('SELECT length(?) AS n', [f])),
      };
      const rows = await db.query('SELECT id, name, length(data) AS n FROM clip ORDER BY id');
      return {
        viaQuery,
        viaBytes,
        update,
        refusals,
        rows,
        hashes: [await sha(await db.readBlob('clip', 'data', 1)), await sha(await db.readBlob('clip', 'data', 2))],
        expected: [await sha(g), await sha(f)],
        next: await db.query('SELECT count(*) AS n FROM clip'),
      };
    },
    MB,
  );
  assert.deepEqual(r.viaQuery, { ok: true, value: [{ id: 1, name: 'a' }] });
  assert.deepEqual(r.viaBytes, [{ id: 2 }]);
  assert.deepEqual(r.update, { ok: true, value: [{ id: 1, name: 'a' }] });
  for (const what of ['value', 'all', 'itself']) refused(r.refusals[what], 'RESQ_BAD_PARAM', /readBlob/, what);
  refused(r.refusals.select, 'RESQ_BAD_PARAM', /parameter 1/, 'select');
  assert.deepEqual(r.rows, [
    { id: 1, name: 'a', n: 4 * MB },
    { id: 2, name: 'b', n: 5 * MB },
  ]);
  assert.deepEqual(r.hashes, r.expected);
  assert.deepEqual(r.next, [{ n: 2 }]);
});

test('Kysely and Drizzle insert a streamed File with returning(id); returning the value itself is refused with nothing stored', async (t) => {
  const r = await inPage(
    h.page,
    async (api, { name, MB }) => {
      const { mediaFile, sha, outcome } = api;
      const { Kysely } = await import('kysely');
      const { ResqDialect } = await import('resq-wasm/kysely');
      const { drizzle } = await import('resq-wasm/drizzle');
      const { sqliteTable, integer, text, customType } = await import('drizzle-orm/sqlite-core');
      const database = await api.open(name);
      const k = new Kysely({ dialect: new ResqDialect({ database }) });
      try {
        await k.schema
          .createTable('clip')
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('name', 'text')
          .addColumn('data', 'blob')
          .execute();
        const f = mediaFile(5 * MB, 5);
        const kysely = await outcome(k.insertInto('clip').values({ name: 'k', data: f }).returning('id').execute());
        const kyselyAll = await outcome(k.insertInto('clip').values({ name: 'k2', data: f }).returningAll().execute());
        // Drizzle's blob() converts with Node's Buffer; a browser app stores Uint8Array (or a File).
        const bytes = customType({ dataType: () => 'blob' });
        const clip = sqliteTable('clip', { id: integer('id').primaryKey(), name: text('name'), data: bytes('data') });
        const d = drizzle(database);
        const drizzled = await outcome(d.insert(clip).values({ name: 'd', data: f }).returning({ id: clip.id }));
        const drizzleAll = await outcome(d.insert(clip).values({ name: 'd2', data: f }).returning());
        const rows = await database.query('SELECT id, name, length(data) AS n FROM clip ORDER BY id');
        const hashes = await Promise.all(rows.map(async (x) => sha(await database.readBlob('clip', 'data', x.id))));
        return { kysely, kyselyAll, drizzled, drizzleAll, rows, hashes, f: await sha(f) };
      } finally {
        await k.destroy();
      }
    },
    { name: dbName(t), MB },
  );
  assert.deepEqual(r.kysely, { ok: true, value: [{ id: 1 }] });
  assert.deepEqual(r.drizzled, { ok: true, value: [{ id: 2 }] });
  refused(r.kyselyAll, 'RESQ_BAD_PARAM', /readBlob/, 'kysely returningAll');
  // Drizzle wraps a driver's error in its DrizzleQueryError, with the cause's message.
  assert.equal(r.drizzleAll.ok, false, JSON.stringify(r.drizzleAll.value));
  assert.match(r.drizzleAll.error.message, /RETURNING id|readBlob|Failed query/, r.drizzleAll.error.message);
  assert.deepEqual(r.rows, [
    { id: 1, name: 'k', n: 5 * MB },
    { id: 2, name: 'd', n: 5 * MB },
  ]);
  assert.deepEqual(r.hashes, [r.f, r.f]);
});

test('generated columns: a streamed File is refused with RESQ_UNSUPPORTED and nothing stored; bytes and small Files go in; readBlob, blobStream and blobFile read them, and refuse past the limit', async (t) => {
  const r = await onDb(
    t,
    async (db, { mediaFile, sha, outcome }, MB) => {
      await db.execute(`
        CREATE TABLE gv(id INTEGER PRIMARY KEY, data BLOB, size INTEGER GENERATED ALWAYS AS (length(data)) VIRTUAL);
        CREATE TABLE gs(id INTEGER PRIMARY KEY, data BLOB, size INTEGER GENERATED ALWAYS AS (length(data)) STORED);`);
      const big = mediaFile(5 * MB, 6);
      const small = mediaFile(MB + 5, 7);
      const writes = {
        virtual: await outcome(db.execute('INSERT INTO gv(data) VALUES (?)', [big])),
        stored: await outcome(db.execute('INSERT INTO gs(data) VALUES (?)', [big])),
      };
      const counts = await db.query('SELECT (SELECT count(*) FROM gv) AS gv, (SELECT count(*) FROM gs) AS gs');
      // Small Files are bytes inside SQL; a big value passed as bytes too.
      await db.execute('INSERT INTO gv(id, data) VALUES (1, ?)', [small]);
      await db.execute('INSERT INTO gs(id, data) VALUES (1, ?)', [small]);
      await db.execute('INSERT INTO gv(id, data) VALUES (2, ?)', [new Uint8Array(await big.arrayBuffer())]);
      const sizes = await db.query('SELECT (SELECT group_concat(size) FROM gv) AS gv, (SELECT group_concat(size) FROM gs) AS gs');
      const streamed = async (...a) => {
        const parts = [];
        for await (const c of db.blobStream(...a)) parts.push(c);
        return new Blob(parts);
      };
      const reads = {};
      for (const table of ['gv', 'gs']) {
        reads[table] = {
          whole: await sha(await db.readBlob(table, 'data', 1)),
          range: await sha(await db.readBlob(table, 'data', 1, { offset: 1000, length: 70000 })),
          stream: await sha(await streamed(table, 'data', 1, { chunkSize: 300000 })),
          file: await sha(await db.blobFile(table, 'data', 1)),
        };
      }
      const bytes = new Uint8Array(await small.arrayBuffer());
      const streamError = async (...a) => outcome(streamed(...a));
      const past = {
        read: await outcome(db.readBlob('gv', 'data', 2)),
        stream: await streamError('gv', 'data', 2),
        file: await outcome(db.blobFile('gv', 'data', 2)),
      };
      return {
        writes,
        counts,
        sizes,
        reads,
        expected: { whole: await sha(small), range: await sha(bytes.subarray(1000, 71000)) },
        past,
        missing: [await outcome(db.readBlob('gv', 'data', 9)), await outcome(db.readBlob('gv', 'nope', 1))],
        integrity: await db.query('PRAGMA integrity_check'),
      };
    },
    MB,
  );
  for (const [what, o] of Object.entries(r.writes)) refused(o, 'RESQ_UNSUPPORTED', /generated columns.*(Uint8Array)/, what);
  assert.deepEqual(r.counts, [{ gv: 0, gs: 0 }]);
  assert.deepEqual(r.sizes, [{ gv: `${MB + 5},${5 * MB}`, gs: `${MB + 5}` }]);
  for (const table of ['gv', 'gs']) {
    assert.deepEqual(
      r.reads[table],
      { whole: r.expected.whole, range: r.expected.range, stream: r.expected.whole, file: r.expected.whole },
      table,
    );
  }
  for (const [what, o] of Object.entries(r.past)) refused(o, 'RESQ_UNSUPPORTED', /generated columns.*query\(\)/, what);
  refused(r.missing[0], 'RESQ_NOT_FOUND', null, 'missing row');
  refused(r.missing[1], 'RESQ_NOT_FOUND', null, 'missing column');
  assert.deepEqual(r.integrity, [{ integrity_check: 'ok' }]);
});

test('a view whose INSTEAD OF trigger feeds a contentless FTS5 table refuses a streamed File with nothing stored; a small File goes through', async (t) => {
  const r = await onDb(
    t,
    async (db, { mediaFile, outcome }, MB) => {
      await db.execute(`
        CREATE TABLE base(id INTEGER PRIMARY KEY, title TEXT, data BLOB);
        CREATE VIRTUAL TABLE idx USING fts5(title, body, content='');
        CREATE VIEW v AS SELECT id, title, data FROM base;
        CREATE TRIGGER v_ins INSTEAD OF INSERT ON v BEGIN
          INSERT INTO base(title, data) VALUES (NEW.title, NEW.data);
          INSERT INTO idx(rowid, title, body) VALUES (last_insert_rowid(), NEW.title, NEW.data);
        END;`);
      const big = await outcome(db.execute('INSERT INTO v(title, data) VALUES (?, ?)', ['big', mediaFile(5 * MB, 8)]));
      const counts = await db.query('SELECT (SELECT count(*) FROM base) AS base, (SELECT count(*) FROM idx_docsize) AS idx');
      const small = await outcome(db.execute('INSERT INTO v(title, data) VALUES (?, ?)', ['small', mediaFile(1000, 9)]));
      return {
        big,
        counts,
        small,
        after: await db.query('SELECT (SELECT count(*) FROM base) AS base, (SELECT count(*) FROM idx_docsize) AS idx'),
      };
    },
    MB,
  );
  refused(r.big, 'RESQ_BAD_PARAM', /virtual table idx.*view v/, 'view + fts5');
  assert.deepEqual(r.counts, [{ base: 0, idx: 0 }]);
  assert.equal(r.small.ok, true, JSON.stringify(r.small.error));
  assert.deepEqual(r.after, [{ base: 1, idx: 1 }]);
});

test('CHECK constraints, partial and expression indexes that read the streamed column refuse it with RESQ_UNSUPPORTED, nothing stored; those on other columns do not', async (t) => {
  const r = await onDb(
    t,
    async (db, { mediaFile, sha, outcome }, MB) => {
      const png = [0x89, 0x50, 0x4e, 0x47];
      await db.execute(`
        CREATE TABLE sized(id INTEGER PRIMARY KEY, data BLOB CHECK (length(data) > 100));
        CREATE TABLE magic(id INTEGER PRIMARY KEY, data BLOB, CHECK (substr(data, 1, 4) <> x'DEADBEEF'));
        CREATE TABLE photos(id INTEGER PRIMARY KEY, data BLOB);
        CREATE INDEX photos_png ON photos(id) WHERE substr(data, 1, 4) = x'89504E47';
        CREATE TABLE lens(id INTEGER PRIMARY KEY, data BLOB);
        CREATE INDEX lens_len ON lens(length(data));
        CREATE TABLE fine(id INTEGER PRIMARY KEY, name TEXT CHECK (length(name) < 10), data BLOB);
        CREATE INDEX fine_name ON fine(id) WHERE name IS NOT NULL;`);
      const outcomes = {
        // Fails on the placeholder (32 bytes), though the file is 5 MB.
        sized: await outcome(db.execute('INSERT INTO sized(data) VALUES (?)', [mediaFile(5 * MB, 1)])),
        // Passes on the placeholder and on zeros, though the file breaks it.
        magic: await outcome(db.execute('INSERT INTO magic(data) VALUES (?)', [mediaFile(5 * MB, 2, [0xde, 0xad, 0xbe, 0xef])])),
        // The index would be told the row is no PNG.
        partial: await outcome(db.execute('INSERT INTO photos(data) VALUES (?)', [mediaFile(5 * MB, 3, png)])),
        expression: await outcome(db.execute('INSERT INTO lens(data) VALUES (?)', [mediaFile(5 * MB, 4)])),
      };
      const counts = await db.query(
        'SELECT (SELECT count(*) FROM sized) AS sized, (SELECT count(*) FROM magic) AS magic, (SELECT count(*) FROM photos) AS photos, (SELECT count(*) FROM lens) AS lens',
      );
      const f = mediaFile(5 * MB, 5);
      const fine = await outcome(db.execute("INSERT INTO fine(name, data) VALUES ('ok', ?)", [f]));
      const tooLong = await outcome(db.execute("INSERT INTO fine(name, data) VALUES ('much too long', ?)", [f]));
      return {
        outcomes,
        counts,
        fine,
        tooLong,
        stored: fine.ok ? (await sha(await db.readBlob('fine', 'data', fine.value.lastInsertRowid))) === (await sha(f)) : null,
        integrity: await db.query('PRAGMA integrity_check'),
      };
    },
    MB,
  );
  refused(r.outcomes.sized, 'RESQ_UNSUPPORTED', /CHECK constraint failed.*placeholder.*Uint8Array/, 'sized');
  refused(r.outcomes.magic, 'RESQ_UNSUPPORTED', /CHECK constraint of magic reads data.*Uint8Array/, 'magic');
  refused(r.outcomes.partial, 'RESQ_UNSUPPORTED', /partial index photos_png.*Uint8Array/, 'partial');
  refused(r.outcomes.expression, 'RESQ_UNSUPPORTED', /index on an expression.*Uint8Array/, 'expression');
  assert.deepEqual(r.counts, [{ sized: 0, magic: 0, photos: 0, lens: 0 }]);
  assert.equal(r.fine.ok, true, JSON.stringify(r.fine.error));
  refused(r.tooLong, 'SQLITE_CONSTRAINT_CHECK', /length\(name\)/, 'a CHECK on another column');
  assert.equal(r.stored, true);
  assert.deepEqual(r.integrity, [{ integrity_check: 'ok' }]);
});
