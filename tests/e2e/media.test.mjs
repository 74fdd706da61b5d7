// Media-sized values: blobStream (chunked, on demand), blobFile, and staged
// blobs built piece by piece in the worker's temp space and written into
// their row once.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { notInNode, start } from './harness.mjs';
import { withDb, dbName, inPage, keepWorkers } from './util.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

const onDb = (t, body, arg) => withDb(h.page, dbName(t), body, { arg });

test('blobStream reads a value chunk by chunk, whole or a range; blobFile returns it as a typed Blob', async (t) => {
  const r = await onDb(t, async (db) => {
    const bytes = Uint8Array.from({ length: 10000 }, (_, i) => (i * 7) & 255);
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('INSERT INTO m VALUES (1, ?)', [bytes]);
    const collect = async (stream) => {
      const sizes = [];
      const parts = [];
      for await (const c of stream) {
        sizes.push(c.length);
        parts.push(...c);
      }
      return { sizes, same: parts.length > 0 && parts.every((x, i) => x === bytes[i + (parts.start ?? 0)]), parts };
    };
    const whole = await collect(db.blobStream('m', 'data', 1, { chunkSize: 3000 }));
    const range = await collect(db.blobStream('m', 'data', 1, { offset: 100, length: 2500, chunkSize: 1000 }));
    const file = await db.blobFile('m', 'data', 1, { type: 'video/webm' });
    const fileBytes = new Uint8Array(await file.arrayBuffer());
    return {
      wholeSizes: whole.sizes,
      wholeSame: whole.same,
      rangeSizes: range.sizes,
      rangeSame: range.parts.every((x, i) => x === bytes[100 + i]),
      file: [file.type, file.size, fileBytes.every((x, i) => x === bytes[i])],
    };
  });
  assert.deepEqual(r, {
    wholeSizes: [3000, 3000, 3000, 1000],
    wholeSame: true,
    rangeSizes: [1000, 1000, 500],
    rangeSame: true,
    file: ['video/webm', 10000, true],
  });
});

test('blobStream reads ahead at most one chunk: a consumer that stops reading stops the reads', {
  skip: notInNode("it counts the worker's reads through the page's Worker"),
}, async (t) => {
  const r = await onDb(t, async (db) => {
    let t_restore = () => {};
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('INSERT INTO m VALUES (1, zeroblob(100000))');
    // Count the reads the stream asks the worker for (its messages).
    let reads = 0;
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (message, transfer) {
      if (message?.op === 'blobStreamRead') reads++;
      return post.call(this, message, transfer);
    };
    t_restore = () => (Worker.prototype.postMessage = post);
    const reader = db.blobStream('m', 'data', 1, { chunkSize: 1000 }).getReader();
    await reader.read();
    // Let any read the stream wanted to make reach the worker and come back:
    // calls complete in order, so these queries finish after it.
    for (let i = 0; i < 5; i++) {
      await db.query('SELECT 1');
      await new Promise((r) => setTimeout(r, 0));
    }
    const whilePaused = reads;
    let total = 1000;
    for (let c = await reader.read(); !c.done; c = await reader.read()) total += c.value.length;
    t_restore();
    return { whilePaused, total, reads };
  });
  assert.ok(r.whilePaused <= 2, `read ${r.whilePaused} chunks for a consumer that took one`);
  assert.deepEqual({ total: r.total, reads: r.reads }, { total: 100000, reads: 100 });
});

test('blobFile assembles a value over several 4 MB reads and 32 MB batches exactly, with its type', async (t) => {
  const r = await onDb(t, async (db) => {
    const MB = 1 << 20;
    const size = 37 * MB + 5;
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i += 65536) crypto.getRandomValues(bytes.subarray(i, Math.min(size, i + 65536)));
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('INSERT INTO m VALUES (1, ?)', [new Blob([bytes])]);
    const file = await db.blobFile('m', 'data', 1, { type: 'video/webm' });
    const hex = async (b) =>
      Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b)), (x) => x.toString(16).padStart(2, '0')).join('');
    return { size: file.size, type: file.type, same: (await hex(await file.arrayBuffer())) === (await hex(bytes)) };
  });
  assert.deepEqual(r, { size: 37 * (1 << 20) + 5, type: 'video/webm', same: true });
});

