// Long reads on snapshots: a `blobStream` of committed data reads on a
// reader connection of its own, which keeps its snapshot and its place in
// the value from the first chunk to the last. Calls in between (the same
// session's, another session's, writes that commit) neither move it back
// to the start of the value's overflow chain nor change what it delivers,
// and its chunks answer while another session's write holds the writer.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

// Every test here opens a stored database (OPFS, or IndexedDB where there
// is none): a memory database has no WAL, so no readers, and its streams
// read on its one connection. One looks at OPFS's files (see engines.mjs).

let h;
before(async () => {
  // The probe worker counts the bytes read from OPFS (the package has no such hook).
  h = await start({ probe: {} });
});
after(async () => {
  await h?.close();
});

test('a 64 MB blobStream interleaved with 256 other calls delivers its exact bytes, reading the value about once', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, probe, mediaFile, sha }, { name }) => {
      const MB = 1 << 20;
      const db = await open(name);
      const other = await open(name);
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      await db.execute('CREATE TABLE log(id INTEGER PRIMARY KEY, at INTEGER)');
      const video = mediaFile(64 * MB, 3);
      const { lastInsertRowid: id } = await db.execute("INSERT INTO media(name, data) VALUES ('video', ?)", [video]);
      await db.execute("INSERT INTO media(name, data) VALUES ('thumb', ?)", [mediaFile(16 << 10, 5)]);
      const want = await sha(video);
      // The INSERT's checkpoint, which reads the WAL, is copied first.
      for (let last = -1, now = 0, quiet = 0; quiet < 3; last = now) {
        await new Promise((r) => setTimeout(r, 200));
        now = await probe(name, 'written');
        quiet = now === last ? quiet + 1 : 0;
      }
      const readBefore = await probe(name, 'read');
      const chunks = [];
      let calls = 0;
      // One chunk, then other calls: the same session's and another's,
      // reads and writes that commit.
      for await (const chunk of db.blobStream('media', 'data', id, { chunkSize: MB / 4 })) {
        chunks.push(chunk);
        if (calls % 3 === 0) await db.query("SELECT id FROM media WHERE name = 'thumb'");
        if (calls % 3 === 1) await other.readBlob('media', 'data', 2, { offset: 0, length: 4096 });
        if (calls % 3 === 2) await other.execute('INSERT INTO log(at) VALUES (?)', [calls]);
        calls += 1;
      }
      const read = (await probe(name, 'read')) - readBefore;
      const got = await sha(new Blob(chunks));
      await other.close();
      await db.close();
      return { calls, same: got === want, read, size: 64 * MB };
    },
    { name: dbName(t) },
  );
  assert.ok(got.calls >= 256, `${got.calls} calls between the chunks`);
  assert.ok(got.same, 'the stream delivered the exact bytes');
  // Walking the overflow chain from its start at every chunk reads more of
  // it each time (2.3 times the value when 67 of the 256 chunks had a call
  // between them, on the code before snapshots); reading on in place, once.
  assert.ok(got.read < 1.5 * got.size, `${got.read} bytes read from OPFS for a ${got.size}-byte value`);
  t.diagnostic(`${got.read} bytes read from OPFS while streaming ${got.size} bytes`);
});

test('a blobStream delivers the value it began on, whole, though another session replaces it midway', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, mediaFile, sha }, { name }) => {
      const MB = 1 << 20;
      const db = await open(name);
      const other = await open(name);
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
      const first = mediaFile(8 * MB, 1);
      await db.execute('INSERT INTO media(id, data) VALUES (1, ?)', [first]);
      const chunks = [];
      let replaced = null;
      for await (const chunk of db.blobStream('media', 'data', 1, { chunkSize: MB })) {
        chunks.push(chunk);
        if (chunks.length === 2) {
          replaced = await other.execute('UPDATE media SET data = ? WHERE id = 1', [mediaFile(8 * MB, 2)]);
        }
      }
      const now = await db.readBlob('media', 'data', 1, { offset: 0, length: 4 });
      const second = mediaFile(8 * MB, 2);
      const result = {
        changes: replaced.changes,
        first: (await sha(new Blob(chunks))) === (await sha(first)),
        now: Array.from(now),
        second: Array.from(new Uint8Array(await second.slice(0, 4).arrayBuffer())),
      };
      await other.close();
      await db.close();
      return result;
    },
    { name: dbName(t) },
  );
  assert.equal(got.changes, 1);
  assert.ok(got.first, 'the stream delivered the old value, whole');
  assert.deepEqual(got.now, got.second, 'a read after the stream sees the new value');
});

