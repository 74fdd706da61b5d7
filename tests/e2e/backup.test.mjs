// Backup and restore in one tab: `db.export()` and
// `importDatabase(target, source)`. Round trips compare every row and every
// BLOB's SHA-256; bad files are refused with their codes and change
// nothing; memory databases export and import; and a large database goes
// out and back in with the worker's wasm memory bounded (RESQ_BACKUP_MB,
// default 256; `npm run stress` runs 1024). Exports and imports beside
// other tabs and calls are in backup-tabs.test.mjs.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { KIT } from './backup-kit.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

const code = (o) => (o.ok ? 'ok' : o.error.code);

test('export, then import as a Blob, a File and a ReadableStream: every row and BLOB hash the same, the pages identical', async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async (api, { KIT, name }) => {
      const { open, importDatabase, build, snapshot, bytesOf, samePages, staged } = (0, eval)(KIT)(api);
      const db = await open(name);
      await build(db, 0);
      const want = await snapshot(db);
      const file = await bytesOf(db.export());
      const ways = {
        blob: () => new Blob([file]),
        file: () => new File([file], 'backup.db', { type: 'application/vnd.sqlite3' }),
        // Small chunks of odd sizes, so gathering them into appends is tested too.
        stream: () => {
          let at = 0;
          return new ReadableStream({
            pull(c) {
              if (at >= file.length) return c.close();
              const n = 1000 + (at % 70001);
              c.enqueue(file.slice(at, at + n));
              at += n;
            },
          });
        },
        // A WAL-mode file is taken as it stands: the copy is in this package's journal mode, WAL.
        wal: () => {
          const wal = file.slice();
          wal[18] = 2;
          wal[19] = 2;
          return new Blob([wal]);
        },
      };
      const out = {};
      for (const [way, source] of Object.entries(ways)) {
        const copyName = `${name}-${way}`;
        await importDatabase(copyName, source());
        const copy = await open(copyName);
        out[way] = {
          same: (await snapshot(copy)) === want,
          pages: samePages(await bytesOf(copy.export()), file),
          journal: (await copy.query('PRAGMA journal_mode'))[0].journal_mode,
        };
        await copy.close();
      }
      // Back into the database it came from, over itself: a blobStream open
      // on it ends (its value may be another one now).
      const reader = db.blobStream('items', 'b', 5, { chunkSize: 1 << 20 }).getReader();
      await reader.read();
      await importDatabase(db, new Blob([file]));
      const stream = await (async () => {
        try {
          while (!(await reader.read()).done);
          return 'read to the end';
        } catch (e) {
          return e.code;
        }
      })();
      out.self = { same: (await snapshot(db)) === want, pages: samePages(await bytesOf(db.export()), file), stream };
      await db.close();
      return {
        out,
        size: file.length,
        head: new TextDecoder().decode(file.subarray(0, 15)),
        version: [file[18], file[19]],
        check: JSON.parse(want).check,
        temp: await staged(),
      };
    },
    { KIT, name },
  );
  assert.equal(r.head, 'SQLite format 3');
  assert.deepEqual(r.check, [{ integrity_check: 'ok' }]);
  assert.ok(r.size > 5 * 1024 * 1024, `${r.size} bytes`);
  for (const way of ['blob', 'file', 'stream', 'wal']) assert.deepEqual(r.out[way], { same: true, pages: 'same', journal: 'wal' }, way);
  // The database is in WAL mode, and its export a rollback-journal file,
  // which opens alone (sql.js and sqlite3_deserialize take no other).
  assert.deepEqual(r.version, [1, 1], "the export's format version bytes");
  assert.deepEqual(r.out.self, { same: true, pages: 'same', stream: 'SQLITE_ABORT' });
  assert.deepEqual(r.temp, []);
});

