// Backup and restore: `db.export()` and `importDatabase(target, source)`.
// Round trips compare every row and every BLOB's SHA-256; bad files are
// refused with their codes and change nothing; an export holds the
// database still while another tab writes; both work from a following
// tab, on memory databases, and with the database open elsewhere; an
// export nobody reads gives way; and a large database goes out and back
// in with the worker's wasm memory bounded (RESQ_BACKUP_MB, default 256;
// `npm run stress` runs 1024).

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { KIT } from './backup-kit.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests();

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
        // A WAL-mode file is taken as it stands: the copy keeps this package's journal mode.
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
        check: JSON.parse(want).check,
        temp: await staged(),
      };
    },
    { KIT, name },
  );
  assert.equal(r.head, 'SQLite format 3');
  assert.deepEqual(r.check, [{ integrity_check: 'ok' }]);
  assert.ok(r.size > 5 * 1024 * 1024, `${r.size} bytes`);
  for (const way of ['blob', 'file', 'stream', 'wal'])
    assert.deepEqual(r.out[way], { same: true, pages: 'same', journal: 'truncate' }, way);
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

/** Opens `name` in a new page as `globalThis.db`. */
async function tab(name) {
  const page = await h.newPage();
  await inPage(page, async ({ open }, name) => void (globalThis.db = await open(name)), name);
  return page;
}

test("an export is one state of the database while another tab keeps writing; that tab's writes wait and all land", {
  timeout: 180_000,
}, async (t) => {
  const name = dbName(t);
  const [a, b] = [await tab(name), await tab(name)];
  t.after(() => Promise.all([a.close(), b.close()]));
  // 300 accounts of 1000, each row with a 64 KB pad, so the rows' pages
  // are spread over about 20 MB: five export reads, or more.
  const TOTAL = 300 * 1000;
  await inPage(a, async ({ transfer }) => {
    await db.execute('CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, pad BLOB)');
    await db.transaction(async (tx) => {
      for (let i = 1; i <= 300; i++)
        await tx.execute('INSERT INTO acct VALUES (?, 1000, ?)', [i, transfer(new Uint8Array(64 * 1024).fill(i))]);
    });
  });
  // Tab b moves money between random accounts, one transaction each, until told to stop.
  await inPage(b, async () => {
    globalThis.stop = false;
    globalThis.moves = (async () => {
      let n = 0;
      while (!globalThis.stop) {
        const [from, to, x] = [
          1 + Math.floor(Math.random() * 300),
          1 + Math.floor(Math.random() * 300),
          1 + Math.floor(Math.random() * 50),
        ];
        await db.transaction(async (tx) => {
          await tx.execute('UPDATE acct SET balance = balance - ? WHERE id = ?', [x, from]);
          await tx.execute('UPDATE acct SET balance = balance + ? WHERE id = ?', [x, to]);
        });
        n += 1;
      }
      return n;
    })();
  });
  const r = await inPage(
    a,
    async ({ open, importDatabase }, name) => {
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      await sleep(200); // tab b is writing
      const chunks = [];
      const reader = db.export().getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        await sleep(50); // a slow reader: tab b's writes queue up meanwhile
      }
      await importDatabase(`${name}-snapshot`, new Blob(chunks));
      const snap = await open(`${name}-snapshot`);
      const [row] = await snap.query('SELECT sum(balance) AS total, count(*) AS n FROM acct');
      await snap.close();
      return { reads: chunks.length, ...row };
    },
    name,
  );
  const moves = await inPage(b, async () => {
    await new Promise((r) => setTimeout(r, 200)); // writing again
    globalThis.stop = true;
    return globalThis.moves;
  });
  const [live] = await inPage(a, async () => db.query('SELECT sum(balance) AS total, count(*) AS n FROM acct'));
  assert.ok(r.reads >= 5, `${r.reads} export reads`);
  assert.deepEqual({ total: r.total, n: r.n }, { total: TOTAL, n: 300 }, 'the export holds whole transactions only');
  assert.ok(moves > 0, 'tab b wrote');
  assert.deepEqual(live, { total: TOTAL, n: 300 });
  t.diagnostic(`${r.reads} export reads; tab b made ${moves} transfers`);
});