test('a stream cancelled halfway leaves nothing open: the table can be changed and dropped at once', async (t) => {
  const r = await onDb(t, async (db, { outcome }) => {
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('INSERT INTO m VALUES (1, zeroblob(50000))');
    const reader = db.blobStream('m', 'data', 1, { chunkSize: 10000 }).getReader();
    const first = await reader.read();
    await reader.cancel();
    return {
      first: first.value.length,
      update: await outcome(db.execute("UPDATE m SET data = x'00'")),
      drop: await outcome(db.execute('DROP TABLE m')),
    };
  });
  assert.equal(r.first, 10000);
  assert.equal(r.update.ok, true);
  assert.equal(r.drop.ok, true);
});

test('blobStream and blobFile errors: ranges past the end, negative offsets, missing rows', async (t) => {
  const r = await onDb(t, async (db, { describe }) => {
    await db.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB); INSERT INTO m VALUES (1, x'0102030405'), (2, 'some text')");
    const streamError = async (...a) => {
      try {
        for await (const _ of db.blobStream(...a));
        return 'no error';
      } catch (e) {
        return describe(e).code;
      }
    };
    const fileError = async (...a) =>
      db.blobFile(...a).then(
        () => 'no error',
        (e) => e.code,
      );
    return {
      past: await streamError('m', 'data', 1, { offset: 3, length: 5 }),
      negative: await streamError('m', 'data', 1, { offset: -1 }),
      noRow: await streamError('m', 'data', 7),
      noColumn: await fileError('m', 'nope', 1),
      badChunk: await streamError('m', 'data', 1, { chunkSize: 0 }),
      text: await streamError('m', 'data', 2),
      textRead: await db.readBlob('m', 'data', 2).then(
        () => 'no error',
        (e) => e.code,
      ),
      next: (await db.query('SELECT length(data) AS n FROM m'))[0].n,
    };
  });
  assert.deepEqual(r, {
    past: 'RESQ_RANGE',
    negative: 'RESQ_RANGE',
    noRow: 'RESQ_NOT_FOUND',
    noColumn: 'RESQ_NOT_FOUND',
    badChunk: 'RESQ_BAD_PARAM',
    text: 'RESQ_BAD_PARAM',
    textRead: 'RESQ_BAD_PARAM',
    next: 5,
  });
});