test("a blobStream's chunks answer while another session's streamed 64 MB INSERT runs", async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, mediaFile, sha }, { name }) => {
      const MB = 1 << 20;
      const writer = await open(name);
      const player = await open(name);
      await writer.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
      // Two chunks, not four: on a loaded machine the four chunks of a
      // 4 MB clip were seen to end after the 64 MB INSERT (WebKitGTK, and
      // Chromium with IndexedDB forced). Fewer make the race wider.
      const clip = mediaFile(2 * MB, 9);
      await writer.execute('INSERT INTO media(id, data) VALUES (1, ?)', [clip]);
      const order = [];
      const file = new File([new Uint8Array(64 * MB).fill(7)], 'big.bin');
      const insert = writer.execute('INSERT INTO media(id, data) VALUES (2, ?)', [file]).then(() => order.push('insert'));
      const chunks = [];
      for await (const chunk of player.blobStream('media', 'data', 1, { chunkSize: MB })) chunks.push(chunk);
      order.push('stream');
      await insert;
      const same = (await sha(new Blob(chunks))) === (await sha(clip));
      await player.close();
      await writer.close();
      return { order, same };
    },
    { name: dbName(t) },
  );
  assert.deepEqual(got.order, ['stream', 'insert'], 'the whole stream was read while the INSERT ran');
  assert.ok(got.same);
});

test('an export while a blobStream is open: both complete, and the stream goes on with its value', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, mediaFile, sha }, { name }) => {
      const MB = 1 << 20;
      const db = await open(name);
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
      const clip = mediaFile(4 * MB, 4);
      await db.execute('INSERT INTO media(id, data) VALUES (1, ?)', [clip]);
      // Frames in the WAL, so the export has something to copy back first.
      await db.execute('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
      const chunks = [];
      let exported = 0;
      for await (const chunk of db.blobStream('media', 'data', 1, { chunkSize: MB })) {
        chunks.push(chunk);
        if (chunks.length === 1) exported = (await new Response(db.export()).arrayBuffer()).byteLength;
      }
      const same = (await sha(new Blob(chunks))) === (await sha(clip));
      await db.close();
      return { exported, same };
    },
    { name: dbName(t) },
  );
  assert.ok(got.exported > 4 << 20, `the export is ${got.exported} bytes`);
  assert.ok(got.same, 'the stream delivered its value whole');
});

test("readBlobs near the end of a 64 MB value, between another session's calls, read the value about once", async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, probe, mediaFile }, { name }) => {
      const MB = 1 << 20;
      const player = await open(name);
      const gallery = await open(name);
      await player.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      const video = mediaFile(64 * MB, 6);
      const { lastInsertRowid: id } = await player.execute("INSERT INTO media(name, data) VALUES ('video', ?)", [video]);
      await player.execute("INSERT INTO media(name, data) VALUES ('thumb', ?)", [mediaFile(16 << 10, 8)]);
      const readBefore = await probe(name, 'read');
      // A player's seeks, the last megabytes first (where an MP4 may keep
      // its index), with the gallery's calls and the player's own between.
      const offsets = Array.from({ length: 24 }, (_, i) => (i % 2 ? 40 * MB + i * 999_331 : 63 * MB - i * 12_345));
      let exact = 0;
      for (const offset of offsets) {
        const bytes = await player.readBlob('media', 'data', id, { offset, length: 65536 });
        const want = new Uint8Array(await video.slice(offset, offset + 65536).arrayBuffer());
        if (bytes.length === want.length && bytes.every((b, i) => b === want[i])) exact += 1;
        await gallery.readBlob('media', 'data', 2, { offset: 0, length: 4096 });
        await gallery.query('SELECT id, name FROM media');
        await player.query('SELECT count(*) AS n FROM media');
      }
      const read = (await probe(name, 'read')) - readBefore;
      await gallery.close();
      await player.close();
      return { seeks: offsets.length, exact, read, size: 64 * MB };
    },
    { name: dbName(t) },
  );
  assert.equal(got.exact, got.seeks, 'each seek returned the exact bytes');
  // The first seek walks the value's overflow chain from its start; on a
  // snapshot kept for the value, the next ones go on from its kept handle.
  // Without it, each walks again (about 1.2 GB read here).
  assert.ok(got.read < 1.5 * got.size, `${got.read} bytes read from OPFS for ${got.seeks} seeks into a ${got.size}-byte value`);
  t.diagnostic(`${got.read} bytes read from OPFS for ${got.seeks} seeks`);
});