test('a memory database exports; imports go into memory databases, and across page sizes', async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async (api, { KIT, name }) => {
      const { open, importDatabase, build, snapshot, bytesOf, outcome } = (0, eval)(KIT)(api);
      const mem = await open(':memory:');
      const fresh = await bytesOf(mem.export());
      await build(mem, 1);
      const want = await snapshot(mem);
      // Straight from one database's export into another: nothing in between holds it whole.
      await importDatabase(name, mem.export());
      const opfs = await open(name);
      const intoOpfs = (await snapshot(opfs)) === want;
      const named = await open('cache.db', { storage: 'memory' });
      await importDatabase(named, opfs.export());
      const intoNamed = (await snapshot(named)) === want;
      const other = await open(':memory:');
      await importDatabase(other, new Blob([await bytesOf(named.export())]));
      const intoMemory = (await snapshot(other)) === want;
      // A file of 4096-byte pages (the package's are 8192).
      const small = await open(`${name}-4k`);
      await small.execute('PRAGMA page_size = 4096');
      await build(small, 6);
      const smallWant = await snapshot(small);
      const smallFile = new Blob([await bytesOf(small.export())]);
      const pageSize = async (d) => (await d.query('PRAGMA page_size'))[0].page_size;
      const crossing = {};
      await importDatabase(opfs, smallFile);
      crossing.opfs = { same: (await snapshot(opfs)) === smallWant, pageSize: await pageSize(opfs) };
      const blank = await open(':memory:');
      await importDatabase(blank, smallFile);
      crossing.freshMemory = { same: (await snapshot(blank)) === smallWant, pageSize: await pageSize(blank) };
      // A ':memory:' database that holds data keeps its page size: refused, unchanged.
      const refused = await outcome(importDatabase(other, smallFile));
      crossing.fullMemory = { code: refused.ok ? 'imported' : refused.error.code, unchanged: (await snapshot(other)) === want };
      // And back: an empty database's export empties it.
      const emptied = await outcome(importDatabase(other, new Blob([fresh])));
      const tables = await other.query('SELECT count(*) AS n FROM sqlite_schema');
      for (const d of [mem, opfs, named, other, small, blank]) await d.close();
      return {
        fresh: fresh.length,
        header: new TextDecoder().decode(fresh.subarray(0, 15)),
        intoOpfs,
        intoNamed,
        intoMemory,
        crossing,
        emptied: emptied.ok,
        tables: tables[0].n,
      };
    },
    { KIT, name },
  );
  // A database nothing was written to exports as a one-page database, not an empty file.
  assert.equal(r.header, 'SQLite format 3');
  assert.ok(r.fresh >= 512, `${r.fresh} bytes`);
  assert.deepEqual(
    { intoOpfs: r.intoOpfs, intoNamed: r.intoNamed, intoMemory: r.intoMemory, emptied: r.emptied, tables: r.tables },
    { intoOpfs: true, intoNamed: true, intoMemory: true, emptied: true, tables: 0 },
  );
  assert.deepEqual(r.crossing, {
    opfs: { same: true, pageSize: 4096 },
    freshMemory: { same: true, pageSize: 4096 },
    fullMemory: { code: 'SQLITE_READONLY', unchanged: true },
  });
});

test('bad files are refused with their codes: the database is unchanged, the next call works, no temp file stays', async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async (api, { KIT, name }) => {
      const { open, importDatabase, build, snapshot, bytesOf, fill, staged, outcome, MB } = (0, eval)(KIT)(api);
      // The file the bad ones are made from: another database, its big BLOB spanning most pages.
      const other = await open(`${name}-other`);
      await build(other, 5);
      const good = await bytesOf(other.export());
      await other.close();
      const pageSize = (good[16] << 8) | good[17];
      const pages = good.length / pageSize;
      const damaged = (page, byte) => {
        const b = good.slice();
        b.fill(byte, (page - 1) * pageSize + (page === 1 ? 100 : 0), page * pageSize);
        return b;
      };
      const bad = {
        empty: new Blob([]),
        text: new Blob(['this is a text file, not a database\n'.repeat(300)]),
        png: new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), fill(20000, 1)]),
        shortHeader: new Blob([good.slice(0, 60)]),
        cutMidPage: new Blob([good.slice(0, good.length - 100)]),
        cutAtPage: new Blob([good.slice(0, good.length - pageSize)]),
        // Valid header, damaged pages: a table's root page, and a page in the middle of the big value's overflow chain.
        damagedRoot: new Blob([damaged(2, 0x5a)]),
        damagedOverflow: new Blob([damaged(Math.floor(pages / 2), 0xff)]),
        damagedSchema: new Blob([damaged(1, 0x00)]),
      };
      const db = await open(name);
      await build(db, 3);
      const before = await snapshot(db);
      const out = {};
      for (const [k, source] of Object.entries(bad)) {
        const refused = await outcome(importDatabase(db, source));
        const inserted = await outcome(db.execute('INSERT INTO log(what) VALUES (?)', [k]));
        await db.execute('DELETE FROM log WHERE what = ?', [k]);
        out[k] = { refused, unchanged: (await snapshot(db)) === before, next: inserted.ok, temp: await staged() };
      }
      // By name too, with the database open here and shared.
      out.byName = { refused: await outcome(importDatabase(name, bad.damagedRoot)), unchanged: (await snapshot(db)) === before };
      await db.close();
      return { out, pages, MB };
    },
    { KIT, name },
  );
  assert.ok(r.pages > 100, `${r.pages} pages`);
  const expected = {
    empty: 'SQLITE_NOTADB',
    text: 'SQLITE_NOTADB',
    png: 'SQLITE_NOTADB',
    shortHeader: 'SQLITE_NOTADB',
    cutMidPage: 'SQLITE_CORRUPT',
    cutAtPage: 'SQLITE_CORRUPT',
    damagedRoot: 'SQLITE_CORRUPT',
    damagedOverflow: 'SQLITE_CORRUPT',
    damagedSchema: 'SQLITE_CORRUPT',
  };
  for (const [k, want] of Object.entries(expected)) {
    const o = r.out[k];
    assert.equal(code(o.refused), want, `${k}: ${o.refused.error?.message}`);
    assert.equal(o.refused.error.isResqError, true, k);
    assert.deepEqual({ unchanged: o.unchanged, next: o.next, temp: o.temp }, { unchanged: true, next: true, temp: [] }, k);
    t.diagnostic(`${k}: ${o.refused.error.code}: ${o.refused.error.message.slice(0, 160)}`);
  }
  assert.match(r.out.damagedRoot.refused.error.message, /quick_check/);
  assert.equal(code(r.out.byName.refused), 'SQLITE_CORRUPT');
  assert.equal(r.out.byName.unchanged, true);
});

