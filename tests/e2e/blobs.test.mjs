// Blob transport both ways: bytes below, at and above the transfer threshold
// on every path that carries parameters, results in buffers of their own,
// transfer(), Blob/File parameters streamed into their row, readBlob ranges,
// and the bad inputs of the blob-transport issue. The page is cross-origin
// isolated so SharedArrayBuffer-backed views can be tested too.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { CHROMIUM_IDB_BLOB_LIMIT, ENGINE, notInNode, start } from './harness.mjs';
import { withDb, dbName } from './util.mjs';

let h;
before(async () => {
  h = await start({ isolated: true });
});
after(async () => {
  await h?.close();
});

const T = 4096; // a small threshold keeps the sizes around it cheap
const onDb = (t, body, arg, options = { blobTransferThreshold: T }) => withDb(h.page, dbName(t), body, { arg, options });

test('bytes just below, at and just above the threshold round-trip on every parameter path, and the caller keeps its buffer', async (t) => {
  const r = await onDb(
    t,
    async (db, _api, T) => {
      const fill = (n, seed) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);
      const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, path TEXT, data BLOB)');
      const out = [];
      for (const n of [T - 1, T, T + 1]) {
        const b = fill(n, n);
        const keep = b.slice();
        await db.execute('INSERT INTO t(path, data) VALUES (?, ?)', ['execute', b]);
        await db.executeBatch('INSERT INTO t(path, data) VALUES (?, ?)', [
          ['batch', b],
          ['batch', b],
        ]);
        await db.transaction((tx) => tx.execute('INSERT INTO t(path, data) VALUES (?, ?)', ['tx', b]));
        const [{ echo }] = await db.query('SELECT ? AS echo', [b]);
        const echoedBytes = JSON.parse(new TextDecoder().decode(await db.queryBytes('SELECT ? AS e', [b])))[0].e;
        const rows = await db.query('SELECT path, data FROM t WHERE length(data) = ?', [n]);
        out.push({
          n,
          callerIntact: b.buffer.byteLength === n && same(b, keep),
          paths: rows.map((r) => r.path).sort(),
          allStored: rows.every((r) => same(r.data, keep)),
          ownBuffers: rows.every((r) => r.data.byteOffset === 0 && r.data.buffer.byteLength === n) && echo.buffer.byteLength === n,
          echo: same(echo, keep),
          base64: echoedBytes === btoa(String.fromCharCode(...keep)),
        });
      }
      return out;
    },
    T,
  );
  for (const row of r) {
    assert.deepEqual(row, {
      n: row.n,
      callerIntact: true,
      paths: ['batch', 'batch', 'execute', 'tx'],
      allStored: true,
      ownBuffers: true,
      echo: true,
      base64: true,
    });
  }
});

test('transfer() hands the buffer over: detached on the page, exactly the view bytes stored', async (t) => {
  const r = await onDb(t, async (db, { transfer }) => {
    await db.execute('CREATE TABLE t(data BLOB)');
    const big = new Uint8Array(10000).map((_, i) => i & 255);
    const view = big.subarray(100, 9100);
    await db.execute('INSERT INTO t VALUES (?)', [transfer(view)]);
    const small = new Uint8Array([7, 8, 9]);
    await db.execute('INSERT INTO t VALUES (?)', [transfer(small.buffer)]);
    const rows = await db.query('SELECT data FROM t ORDER BY rowid');
    return {
      detached: [big.buffer.byteLength, small.byteLength],
      first: [rows[0].data.length, rows[0].data[0], rows[0].data[8999]],
      second: Array.from(rows[1].data),
    };
  });
  assert.deepEqual(r, { detached: [0, 0], first: [9000, 100, 9099 & 255], second: [7, 8, 9] });
});