test('a readBlob far into a value sees the last commit: after a commit, beside an open transaction, and in its own', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, mediaFile }, { name }) => {
      const MB = 1 << 20;
      const at = 6 * MB;
      const head = async (file) => Array.from(new Uint8Array(await file.slice(at, at + 8).arrayBuffer())).join();
      const seek = async (db) => Array.from(await db.readBlob('media', 'data', 1, { offset: at, length: 8 })).join();
      const player = await open(name);
      const editor = await open(name, { transactionTimeout: 5000 });
      await editor.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
      const v = [1, 2, 3, 4].map((seed) => mediaFile(8 * MB, seed));
      await editor.execute('INSERT INTO media(id, data) VALUES (1, ?)', [v[0]]);
      const want = await Promise.all(v.map(head));
      const seen = [await seek(player)];
      await editor.execute('UPDATE media SET data = ? WHERE id = 1', [v[1]]);
      seen.push(await seek(player));
      let during;
      await editor.transaction(async (tx) => {
        await tx.execute('UPDATE media SET data = ? WHERE id = 1', [v[2]]);
        during = await seek(player);
      });
      seen.push(during, await seek(player));
      await player.transaction(async (tx) => {
        await tx.execute('UPDATE media SET data = ? WHERE id = 1', [v[3]]);
        seen.push(await seek(tx));
      });
      seen.push(await seek(editor));
      await editor.close();
      await player.close();
      return { want, seen };
    },
    { name: dbName(t) },
  );
  const [v1, v2, v3, v4] = got.want;
  assert.deepEqual(got.seen, [v1, v2, v2, v3, v4, v4]);
});

test("a paused blobStream's snapshot is let go once 128 MiB of WAL are behind it, and the stream still ends whole", {
  opfs: true,
}, async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, probe, mediaFile, sha }, { name }) => {
      const MB = 1 << 20;
      const db = await open(name);
      const other = await open(name);
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
      await db.execute('CREATE TABLE more(id INTEGER PRIMARY KEY, data BLOB)');
      const video = mediaFile(8 * MB, 1);
      await db.execute('INSERT INTO media(id, data) VALUES (1, ?)', [video]);
      await db.query('PRAGMA wal_checkpoint(TRUNCATE)');
      // A player that read its first chunk and paused.
      const reader = db.blobStream('media', 'data', 1, { chunkSize: MB }).getReader();
      const chunks = [(await reader.read()).value];
      // Meanwhile another session stores 160 MiB. Its WAL cannot be
      // copied past the stream's snapshot, until that is let go.
      const w0 = await probe(name, 'written');
      let values = 0;
      for (let i = 0; i < 40; i++) {
        await other.execute('INSERT INTO more(data) VALUES (?)', [new Uint8Array(4 * MB).fill(i)]);
        values += 4 * MB;
      }
      const written = (await probe(name, 'written')) - w0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
      }
      const same = (await sha(new Blob(chunks))) === (await sha(video));
      const [{ n }] = await db.query('SELECT count(*) AS n FROM more');
      await other.close();
      await db.close();
      return { copied: written - values, same, n };
    },
    { name: dbName(t) },
  );
  t.diagnostic(`${(got.copied / 2 ** 20).toFixed(1)} MiB copied into the file while the stream was paused`);
  // Let go at 128 MiB, the WAL is copied while the stream waits; held to
  // its end, nothing of it could be.
  assert.ok(got.copied >= 64 * 2 ** 20, `${(got.copied / 2 ** 20).toFixed(1)} MiB copied while the stream was paused`);
  assert.ok(got.same, 'the stream delivered its value whole, from the writer after the let-go');
  assert.equal(got.n, 40);
});