test('a source that fails midway, or is not bytes, is refused with RESQ_BAD_PARAM and changes nothing', async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async (api, { KIT, name }) => {
      const { open, importDatabase, build, snapshot, bytesOf, staged, outcome, MB } = (0, eval)(KIT)(api);
      const db = await open(name);
      await build(db, 2);
      const file = await bytesOf(db.export());
      await db.execute("INSERT INTO log(what) VALUES ('after the export')");
      const before = await snapshot(db);
      // 3 MB of a good file, then the source errors (a download cut off).
      let sent = 0;
      const failing = new ReadableStream({
        pull(c) {
          if (sent >= 3 * MB) return c.error(new TypeError('network error'));
          c.enqueue(file.slice(sent, sent + 256 * 1024));
          sent += 256 * 1024;
        },
      });
      const notBytes = new ReadableStream({
        start: (c) => {
          c.enqueue(file.slice(0, 1000));
          c.enqueue('text');
          c.close();
        },
      });
      const locked = new Blob([file]).stream();
      locked.getReader();
      const out = {
        failing: await outcome(importDatabase(db, failing)),
        notBytes: await outcome(importDatabase(db, notBytes)),
        locked: await outcome(importDatabase(db, locked)),
        bytes: await outcome(importDatabase(db, file)),
        noSource: await outcome(importDatabase(name)),
        badTarget: await outcome(importDatabase(42, new Blob([file]))),
        memoryName: await outcome(importDatabase(':memory:', new Blob([file]))),
      };
      const unchanged = (await snapshot(db)) === before;
      const next = await outcome(db.query('SELECT count(*) AS n FROM log'));
      const temp = await staged();
      await db.close();
      return { out, unchanged, next, temp };
    },
    { KIT, name },
  );
  for (const [k, o] of Object.entries(r.out)) assert.equal(code(o), 'RESQ_BAD_PARAM', `${k}: ${o.error?.message}`);
  assert.match(r.out.failing.error.message, /network error/);
  assert.deepEqual({ unchanged: r.unchanged, next: r.next.ok, temp: r.temp }, { unchanged: true, next: true, temp: [] });
});