test('bad blob inputs: detached buffers are refused, zero-length, views and shared memory round-trip exactly', async (t) => {
  const r = await onDb(t, async (db, { transfer, describe }) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)');
    const gone = new Uint8Array(8);
    structuredClone(gone.buffer, { transfer: [gone.buffer] });
    const detached = [];
    for (const p of [gone, gone.buffer, transfer(gone)]) {
      try {
        await db.execute('INSERT INTO t(data) VALUES (?)', [p]);
        detached.push('stored');
      } catch (e) {
        detached.push(`${describe(e).code}: ${/parameter 1/.test(e.message)}`);
      }
    }
    const before = (await db.query('SELECT count(*) AS n FROM t'))[0].n;
    await db.execute('INSERT INTO t(id, data) VALUES (1, ?)', [new Uint8Array(0)]);
    await db.execute('INSERT INTO t(id, data) VALUES (2, ?)', [new Blob([])]);
    // WebKitGTK has no SharedArrayBuffer, even cross-origin isolated.
    const hasShared = typeof SharedArrayBuffer === 'function';
    if (hasShared) {
      const shared = new Uint8Array(new SharedArrayBuffer(6000)).map((_, i) => (i * 7) & 255);
      await db.execute('INSERT INTO t(id, data) VALUES (3, ?)', [shared]);
      await db.execute('INSERT INTO t(id, data) VALUES (4, ?)', [shared.subarray(10, 20)]);
    }
    const words = new Uint16Array([0x0102, 0x0304]);
    await db.execute('INSERT INTO t(id, data) VALUES (5, ?)', [words]);
    const rows = await db.query('SELECT id, typeof(data) AS type, data FROM t ORDER BY id');
    return {
      detached,
      before,
      hasShared,
      rows: rows.map((r) => [r.id, r.type, r.data.length, Array.from(r.data.subarray(0, 4)), r.data.buffer instanceof ArrayBuffer]),
    };
  });
  assert.deepEqual(r.detached, ['RESQ_BAD_PARAM: true', 'RESQ_BAD_PARAM: true', 'RESQ_BAD_PARAM: true']);
  assert.equal(r.before, 0);
  assert.equal(r.hasShared, ENGINE !== 'webkit', 'SharedArrayBuffer exists on this cross-origin isolated page, except in WebKitGTK');
  const shared = [
    [3, 'blob', 6000, [0, 7, 14, 21], true],
    [4, 'blob', 10, [70, 77, 84, 91], true],
  ];
  assert.deepEqual(r.rows, [
    [1, 'blob', 0, [], true],
    [2, 'blob', 0, [], true],
    ...(r.hasShared ? shared : []),
    [5, 'blob', 4, [2, 1, 4, 3], true],
  ]);
});

test("a blob over SQLite's length limit is SQLITE_TOOBIG and the next call works", async (t) => {
  const r = await onDb(t, async (db, { outcome }) => ({
    big: await outcome(db.query('SELECT zeroblob(2147483648) AS z')),
    next: await outcome(db.query('SELECT 1 AS one')),
  }));
  assert.equal(r.big.error.code, 'SQLITE_TOOBIG');
  assert.deepEqual(r.next, { ok: true, value: [{ one: 1 }] });
});

test('Blob and File parameters stream into their row, on INSERT and UPDATE, named or positional', async (t) => {
  const r = await onDb(t, async (db) => {
    const MB = 1 << 20;
    const pattern = (n, seed) => Uint8Array.from({ length: n }, (_, i) => (i * 13 + seed) & 255);
    const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
    const out = {};
    for (const n of [1, MB - 1, MB, MB + 1, 3 * MB]) {
      const bytes = pattern(n, n & 255);
      const { lastInsertRowid } = await db.execute('INSERT INTO m(name, data) VALUES (?, ?)', ['f', new File([bytes], 'f.bin')]);
      const [{ data }] = await db.query('SELECT data FROM m WHERE id = ?', [lastInsertRowid]);
      out[n] = same(data, bytes);
    }
    const upd = pattern(5000, 9);
    await db.execute('UPDATE m SET data = :d WHERE id = 1', { d: new Blob([upd]) });
    const [{ data }] = await db.query('SELECT data FROM m WHERE id = 1');
    out.update = same(data, upd);
    const one = new Blob([pattern(100, 1)]);
    await db.execute('CREATE TABLE two(a BLOB, b BLOB)');
    await db.execute('INSERT INTO two VALUES (?, ?)', [one, one]);
    const [pair] = await db.query('SELECT a, b FROM two');
    out.sameBlobTwice = same(pair.a, pair.b) && pair.a.length === 100;
    return out;
  });
  assert.deepEqual(r, { 1: true, 1048575: true, 1048576: true, 1048577: true, 3145728: true, update: true, sameBlobTwice: true });
});