test('stageBlob: appends (bytes, Blobs, a piped stream) past the memory cap, then one INSERT stores it exactly', async (t) => {
  const r = await onDb(t, async (db) => {
    const MB = 1 << 20;
    const chunk = (i) => Uint8Array.from({ length: MB }, (_, j) => (i * 31 + j) & 255);
    await db.execute('CREATE TABLE rec(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
    const staged = await db.stageBlob();
    const expected = [];
    for (let i = 0; i < 3; i++) {
      const c = chunk(i);
      await staged.append(c);
      expected.push(c);
      if (c[5] !== ((i * 31 + 5) & 255)) return 'caller buffer changed';
    }
    await staged.append(new Blob([chunk(3)]));
    expected.push(chunk(3));
    await staged.append(chunk(4).buffer);
    expected.push(chunk(4));
    const piped = [chunk(5), chunk(6)];
    await new ReadableStream({
      start(c) {
        for (const p of piped) c.enqueue(p);
        c.close();
      },
    }).pipeTo(staged.writable);
    expected.push(...piped);
    const size = staged.size;
    const { lastInsertRowid: id } = await db.execute('INSERT INTO rec(name, data) VALUES (?, ?)', ['voice note', staged]);
    const got = await db.readBlob('rec', 'data', id);
    const all = new Uint8Array(expected.length * MB);
    for (const [i, c] of expected.entries()) all.set(c, i * MB);
    return { size, stored: got.length, same: got.every((x, i) => x === all[i]) };
  });
  assert.deepEqual(r, { size: 7 << 20, stored: 7 << 20, same: true });
});

test('a staged blob is used once: a second use, an append after use, or a use after discard is RESQ_BAD_PARAM; a failed use leaves it usable', async (t) => {
  const r = await onDb(t, async (db, { outcome }) => {
    await db.execute('CREATE TABLE rec(id INTEGER PRIMARY KEY, data BLOB NOT NULL, tag TEXT UNIQUE)');
    await db.execute("INSERT INTO rec(data, tag) VALUES (x'00', 'taken')");
    const staged = await db.stageBlob();
    await staged.append(new Uint8Array([1, 2, 3]));
    const failed = await outcome(db.execute("INSERT INTO rec(data, tag) VALUES (?, 'taken')", [staged]));
    const retried = await outcome(db.execute("INSERT INTO rec(data, tag) VALUES (?, 'new')", [staged]));
    const twice = await outcome(db.execute("INSERT INTO rec(data, tag) VALUES (?, 'again')", [staged]));
    const appendAfter = await outcome(staged.append(new Uint8Array([4])));
    const other = await db.stageBlob();
    await other.append(new Uint8Array([9]));
    await other.discard();
    const afterDiscard = await outcome(db.execute("INSERT INTO rec(data, tag) VALUES (?, 'x')", [other]));
    const rows = await db.query('SELECT tag, data FROM rec ORDER BY id');
    return {
      failed: failed.error?.code,
      retried: retried.ok,
      twice: twice.error?.code,
      appendAfter: appendAfter.error?.code,
      afterDiscard: afterDiscard.error?.code,
      rows: rows.map((r) => [r.tag, Array.from(r.data)]),
    };
  });
  assert.deepEqual(r, {
    failed: 'SQLITE_CONSTRAINT_UNIQUE',
    retried: true,
    twice: 'RESQ_BAD_PARAM',
    appendAfter: 'RESQ_BAD_PARAM',
    afterDiscard: 'RESQ_BAD_PARAM',
    rows: [
      ['taken', [0]],
      ['new', [1, 2, 3]],
    ],
  });
});

test('staged bytes read back exactly across chunk and spill boundaries, in memory and from the temp file, also after a failed use', async (t) => {
  const r = await onDb(t, async (db, { outcome }) => {
    await db.execute('CREATE TABLE rec(id INTEGER PRIMARY KEY, tag TEXT UNIQUE, data BLOB)');
    await db.execute("INSERT INTO rec(tag) VALUES ('taken')");
    const pattern = (n, seed) => Uint8Array.from({ length: n }, (_, j) => (j * 13 + seed) & 255);
    const build = async (sizes) => {
      const staged = await db.stageBlob();
      const parts = sizes.map((n, i) => pattern(n, i));
      for (const p of parts) staged.append(p); // not awaited: appends complete in order
      const all = new Uint8Array(sizes.reduce((a, b) => a + b, 0));
      let at = 0;
      for (const p of parts) all.set(p, (at += p.length) - p.length);
      return { staged, all };
    };
    const same = async (id, all) => {
      const got = await db.readBlob('rec', 'data', id);
      return got.length === all.length && got.every((x, i) => x === all[i]);
    };
    // Odd sizes that straddle the 1 MB write steps; 2.1 MB stays in memory.
    const small = await build([300001, 1, 700000, 65536, 1048577]);
    const { lastInsertRowid: a } = await db.execute("INSERT INTO rec(tag, data) VALUES ('memory', ?)", [small.staged]);
    // 6 MB spills to the temp file; its first use fails, the retry stores it.
    const big = await build([3 << 20, 1, (3 << 20) - 1]);
    const failed = await outcome(db.execute("INSERT INTO rec(tag, data) VALUES ('taken', ?)", [big.staged]));
    const { lastInsertRowid: b } = await db.execute("INSERT INTO rec(tag, data) VALUES ('file', ?)", [big.staged]);
    return { memory: await same(a, small.all), failed: failed.error?.code, file: await same(b, big.all) };
  });
  assert.deepEqual(r, { memory: true, failed: 'SQLITE_CONSTRAINT_UNIQUE', file: true });
});

test('a failed append or an aborted writable makes the staged blob unusable, so no gap or fragment is stored; discard and a new stage work', {
  opfs: true,
}, async (t) => {
  const r = await onDb(t, async (db, { outcome }) => {
    await db.execute('CREATE TABLE rec(id INTEGER PRIMARY KEY, data BLOB)');
    // A File whose bytes changed after it was taken cannot be read by the worker.
    const root = await navigator.storage.getDirectory();
    const fh = await root.getFileHandle(`stale-${Math.random()}.bin`, { create: true });
    let w = await fh.createWritable();
    await w.write(new Uint8Array(1000));
    await w.close();
    const stale = await fh.getFile();
    await new Promise((r) => setTimeout(r, 20));
    w = await fh.createWritable();
    await w.write(new Uint8Array(2000).fill(1));
    await w.close();

    // Worker-side failure, with appends already sent after it.
    const s1 = await db.stageBlob();
    const calls = [s1.append(new Uint8Array([1])), s1.append(stale), s1.append(new Uint8Array([2])), s1.append(new Uint8Array([3]))];
    const results = await Promise.all(calls.map(outcome));
    const use1 = await outcome(db.execute('INSERT INTO rec(data) VALUES (?)', [s1]));
    const later1 = await outcome(s1.append(new Uint8Array([4])));
    await s1.discard();

    // Page-side failure (not bytes), then a later append.
    const s2 = await db.stageBlob();
    const bad = await outcome(s2.append('not bytes'));
    const later2 = await outcome(s2.append(new Uint8Array([5])));
    const use2 = await outcome(db.execute('INSERT INTO rec(data) VALUES (?)', [s2]));
    await s2.discard();

    // A piped stream whose chunk fails: pipeTo rejects.
    const s3 = await db.stageBlob();
    const chunks = [new Uint8Array([6]), stale, new Uint8Array([7])];
    const piped = await outcome(
      new ReadableStream({ pull: (c) => (chunks.length ? c.enqueue(chunks.shift()) : c.close()) }).pipeTo(s3.writable),
    );
    const use3 = await outcome(db.execute('INSERT INTO rec(data) VALUES (?)', [s3]));
    await s3.discard();

    // A source that fails midway aborts the writable: the fragment cannot be stored.
    const s4 = await db.stageBlob();
    let sent = 0;
    const broken = new ReadableStream({ pull: (c) => (sent++ < 2 ? c.enqueue(new Uint8Array([10])) : c.error(new Error('network lost'))) });
    const aborted = await outcome(broken.pipeTo(s4.writable));
    const use4 = await outcome(db.execute('INSERT INTO rec(data) VALUES (?)', [s4]));
    await s4.discard();

    const fresh = await db.stageBlob();
    await fresh.append(new Uint8Array([8, 9]));
    await db.execute('INSERT INTO rec(data) VALUES (?)', [fresh]);
    const rows = await db.query('SELECT data FROM rec');
    return {
      results: results.map((x) => x.ok || x.error.code),
      messages: [results[2].error?.message, use1.error?.message, later2.error?.message],
      use1: use1.error?.code,
      later1: later1.error?.code,
      bad: bad.error?.code,
      later2: later2.error?.code,
      use2: use2.error?.code,
      piped: piped.error?.code,
      use3: use3.error?.code,
      aborted: aborted.error?.message,
      use4: use4.error?.code,
      rows: rows.map((x) => Array.from(x.data)),
    };
  });
  assert.deepEqual(r.results, [true, 'RESQ_BAD_PARAM', 'RESQ_BAD_PARAM', 'RESQ_BAD_PARAM']);
  for (const m of r.messages) assert.match(m, /earlier append .*failed.*discard/);
  assert.deepEqual(
    { ...r, results: undefined, messages: undefined },
    {
      results: undefined,
      messages: undefined,
      use1: 'RESQ_BAD_PARAM',
      later1: 'RESQ_BAD_PARAM',
      bad: 'RESQ_BAD_PARAM',
      later2: 'RESQ_BAD_PARAM',
      use2: 'RESQ_BAD_PARAM',
      piped: 'RESQ_BAD_PARAM',
      use3: 'RESQ_BAD_PARAM',
      aborted: 'network lost',
      use4: 'RESQ_BAD_PARAM',
      rows: [[8, 9]],
    },
  );
});

test('temp space: spilled files are gone after use, discard (also after a failed append) and close, and a file left in the stage directory is removed when the database is next opened', {
  opfs: true,
}, async (t) => {
  const name = dbName(t);
  const r = await inPage(
    h.page,
    async ({ open }, name) => {
      const root = await navigator.storage.getDirectory();
      const stageDir = async () => {
        const top = await root.getDirectoryHandle('.resq-wasm-stage', { create: true });
        try {
          const d = await top.getDirectoryHandle(`opfs-${encodeURIComponent(name)}`);
          const names = [];
          for await (const [n] of d.entries()) names.push(n);
          return names;
        } catch {
          return null;
        }
      };
      let db = await open(name);
      await db.execute('CREATE TABLE rec(data BLOB)');
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array(5 << 20));
      const whileStaged = await stageDir();
      await db.execute('INSERT INTO rec VALUES (?)', [staged]);
      const afterUse = await stageDir();
      const broken = await db.stageBlob();
      await broken.append(new Uint8Array(5 << 20));
      await broken.append('not bytes').catch(() => {});
      await broken.discard();
      const afterFailedDiscard = await stageDir();
      const pending = await db.stageBlob();
      await pending.append(new Uint8Array(5 << 20));
      await db.close();
      const afterClose = await stageDir();
      // A crash leaves a file behind: make one as a dead worker would have
      // (crash.test.mjs kills a browser that has one).
      const top = await root.getDirectoryHandle('.resq-wasm-stage', { create: true });
      const d = await top.getDirectoryHandle(`opfs-${encodeURIComponent(name)}`, { create: true });
      await d.getFileHandle('7.bin', { create: true });
      const beforeOpen = await stageDir();
      db = await open(name);
      const afterOpen = await stageDir();
      const [{ n }] = await db.query('SELECT length(data) AS n FROM rec');
      await db.close();
      return { whileStaged, afterUse, afterFailedDiscard, afterClose, beforeOpen, afterOpen, n };
    },
    name,
  );
  assert.deepEqual(r.whileStaged, ['1.bin']);
  assert.deepEqual(r.afterUse, []);
  assert.deepEqual(r.afterFailedDiscard, []);
  assert.ok(r.afterClose === null || r.afterClose.length === 0, JSON.stringify(r.afterClose));
  assert.deepEqual(r.beforeOpen, ['7.bin']);
  assert.ok(r.afterOpen === null || r.afterOpen.length === 0, JSON.stringify(r.afterOpen));
  assert.equal(r.n, 5 << 20);
});