test('from a following tab: export, import into the shared database, and import by name from a tab that never opened it; watches everywhere see it', {
  timeout: 180_000,
}, async (t) => {
  const name = dbName(t);
  const [a, b] = [await tab(name), await tab(name)];
  const c = await h.newPage();
  t.after(() => Promise.all([a.close(), b.close(), c.close()]));
  const kit = { KIT, name };
  // Tab a leads: it builds the database and watches it.
  await inPage(
    a,
    async (api, { KIT }) => {
      const { build } = (0, eval)(KIT)(api);
      await build(db, 0);
      globalThis.seen = [];
      globalThis.sub = db.watch('SELECT group_concat(tag) AS tags FROM (SELECT tag FROM tags ORDER BY tag)', [], (rows) =>
        seen.push(rows[0].tags),
      );
      await sub.ready;
    },
    kit,
  );
  // Tab b follows: its export is the leader's file, byte for byte.
  const exported = await inPage(
    b,
    async (api, { KIT, name }) => {
      const { bytesOf, sha, build, open } = (0, eval)(KIT)(api);
      const mine = await bytesOf(db.export());
      // Another database, to import into the shared one from here.
      const other = await open(`${name}-from-b`);
      await build(other, 8);
      globalThis.fromB = new Blob([await bytesOf(other.export())]);
      await other.close();
      return { sha: await sha(mine), length: mine.length };
    },
    kit,
  );
  const leaders = await inPage(
    a,
    async (api, { KIT }) => {
      const { bytesOf, sha } = (0, eval)(KIT)(api);
      const mine = await bytesOf(db.export());
      return { sha: await sha(mine), length: mine.length };
    },
    kit,
  );
  assert.deepEqual(exported, leaders);

  const until = `async (cond) => { const t0 = performance.now(); while (!(await cond())) { if (performance.now() - t0 > 10000) throw new Error('gave up waiting'); await new Promise((r) => setTimeout(r, 10)); } }`;
  // Tab b imports into the database it follows.
  await inPage(b, async ({ importDatabase }) => importDatabase(db, fromB));
  const afterB = await inPage(
    a,
    async (api, { until }) => {
      await (0, eval)(until)(() => seen.at(-1) === 'a,b,c,z8');
      return (await db.query('SELECT user_version FROM pragma_user_version'))[0].user_version;
    },
    { until },
  );
  assert.equal(afterB, 15);

  // Tab c never opened it: importDatabase by name goes through the leader, streaming from a database of its own.
  const fromC = await inPage(
    c,
    async (api, { KIT, name }) => {
      const { build, open, importDatabase, snapshot } = (0, eval)(KIT)(api);
      const src = await open(`${name}-from-c`);
      await build(src, 4);
      await importDatabase(name, src.export());
      const want = await snapshot(src);
      await src.close();
      return want;
    },
    kit,
  );
  const seenInA = await inPage(
    a,
    async (api, { KIT, until }) => {
      const { snapshot } = (0, eval)(KIT)(api);
      await (0, eval)(until)(() => seen.at(-1) === 'a,b,c,z4');
      return snapshot(db);
    },
    { KIT, until },
  );
  assert.equal(seenInA, fromC);
  const seenInB = await inPage(b, async (api, { KIT }) => (0, eval)(KIT)(api).snapshot(db), kit);
  assert.equal(seenInB, fromC);

  // Tab a imports by name while its own Database has the name open: a second share in one page.
  const again = await inPage(
    a,
    async ({ importDatabase }, name) => {
      const refused = await importDatabase(name, new Blob([])).then(
        () => 'imported',
        (e) => e.code,
      );
      const copy = await new Response(db.export()).blob(); // the z4 database
      await db.execute('DELETE FROM tags');
      await importDatabase(name, copy);
      return { refused, tags: (await db.query('SELECT group_concat(tag) AS t FROM (SELECT tag FROM tags ORDER BY tag)'))[0].t };
    },
    name,
  );
  assert.deepEqual(again, { refused: 'SQLITE_NOTADB', tags: 'a,b,c,z4' });
});