test('a trigger copying a streamed value gets the same bytes', async (t) => {
  const r = await onDb(t, async (db) => {
    await db.execute(`CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB);
      CREATE TABLE copy(id INTEGER PRIMARY KEY, data BLOB);
      CREATE TRIGGER keep AFTER INSERT ON m BEGIN INSERT INTO copy(data) VALUES (NEW.data); END;`);
    const bytes = Uint8Array.from({ length: 70000 }, (_, i) => (i * 5) & 255);
    await db.execute('INSERT INTO m(data) VALUES (?)', [new Blob([bytes])]);
    const [{ a }] = await db.query('SELECT data AS a FROM m');
    const [{ b }] = await db.query('SELECT data AS b FROM copy');
    return [a.every((x, i) => x === bytes[i]), b.every((x, i) => x === bytes[i]), a.length, b.length];
  });
  assert.deepEqual(r, [true, true, 70000, 70000]);
});

test('bad Blob parameters are refused and leave nothing behind', {
  // The unreadable File is one whose OPFS file was rewritten after it was taken.
  skip:
    (ENGINE === 'webkit' &&
      'WebKitGTK has no OPFS writable streams, and its File of a rewritten OPFS file still reads: no unreadable File to pass') ||
    notInNode('its unreadable File is an OPFS file rewritten after it was taken'),
}, async (t) => {
  const r = await onDb(t, async (db, { outcome }) => {
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('CREATE TABLE k(id TEXT PRIMARY KEY, data BLOB) WITHOUT ROWID');
    const count = async () => (await db.query('SELECT (SELECT count(*) FROM m) + (SELECT count(*) FROM k) AS n'))[0].n;
    // A File whose bytes changed on disk after it was taken cannot be read:
    // one below the stream limit (read whole), one above it (streamed).
    const root = await navigator.storage.getDirectory();
    const staleFile = async (size) => {
      const fh = await root.getFileHandle(`stale-${Math.random()}.bin`, { create: true });
      let w = await fh.createWritable();
      await w.write(new Uint8Array(size));
      await w.close();
      const stale = await fh.getFile();
      await new Promise((r) => setTimeout(r, 20));
      w = await fh.createWritable();
      await w.write(new Uint8Array(size).fill(1));
      await w.close();
      return stale;
    };
    // Large enough to stream (4 MB and up): it must land in a rowid table's cell.
    const a = new Blob([new Uint8Array(4 << 20).fill(1)]);
    const res = {
      unreadableSmall: await outcome(db.execute('INSERT INTO m(data) VALUES (?)', [await staleFile(3 << 20)])),
      unreadableLarge: await outcome(db.execute('INSERT INTO m(data) VALUES (?)', [await staleFile(5 << 20)])),
      withoutRowid: await outcome(db.execute("INSERT INTO k VALUES ('x', ?)", [a])),
      notStored: await outcome(db.execute('INSERT INTO m(data) SELECT NULL WHERE ? IS NOT NULL', [a])),
      inQuery: await outcome(db.query('SELECT ? AS b', [a])),
      inBatch: await outcome(db.executeBatch('INSERT INTO m(data) VALUES (?)', [[a]])),
    };
    return { res, count: await count(), next: await outcome(db.execute('INSERT INTO m(data) VALUES (?)', [a])) };
  });
  for (const [k, v] of Object.entries(r.res)) {
    assert.equal(v.ok, false, k);
    assert.equal(v.error.code, 'RESQ_BAD_PARAM', `${k}: ${v.error.message}`);
    assert.match(v.error.message, /parameter 1|Blob/, k);
  }
  assert.equal(r.count, 0);
  assert.equal(r.next.ok, true);
});