test("temp space no live worker holds is removed at any open; a live worker's is kept, and two tabs with a memory database of one name stage apart", {
  opfs: true,
}, async (t) => {
  const name = dbName(t);
  const list = async () =>
    inPage(h.page, async () => {
      const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm-stage', { create: true });
      const out = {};
      for await (const [dir, handle] of top.entries()) {
        out[dir] = [];
        for await (const [file] of handle.entries()) out[dir].push(file);
      }
      return out;
    });
  // In a tab: open a memory database `name`, stage 5 MB of `fill` (it spills), keep both.
  const stageIn = (page, fill) =>
    inPage(
      page,
      async ({ open }, [name, fill]) => {
        window.__db = await open(name, { storage: 'memory' });
        await window.__db.execute('CREATE TABLE rec(data BLOB)');
        window.__staged = await window.__db.stageBlob();
        await window.__staged.append(new Uint8Array(5 << 20).fill(fill));
      },
      [name, fill],
    );
  const storeIn = (page) =>
    inPage(page, async () => {
      await window.__db.execute('INSERT INTO rec VALUES (?)', [window.__staged]);
      const [row] = await window.__db.query('SELECT length(data) AS n, hex(substr(data, -1)) AS last FROM rec');
      await window.__db.close();
      return row;
    });
  // What crashed sessions left: a memory database's and another OPFS database's.
  await inPage(
    h.page,
    async (_, gone) => {
      const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm-stage', { create: true });
      for (const dir of ['memory-crashed', `opfs-${encodeURIComponent(gone)}`]) {
        await (await top.getDirectoryHandle(dir, { create: true })).getFileHandle('3.bin', { create: true });
      }
    },
    `${name}-gone`,
  );
  const mine = (o) => Object.keys(o).filter((d) => d.startsWith('memory-') || d.endsWith('-gone'));
  await stageIn(h.page, 1);
  const afterFirst = await list();
  const tab2 = await h.context.newPage();
  await tab2.goto(h.page.url());
  await stageIn(tab2, 2);
  const afterSecond = await list();
  const rows = [await storeIn(h.page), await storeIn(tab2)];
  await tab2.close();
  const end = await list();

  // The first open removed both orphans; the first tab stages in a directory of its own.
  assert.equal(mine(afterFirst).length, 1, JSON.stringify(afterFirst));
  const [first] = mine(afterFirst);
  assert.match(first, /^memory-[0-9a-f-]{36}$/);
  assert.deepEqual(afterFirst[first], ['1.bin']);
  // The second tab's open kept the live first directory and staged in another.
  assert.equal(mine(afterSecond).length, 2, JSON.stringify(afterSecond));
  assert.deepEqual(afterSecond[first], ['1.bin']);
  assert.deepEqual(rows, [
    { n: 5 << 20, last: '01' },
    { n: 5 << 20, last: '02' },
  ]);
  assert.deepEqual(mine(end), []);
});