test('an export nobody reads gives way to waiting calls (its next read fails with SQLITE_ABORT); cancel and close() end one at once', {
  timeout: 180_000,
}, async (t) => {
  const name = dbName(t);
  const [a, b] = [await tab(name), await tab(name)];
  t.after(() => Promise.all([a.close(), b.close()]));
  // Three export reads' worth, so an export is still running after its first.
  await inPage(a, async ({ transfer }) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('INSERT INTO t(data) VALUES (?)', [transfer(new Uint8Array(10 << 20).fill(1))]);
    globalThis.reader = db.export().getReader();
    globalThis.first = (await reader.read()).value.length;
    // A call of this tab's own, made while its export runs, waits for it too.
    globalThis.own = db.query('SELECT count(*) AS n FROM t').then(
      (r) => r[0].n,
      (e) => e.code,
    );
  });
  // Tab b's call waits, and is answered once the unread export has given way.
  const waited = await inPage(b, async () => (await db.query('SELECT count(*) AS n FROM t'))[0].n);
  const stalled = await inPage(a, async () => ({
    first: globalThis.first,
    own: await globalThis.own,
    // The chunk the stream had pulled ahead is still there; then it fails, short of its end.
    next: await (async () => {
      try {
        while (!(await reader.read()).done);
        return 'read to the end';
      } catch (e) {
        return { code: e.code, errno: e.errno, message: e.message };
      }
    })(),
  }));
  assert.equal(waited, 1);
  assert.equal(stalled.own, 1);
  assert.ok(stalled.first > 0);
  assert.deepEqual({ code: stalled.next.code, errno: stalled.next.errno }, { code: 'SQLITE_ABORT', errno: 4 });
  assert.match(stalled.next.message, /not read for 10 s/);

  // Cancelled after one read: the next call does not wait for the stall
  // rule (it would give way only after 10 s; 5 s is the bound here).
  const cancelled = await inPage(a, async () => {
    const r = db.export().getReader();
    await r.read();
    await r.cancel();
    const timeout = new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5000));
    return Promise.race([db.query('SELECT count(*) AS n FROM t').then((rows) => rows[0].n), timeout]);
  });
  assert.equal(cancelled, 1);

  // close() ends an export of its Database, and the stream errors with RESQ_CLOSED.
  const closed = await inPage(a, async () => {
    const r = db.export().getReader();
    await r.read();
    await db.close();
    return r.read().then(
      () => 'read',
      (e) => e.code,
    );
  });
  assert.equal(closed, 'RESQ_CLOSED');
  assert.equal(await inPage(b, async () => (await db.query('SELECT count(*) AS n FROM t'))[0].n), 1);

  // The same before the export has even begun: cancelled or closed in the
  // same turn as export(), it still lets go at once.
  const early = await inPage(
    a,
    async ({ open }, name) => {
      const within5s = (p) => Promise.race([p, new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5000))]);
      const d = await open(name);
      await d.export().cancel();
      const afterCancel = await within5s(d.query('SELECT count(*) AS n FROM t').then((rows) => rows[0].n));
      const s = d.export();
      const closing = await within5s(d.close().then(() => 'closed'));
      return {
        afterCancel,
        closing,
        read: await s
          .getReader()
          .read()
          .then(
            () => 'read',
            (e) => e.code,
          ),
      };
    },
    name,
  );
  assert.deepEqual(early, { afterCancel: 1, closing: 'closed', read: 'RESQ_CLOSED' });
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