test(`${process.env.RESQ_BACKUP_MB ?? 256} MB of media: exported to a file and imported back with each worker's wasm memory bounded, the page not holding the file`, async (t) => {
  const SIZE_MB = Number(process.env.RESQ_BACKUP_MB ?? 256);
  const hp = await start({ probe: {} });
  const heap = await hp.heapMeter(hp.page);
  t.after(async () => {
    await heap.release();
    await hp.close();
  });
  const name = dbName(t);
  await inPage(
    hp.page,
    async (api, { KIT, name, SIZE_MB }) => {
      const { open, MB } = (0, eval)(KIT)(api);
      // 64 MB values, each staged from 1 MB chunks made as they are written:
      // no buffer of the page ever holds a value.
      const db = await open(name);
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      const words = new Uint32Array(MB / 4);
      for (let v = 0; v < SIZE_MB / 64; v++) {
        const staged = await db.stageBlob();
        let i = 0;
        const chunks = new ReadableStream({
          pull(c) {
            if (i === 64) return c.close();
            let x = ((v * 64 + i + 1) * 2654435761) >>> 0;
            for (let j = 0; j < words.length; j++) {
              x ^= x << 13;
              x ^= x >>> 17;
              x ^= x << 5;
              words[j] = x;
            }
            c.enqueue(new Uint8Array(words.buffer.slice(0)));
            i += 1;
          },
        });
        await chunks.pipeTo(staged.writable);
        await db.execute('INSERT INTO media(name, data) VALUES (?, ?)', [`clip-${v}`, staged]);
      }
      globalThis.db = db;
    },
    { KIT, name, SIZE_MB },
  );
  const baseline = await heap.measure();
  // Out: into a file of the origin's OPFS, as a user saves a backup.
  const out = await inPage(
    hp.page,
    async ({ probe }, name) => {
      const root = await navigator.storage.getDirectory();
      const handle = await root.getFileHandle('backup-test.db', { create: true });
      const t0 = performance.now();
      await db.export().pipeTo(await handle.createWritable());
      const ms = performance.now() - t0;
      globalThis.file = await handle.getFile();
      return { ms, size: file.size, wasm: await probe(name, 'memory') };
    },
    name,
  );
  const afterExport = await heap.measure();
  // Back in: into a database of another name, from that file.
  const copyName = `${name}-copy`;
  const back = await inPage(
    hp.page,
    async (api, { KIT, name, copyName }) => {
      const { open, importDatabase, sha, staged, probe, MB } = (0, eval)(KIT)(api);
      const copy = await open(copyName);
      const t0 = performance.now();
      await importDatabase(copy, file);
      const ms = performance.now() - t0;
      const wasm = await probe(copyName, 'memory');
      // Each value: its length, and the hashes of its first, a middle and its last MB.
      const parts = async (d) => {
        const out = [];
        for (const { id, n } of await d.query('SELECT id, length(data) AS n FROM media ORDER BY id')) {
          for (const at of [0, Math.floor(n / MB / 2) * MB, n - MB])
            out.push([id, n, at, await sha(await d.readBlob('media', 'data', id, { offset: at, length: MB }))]);
        }
        return out;
      };
      const [want, got] = [await parts(db), await parts(copy)];
      await copy.close();
      await db.close();
      await (await navigator.storage.getDirectory()).removeEntry('backup-test.db');
      globalThis.file = null;
      return { ms, wasm, same: JSON.stringify(want) === JSON.stringify(got), values: want.length / 3, temp: await staged() };
    },
    { KIT, name, copyName },
  );
  const afterImport = await heap.measure();
  const MB = 1 << 20;
  assert.ok(out.size > SIZE_MB * MB, `${out.size} bytes exported`);
  assert.equal(back.values, SIZE_MB / 64);
  assert.equal(back.same, true);
  assert.deepEqual(back.temp, []);
  assert.ok(out.wasm < 48 * MB, `the exporting worker's wasm memory: ${out.wasm} bytes`);
  assert.ok(back.wasm < 48 * MB, `the importing worker's wasm memory: ${back.wasm} bytes`);
  if (baseline !== null) {
    assert.ok(afterExport - baseline < 32 * MB, `the page heap grew by ${afterExport - baseline} bytes over the export`);
    assert.ok(afterImport - baseline < 32 * MB, `the page heap grew by ${afterImport - baseline} bytes over the import`);
  }
  const rate = (ms) => ((out.size / MB / ms) * 1000).toFixed(0);
  t.diagnostic(
    `${(out.size / MB).toFixed(1)} MB: export to an OPFS file ${out.ms.toFixed(0)} ms (${rate(out.ms)} MB/s), import from it ${back.ms.toFixed(0)} ms (${rate(back.ms)} MB/s)`,
  );
  t.diagnostic(
    `wasm memory: exporting worker ${out.wasm} bytes, importing worker ${back.wasm} bytes; page heap ${baseline ?? 'n/a'} → ${afterExport ?? 'n/a'} → ${afterImport ?? 'n/a'} bytes`,
  );
});
