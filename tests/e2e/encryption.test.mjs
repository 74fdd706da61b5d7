// Encryption at rest through the packed package: `open(name, { key })`
// stores nothing readable in OPFS (the database, its WAL mid-transaction,
// an export), a wrong, missing or misplaced key is RESQ_BAD_KEY and
// changes nothing, and a following tab must prove the key before any of
// its calls runs. The raw files are read from the page: after close(), and
// in the middle of a transaction (pages spilled into the WAL).

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { MARKER, rawScan, workerScan } from './plaintext.mjs';

// OPFS for every test here unless it says `opfs: false` (see engines.mjs).
const test = opfsTests({ key: 'a passphrase' });

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

test('an encrypted database round-trips every value and blob path, and its files and its export hold none of the plaintext', async (t) => {
  const name = dbName(t);
  const got = await inPage(
    h.page,
    async ({ open, plain }, { name, marker, scan, inWorker }) => {
      const rawScan = (0, eval)(`(${scan})`);
      const workerScan = (0, eval)(`(${inWorker})`);
      const key = 'correct horse battery staple';
      const big = new Uint8Array(5 << 20).fill(0x5a);
      big.set(new TextEncoder().encode(marker), 1234567);
      let db = await open(name, { key });
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, i, f, s, b, n, big BLOB)');
      const small = new TextEncoder().encode(`${marker} in bytes`);
      await db.execute('INSERT INTO t(id, i, f, s, b, n) VALUES (1, ?, ?, ?, ?, NULL)', [2n ** 60n, 1.5, `${marker} as text`, small]);
      await db.executeBatch('INSERT INTO t(id, s) VALUES (?, ?)', [
        [2, marker],
        [3, marker],
      ]);
      // A File over the stream limit: streamed into its cell.
      await db.execute('INSERT INTO t(id, big) VALUES (4, ?)', [new File([big], 'clip.bin')]);
      await db.close();
      const closed = await rawScan(name, marker);
      const closedInWorker = await workerScan(name, marker);
      db = await open(name, { key });
      const [row] = await db.query('SELECT i, f, s, b, n FROM t WHERE id = 1');
      const ranged = await db.readBlob('t', 'big', 4, { offset: 1234567, length: marker.length });
      let streamed = 0;
      let same = true;
      for await (const chunk of db.blobStream('t', 'big', 4)) {
        for (let k = 0; k < chunk.length; k++) if (chunk[k] !== big[streamed + k]) same = false;
        streamed += chunk.length;
      }
      const file = await db.blobFile('t', 'big', 4);
      const fileSame = (await file.arrayBuffer()).byteLength === big.length;
      const exported = new Uint8Array(await new Response(db.export()).arrayBuffer());
      const count = (await db.query('SELECT count(*) AS n FROM t'))[0].n;
      await db.close();
      const needle = new TextEncoder().encode(marker);
      const inExport = (() => {
        outer: for (let i = 0; i <= exported.length - needle.length; i++) {
          for (let j = 0; j < needle.length; j++) if (exported[i + j] !== needle[j]) continue outer;
          return true;
        }
        return false;
      })();
      const header = new TextDecoder().decode(exported.subarray(0, 15));
      return {
        closed,
        closedInWorker,
        row: plain(row),
        ranged: new TextDecoder().decode(ranged),
        streamed,
        same,
        fileSame,
        count,
        exportBytes: exported.length,
        inExport,
        header,
      };
    },
    { name, marker: MARKER, scan: rawScan.toString(), inWorker: workerScan.toString() },
  );
  assert.ok(got.closed.bytes > 5 << 20, `the pool holds the data (${got.closed.bytes} bytes)`);
  assert.equal(got.closed.hits, 0, 'no plaintext marker in the OPFS files after close()');
  assert.equal(got.closedInWorker.bytes, got.closed.bytes, 'a worker of the test read the same files with sync access handles');
  assert.equal(got.closedInWorker.hits, 0, 'no plaintext marker there either');
  assert.deepEqual(got.row, {
    i: { bigint: String(2n ** 60n) },
    f: 1.5,
    s: `${MARKER} as text`,
    b: { bytes: Array.from(new TextEncoder().encode(`${MARKER} in bytes`)) },
    n: null,
  });
  assert.equal(got.ranged, MARKER, 'a ranged read of the streamed value');
  assert.equal(got.streamed, 5 << 20);
  assert.ok(got.same, 'blobStream gives the bytes stored');
  assert.ok(got.fileSame, 'blobFile gives the whole value');
  assert.equal(got.count, 4);
  assert.ok(got.exportBytes > 5 << 20, 'the export is the whole file');
  assert.equal(got.inExport, false, 'the export holds no plaintext marker');
  assert.notEqual(got.header, 'SQLite format 3', 'the export is not a plain SQLite file');
});