test('the worker dying while staging leaves the database untouched and its temp space is reclaimed at the next open', {
  opfs: true,
}, async (t) => {
  const name = dbName(t);
  const page = await h.newPage();
  await keepWorkers(page);
  const r = await inPage(
    page,
    async ({ open, outcome }, name) => {
      const stageFiles = async () => {
        const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm-stage', { create: true });
        try {
          const names = [];
          for await (const [n] of (await top.getDirectoryHandle(`opfs-${encodeURIComponent(name)}`)).entries()) names.push(n);
          return names;
        } catch {
          return [];
        }
      };
      let db = await open(name);
      await db.execute("CREATE TABLE rec(id INTEGER PRIMARY KEY, data BLOB); INSERT INTO rec(data) VALUES (x'2a')");
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array(6 << 20));
      const during = await stageFiles();
      // Stopped from outside, as a browser under memory pressure does.
      window.workers.at(-1).terminate();
      const died = await outcome(db.query('SELECT 1'));
      const append = await outcome(staged.append(new Uint8Array(1)));
      await db.close();
      db = await open(name);
      const after = await stageFiles();
      const rows = await db.query('SELECT id, hex(data) AS h FROM rec');
      const check = await db.query('PRAGMA integrity_check');
      await db.close();
      return { during, died: died.error?.code, append: append.error?.code, after, rows, check };
    },
    name,
  );
  assert.deepEqual(r.during, ['1.bin']);
  assert.equal(r.died, 'RESQ_WORKER_DIED');
  assert.equal(r.append, 'RESQ_WORKER_DIED');
  assert.deepEqual(r.after, []);
  assert.deepEqual(r.rows, [{ id: 1, h: '2A' }]);
  assert.deepEqual(r.check, [{ integrity_check: 'ok' }]);
});
