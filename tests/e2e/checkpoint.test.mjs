// Checkpoints in slices: a large commit's WAL is copied into the database
// file a few megabytes at a time, with other calls answered between the
// slices, and the file it leaves holds every commit (the WAL's copy is
// checked by reopening: SQLite's own checkpoint at close has nothing left
// to copy, so a page copied wrong would show).

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

// A memory database has no WAL (see engines.mjs).
const test = opfsTests();

let h;
before(async () => {
  // The probe worker counts the bytes written to OPFS.
  h = await start({ probe: {} });
});
after(async () => {
  await h?.close();
});

for (const encrypted of [false, true]) {
  const kind = encrypted ? 'an encrypted database' : 'a plain database';
  test(`${kind}: a 64 MB commit's WAL is copied in slices, a call answers before the copy ends, and the file holds it after`, async (t) => {
    const got = await inPage(
      h.page,
      async ({ open, probe, mediaFile, sha }, { name, encrypted }) => {
        const MB = 1 << 20;
        const options = encrypted ? { key: 'checkpoint test key' } : {};
        const db = await open(name, options);
        const other = await open(name, options);
        await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
        const video = mediaFile(64 * MB, 4);
        await db.execute('INSERT INTO media(id, data) VALUES (1, ?)', [video]);
        const atReply = await probe(name, 'written');
        // Another session's call, made at once: it answers between slices.
        const rows = await other.query('SELECT count(*) AS n FROM media');
        const atCall = await probe(name, 'written');
        // Then the copy goes on to its end: written bytes stop growing.
        let last = atCall;
        for (let quiet = 0, i = 0; quiet < 3 && i < 300; i++) {
          await new Promise((r) => setTimeout(r, 200));
          const now = await probe(name, 'written');
          quiet = now === last ? quiet + 1 : 0;
          last = now;
        }
        await other.close();
        await db.close();
        const again = await open(name, options);
        const check = await again.query('PRAGMA integrity_check');
        const chunks = [];
        for await (const chunk of again.blobStream('media', 'data', 1, { chunkSize: 4 * MB })) chunks.push(chunk);
        const same = (await sha(new Blob(chunks))) === (await sha(video));
        await again.close();
        return { n: rows[0].n, beforeCall: atCall - atReply, copy: last - atReply, check: check[0].integrity_check, same };
      },
      { name: dbName(t), encrypted },
    );
    assert.equal(got.n, 1);
    // The copy writes the value into the file: 64 MB, less the first slice,
    // which runs right after the reply (before the probe is answered). A
    // checkpoint in one piece after the reply wrote all of it before the
    // next call ran.
    assert.ok(got.copy >= 60 << 20, `the copy wrote ${got.copy} bytes`);
    assert.ok(got.beforeCall < got.copy / 2, `${got.beforeCall} of the copy's ${got.copy} bytes were written before the call answered`);
    t.diagnostic(`${got.beforeCall} of ${got.copy} bytes copied before the call answered`);
    assert.equal(got.check, 'ok');
    assert.ok(got.same, 'the value read back after reopening is the one stored');
  });
}

test('back-to-back commits of 8 MiB of new pages: each waits for the copy before it, and every commit is there after', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, sha }, { name }) => {
      const MB = 1 << 20;
      const db = await open(name);
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
      // Made all at once, so the worker runs them one after the other: the
      // commits that leave 8 MiB of new pages in the WAL are each followed
      // by a copy in slices, which the next waits for.
      const values = Array.from({ length: 12 }, (_, i) => new Uint8Array(3 * MB).fill(i + 1));
      const want = await Promise.all(values.map(sha));
      await Promise.all(values.map((v, i) => db.execute('INSERT INTO media(id, data) VALUES (?, ?)', [i + 1, v])));
      await db.close();
      const again = await open(name);
      const check = await again.query('PRAGMA integrity_check');
      const same = [];
      for (let i = 1; i <= 12; i++) same.push((await sha(new Blob([await again.readBlob('media', 'data', i)]))) === want[i - 1]);
      await again.close();
      return { check: check[0].integrity_check, same };
    },
    { name: dbName(t) },
  );
  assert.equal(got.check, 'ok');
  assert.deepEqual(got.same, Array(12).fill(true), 'each value read back is the one stored');
});

test('a value built by appends is copied into the file once per 64 MiB of WAL, not after each commit past 8 MiB of WAL', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, probe, sha }, { name }) => {
      const KB = 1024;
      const db = await open(name);
      await db.execute('CREATE TABLE a(id INTEGER PRIMARY KEY, data BLOB)');
      await db.execute("INSERT INTO a(id, data) VALUES (1, x'')");
      const w0 = await probe(name, 'written');
      // 40 appends of 192 KiB: a 7.5 MiB value, and 154 MiB of WAL. Each
      // commit writes the whole value into the WAL again, over one of the
      // same two sets of pages; a copy takes each page's last frame.
      const parts = Array.from({ length: 40 }, (_, i) => new Uint8Array(192 * KB).fill(i + 1));
      let wal = 0;
      for (const [i, part] of parts.entries()) {
        await db.execute('UPDATE a SET data = CAST(data || ? AS BLOB) WHERE id = 1', [part]);
        wal += (i + 1) * part.length;
      }
      const written = (await probe(name, 'written')) - w0;
      const same = (await sha(new Blob([await db.readBlob('a', 'data', 1)]))) === (await sha(new Blob(parts)));
      await db.close();
      return { written, wal, same };
    },
    { name: dbName(t) },
  );
  assert.ok(got.same, 'the value is the parts in order');
  // Beside the WAL's own writes (its frames' headers are 0.3% of them),
  // copies of both sets of pages: at 64 MiB of WAL, about twice (25 MiB;
  // an idle one between appends would add one more). A
  // checkpoint after each commit that left 8 MiB of WAL copied 106 MiB.
  const copied = got.written - got.wal;
  t.diagnostic(`${(got.written / 2 ** 20).toFixed(1)} MiB written for ${(got.wal / 2 ** 20).toFixed(1)} MiB of values`);
  assert.ok(copied < 48 * 2 ** 20, `${(copied / 2 ** 20).toFixed(1)} MiB written beside the values`);
});