test('mid-transaction, the WAL and the pages already written hold none of the plaintext', async (t) => {
  const name = dbName(t);
  const got = await inPage(
    h.page,
    async ({ open }, { name, marker, scan }) => {
      const rawScan = (0, eval)(`(${scan})`);
      const key = new Uint8Array(32).fill(7);
      const db = await open(name, { key });
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT)');
      const row = `${marker} `.repeat(200);
      await db.executeBatch(
        'INSERT INTO t(s) VALUES (?)',
        Array.from({ length: 500 }, () => [row]),
      );
      // 40 MB in one transaction: more than the page cache holds, so pages
      // spill into the WAL, before any commit. The
      // files are read then (a File of them reads beside the worker's
      // access handles), and the transaction is rolled back.
      let mid;
      await db
        .transaction(async (tx) => {
          await tx.execute('UPDATE t SET s = s || ?', [marker]);
          for (let i = 0; i < 6; i++)
            await tx.executeBatch(
              'INSERT INTO t(s) VALUES (?)',
              Array.from({ length: 1000 }, () => [row]),
            );
          mid = await rawScan(name, marker);
          throw new Error('roll back');
        })
        .catch(() => {});
      const rows = (await db.query('SELECT count(*) AS n FROM t'))[0].n;
      await db.close();
      return { mid, rows };
    },
    { name, marker: MARKER, scan: rawScan.toString() },
  );
  assert.ok(got.mid.bytes > 32 << 20, `pages spilled into the WAL (${got.mid.bytes} bytes in the pool)`);
  assert.equal(got.mid.hits, 0, 'no plaintext marker in the database file or its WAL mid-transaction');
  assert.equal(got.rows, 500, 'the transaction rolled back');
});