test('a 256 MB File streams in with worker wasm memory under 64 MB, and readBlob ranges read it back exactly', {
  skip: CHROMIUM_IDB_BLOB_LIMIT || notInNode('the probe worker, a browser worker, reads the wasm memory'),
}, async (t) => {
  // The probe worker reports the wasm instance's memory (the package has no such hook).
  const hp = await start({ isolated: true, probe: {} });
  t.after(() => hp.close());
  const name = dbName(t);
  const r = await withDb(
    hp.page,
    name,
    async (db, { probe }, name) => {
      const MB = 1 << 20;
      const SIZE = 256 * MB;
      // Deterministic, incompressible-looking content, generated a MB at a time.
      const part = (i) => {
        const b = new Uint8Array(MB);
        let x = (i + 1) * 2654435761;
        for (let j = 0; j < MB; j += 4) {
          x ^= x << 13;
          x ^= x >>> 17;
          x ^= x << 5;
          b[j] = x;
          b[j + 1] = x >>> 8;
          b[j + 2] = x >>> 16;
          b[j + 3] = x >>> 24;
        }
        return b;
      };
      const parts = Array.from({ length: SIZE / MB }, (_, i) => part(i));
      const file = new File(parts, 'video.bin');
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      const before = await probe(name, 'memory');
      const { lastInsertRowid: id } = await db.execute('INSERT INTO media(name, data) VALUES (?, ?)', [file.name, file]);
      const afterInsert = await probe(name, 'memory');
      const hex = async (bytes) =>
        Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
      let equal = 0;
      const RANGE = 16 * MB;
      for (let at = 0; at < SIZE; at += RANGE) {
        const got = await db.readBlob('media', 'data', id, { offset: at, length: RANGE });
        const want = new Uint8Array(await file.slice(at, at + RANGE).arrayBuffer());
        if ((await hex(got)) === (await hex(want))) equal += 1;
      }
      const odd = await db.readBlob('media', 'data', id, { offset: SIZE - 5, length: 5 });
      const [{ n }] = await db.query('SELECT length(data) AS n FROM media WHERE id = ?', [id]);
      // WebAssembly.Memory never shrinks: its size now is its peak.
      return {
        n,
        equal,
        ranges: SIZE / RANGE,
        odd: Array.from(odd),
        tail: Array.from(parts[255].subarray(MB - 5)),
        before,
        peak: await probe(name, 'memory'),
        afterInsert,
      };
    },
    { arg: name, options: { blobTransferThreshold: T } },
  );
  assert.equal(r.n, 256 * 1024 * 1024);
  assert.equal(r.equal, r.ranges);
  assert.deepEqual(r.odd, r.tail);
  assert.ok(r.peak < 64 * 1024 * 1024, `worker wasm memory peaked at ${r.peak} bytes`);
  t.diagnostic(`wasm memory: ${r.before} bytes before, ${r.afterInsert} after the insert, ${r.peak} at the end`);
});

test('readBlob: ranges, and the errors for what does not exist or does not fit', async (t) => {
  const r = await onDb(t, async (db, { outcome }) => {
    await db.execute(
      "CREATE TABLE m(id INTEGER PRIMARY KEY, name TEXT, data BLOB); INSERT INTO m VALUES (1, 'a', x'0001020304'), (2, 'b', NULL)",
    );
    const read = (...a) => outcome(db.readBlob(...a));
    return {
      whole: await read('m', 'data', 1),
      middle: await read('m', 'data', 1, { offset: 1, length: 3 }),
      tail: await read('m', 'data', 1n, { offset: 3 }),
      empty: await read('m', 'data', 1, { offset: 5 }),
      past: await read('m', 'data', 1, { offset: 3, length: 3 }),
      negative: await read('m', 'data', 1, { offset: -1 }),
      noRow: await read('m', 'data', 9),
      noTable: await read('nope', 'data', 1),
      noColumn: await read('m', 'nope', 1),
      nullCell: await read('m', 'data', 2),
      badRowid: await read('m', 'data', 1.5),
    };
  });
  const code = (o) => (o.ok ? o.value : o.error.code);
  assert.deepEqual(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, code(v)])), {
    whole: { bytes: [0, 1, 2, 3, 4] },
    middle: { bytes: [1, 2, 3] },
    tail: { bytes: [3, 4] },
    empty: { bytes: [] },
    past: 'RESQ_RANGE',
    negative: 'RESQ_RANGE',
    noRow: 'RESQ_NOT_FOUND',
    noTable: 'RESQ_NOT_FOUND',
    noColumn: 'RESQ_NOT_FOUND',
    nullCell: 'RESQ_BAD_PARAM',
    badRowid: 'RESQ_BAD_PARAM',
  });
});