test('a wrong key, a missing key and a key for a plain database are RESQ_BAD_KEY, and nothing changes', { opfs: false }, async (t) => {
  const secret = dbName(t, 'secret.db');
  const plainName = dbName(t, 'plain.db');
  const got = await inPage(
    h.page,
    async ({ open, outcome }, { secret, plainName }) => {
      const files = async (name) => {
        const out = [];
        const walk = async (dir, path) => {
          for await (const [n, e] of dir.entries()) {
            if (e.kind === 'directory') await walk(e, `${path}${n}/`);
            else out.push([path + n, new Uint8Array(await (await e.getFile()).arrayBuffer()).reduce((a, b) => (a * 31 + b) >>> 0, 7)]);
          }
        };
        await walk(await (await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm')).getDirectoryHandle(name), '');
        return JSON.stringify(out.sort());
      };
      let db = await open(secret, { key: 'right' });
      await db.execute('CREATE TABLE t(x)');
      await db.execute("INSERT INTO t VALUES ('kept')");
      await db.close();
      db = await open(plainName);
      await db.execute('CREATE TABLE t(x)');
      await db.execute("INSERT INTO t VALUES ('plain')");
      await db.close();
      const before = [await files(secret), await files(plainName)];
      const wrong = await outcome(open(secret, { key: 'wrong' }));
      const rawWrong = await outcome(open(secret, { key: new Uint8Array(32) }));
      const missing = await outcome(open(secret));
      const onPlain = await outcome(open(plainName, { key: 'right' }));
      const after = [await files(secret), await files(plainName)];
      db = await open(secret, { key: 'right' });
      const kept = await db.query('SELECT x FROM t');
      await db.close();
      db = await open(plainName);
      const plainRows = await db.query('SELECT x FROM t');
      await db.close();
      const badShape = await outcome(open(secret, { key: 42 }));
      const shortRaw = await outcome(open(secret, { key: new Uint8Array(31) }));
      const empty = await outcome(open(secret, { key: '' }));
      const memory = await outcome(open(':memory:', { key: 'x' }));
      return {
        wrong,
        rawWrong,
        missing,
        onPlain,
        unchanged: before[0] === after[0] && before[1] === after[1],
        kept,
        plainRows,
        badShape,
        shortRaw,
        empty,
        memory,
      };
    },
    { secret, plainName },
  );
  for (const k of ['wrong', 'rawWrong', 'missing', 'onPlain']) {
    assert.equal(got[k].ok, false, `${k}: refused`);
    assert.equal(got[k].error.code, 'RESQ_BAD_KEY', `${k}: ${got[k].error.message}`);
    assert.ok(got[k].error.isResqError);
  }
  assert.match(got.missing.error.message, /encrypted/);
  assert.match(got.onPlain.error.message, /not encrypted|rekey/);
  assert.ok(got.unchanged, 'the refused opens changed no byte of either file');
  assert.deepEqual(got.kept, [{ x: 'kept' }], 'the right key still opens it');
  assert.deepEqual(got.plainRows, [{ x: 'plain' }], 'the plain database is still plain');
  for (const k of ['badShape', 'shortRaw', 'empty', 'memory']) {
    assert.equal(got[k].ok, false, `${k}: refused`);
    assert.equal(got[k].error.code, 'RESQ_BAD_PARAM', `${k}: ${got[k].error.message}`);
  }
});

test('a following tab proves the key: with it, its calls run; with a wrong one or none, RESQ_BAD_KEY and nothing of it runs', {
  opfs: false,
}, async (t) => {
  const name = dbName(t);
  const other = await h.newPage();
  try {
    await inPage(
      h.page,
      async ({ open }, { name }) => {
        globalThis.leader = await open(name, { key: 'tab key' });
        await globalThis.leader.execute('CREATE TABLE t(x)');
      },
      { name },
    );
    const got = await inPage(
      other,
      async ({ open, outcome }, { name }) => {
        const wrong = await outcome(open(name, { key: 'not the tab key' }));
        const none = await outcome(open(name));
        const db = await open(name, { key: 'tab key' });
        await db.execute("INSERT INTO t VALUES ('from the follower')");
        const rows = await db.query('SELECT x FROM t');
        await db.close();
        return { wrong, none, rows };
      },
      { name },
    );
    const count = await inPage(h.page, async () => {
      const n = (await globalThis.leader.query('SELECT count(*) AS n FROM t'))[0].n;
      await globalThis.leader.close();
      return n;
    });
    assert.equal(got.wrong.ok, false);
    assert.equal(got.wrong.error.code, 'RESQ_BAD_KEY', got.wrong.error.message);
    assert.equal(got.none.ok, false);
    assert.equal(got.none.error.code, 'RESQ_BAD_KEY', got.none.error.message);
    assert.deepEqual(got.rows, [{ x: 'from the follower' }]);
    assert.equal(count, 1, 'only the follower with the key wrote');
  } finally {
    await other.close();
  }
});

test('an encrypted database keeps 8192-byte pages, and a plain one with smaller pages is not encrypted', { opfs: false }, async (t) => {
  const name = dbName(t);
  const small = dbName(t, 'small.db');
  const got = await inPage(
    h.page,
    async ({ open, outcome }, { name, small }) => {
      const code = (o) => (o.ok ? 'ok' : o.error.code);
      const size = async (db) => (await db.query('PRAGMA page_size'))[0].page_size;
      const db = await open(name, { key: 'pages' });
      await db.execute('PRAGMA page_size = 4096');
      await db.execute('CREATE TABLE t(x)');
      const out = { created: await size(db) };
      await db.execute('VACUUM');
      out.vacuumed = await size(db);
      await db.close();
      const p = await open(small);
      await p.execute('PRAGMA page_size = 4096');
      await p.execute('CREATE TABLE t(x)');
      await p.execute("INSERT INTO t VALUES ('kept')");
      const refused = await outcome(p.rekey('k'));
      out.refused = code(refused);
      out.says = refused.ok ? '' : refused.error.message;
      out.next = (await p.query('SELECT x FROM t'))[0].x;
      await p.close();
      out.stillPlain = code(await outcome(open(small).then((d) => d.close())));
      return out;
    },
    { name, small },
  );
  assert.equal(got.created, 8192, 'PRAGMA page_size before the first table does not make it smaller');
  assert.equal(got.vacuumed, 8192, 'nor does VACUUM');
  assert.equal(got.refused, 'RESQ_UNSUPPORTED');
  assert.match(got.says, /4096-byte pages/);
  assert.equal(got.next, 'kept', 'the refusal changed nothing, and the next call works');
  assert.equal(got.stillPlain, 'ok', 'it is still plain');
});
