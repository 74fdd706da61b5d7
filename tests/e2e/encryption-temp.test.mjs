// An encrypted database's temp space and its backups: a staged value that
// spills to OPFS is sealed there (read mid-stage, beside the worker's
// access handle, it holds none of the plaintext, where a plain database's
// temp file does), and comes back exact; an export imports into another
// encrypted database with its key, and a file of the wrong kind or key is
// RESQ_BAD_KEY and changes nothing.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { MARKER, rawScan } from './plaintext.mjs';

// OPFS for every test here unless it says `opfs: false` (see engines.mjs).
const test = opfsTests({ key: 'a passphrase' });

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

/**
 * Runs in the page: stages 9 MB in chunks of odd sizes (so the sealed
 * blocks' edges fall inside chunks), the marker in three places, then
 * scans the stage directory, inserts the value and reads it back.
 */
const stageTrial = async ({ open }, { name, options, marker, scan }) => {
  const rawScan = (0, eval)(`(${scan})`);
  const size = 9 << 20;
  const value = new Uint8Array(size);
  for (let i = 0; i < size; i++) value[i] = (i * 7 + (i >> 13)) & 0xff;
  const needle = new TextEncoder().encode(marker);
  const places = [100, (4 << 20) + 65530, size - needle.length];
  for (const at of places) value.set(needle, at);
  const db = await open(name, options);
  await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
  const staged = await db.stageBlob();
  for (let at = 0, n = 1_000_003; at < size; at += n) await staged.append(value.slice(at, at + n));
  const mid = await rawScan(['.resq-wasm-stage'], marker);
  await db.execute('INSERT INTO m(id, data) VALUES (1, ?)', [staged]);
  const back = await db.readBlob('m', 'data', 1);
  let same = back.length === size;
  for (let i = 0; same && i < size; i++) same = back[i] === value[i];
  const ranged = new TextDecoder().decode(await db.readBlob('m', 'data', 1, { offset: places[1], length: needle.length }));
  await db.close();
  return { mid, same, ranged };
};

test('a staged value of an encrypted database spills sealed: no plaintext in its temp file, and it comes back exact', async (t) => {
  const arg = { marker: MARKER, scan: rawScan.toString() };
  const enc = await inPage(h.page, stageTrial, { ...arg, name: dbName(t), options: { key: 'temp space key' } });
  const plain = await inPage(h.page, stageTrial, { ...arg, name: dbName(t, 'plain.db'), options: {} });
  assert.ok(enc.mid.bytes > 4 << 20, `the staged bytes spilled to OPFS (${enc.mid.bytes} bytes there)`);
  assert.equal(enc.mid.hits, 0, "no plaintext marker in the encrypted database's temp file");
  assert.ok(enc.same, 'the staged value is stored exactly');
  assert.equal(enc.ranged, MARKER);
  // The control: the scan sees a plain database's temp file, marker and all.
  assert.ok(plain.mid.hits >= 2, `the plain temp file holds the markers it spilled (${plain.mid.hits})`);
  assert.ok(plain.same);
});

test("an encrypted export imports with its key into another encrypted database, under that one's key", { opfs: false }, async (t) => {
  const from = dbName(t, 'from.db');
  const into = dbName(t, 'into.db');
  const other = dbName(t, 'other.db');
  const got = await inPage(
    h.page,
    async ({ open, outcome, importDatabase }, { from, into, other, plainName, marker, scan }) => {
      const rawScan = (0, eval)(`(${scan})`);
      const code = (o) => (o.ok ? 'ok' : o.error.code);
      const rows = async (name, options) => {
        const db = await open(name, options);
        try {
          return (await db.query('SELECT id, s, length(b) AS n FROM t ORDER BY id')).map((r) => `${r.id}:${r.s}:${r.n}`);
        } finally {
          await db.close();
        }
      };
      let db = await open(from, { key: 'source key' });
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT, b BLOB)');
      await db.execute('INSERT INTO t VALUES (1, ?, ?)', [`${marker} one`, new Uint8Array(6 << 20).fill(3)]);
      const exported = new Blob([await new Response(db.export()).arrayBuffer()]);
      await db.close();
      const out = { source: await rows(from, { key: 'source key' }) };
      // Into a new database by name: opened with the key, then replaced.
      await importDatabase(into, exported, { key: 'source key' });
      out.byName = await rows(into, { key: 'source key' });
      // Into an open database of another key: the file is read with its
      // key, and stored under the database's own.
      db = await open(other, { key: 'other key' });
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT, b BLOB)');
      await db.execute("INSERT INTO t VALUES (9, 'kept', NULL)");
      out.wrongKey = code(await outcome(importDatabase(db, exported, { key: 'not it' })));
      out.noKeyOwnKey = code(await outcome(importDatabase(db, exported)));
      out.afterRefusals = (await db.query('SELECT s FROM t')).map((r) => r.s);
      await importDatabase(db, exported, { key: 'source key' });
      await db.close();
      out.underOwnKey = await rows(other, { key: 'other key' });
      out.sourceKeyThere = code(await outcome(rows(other, { key: 'source key' })));
      out.hits = (await rawScan(into, marker)).hits + (await rawScan(other, marker)).hits;
      // Files of the other kind.
      const plainDb = await open(plainName, {});
      await plainDb.execute('CREATE TABLE p(x)');
      await plainDb.execute("INSERT INTO p VALUES ('plain')");
      const plainFile = new Blob([await new Response(plainDb.export()).arrayBuffer()]);
      out.encryptedIntoPlain = code(await outcome(importDatabase(plainDb, exported, { key: 'source key' })));
      out.plainKept = (await plainDb.query('SELECT x FROM p')).map((r) => r.x);
      await plainDb.close();
      db = await open(other, { key: 'other key' });
      out.plainIntoEncrypted = code(await outcome(importDatabase(db, plainFile)));
      out.encryptedKept = (await db.query('SELECT count(*) AS n FROM t'))[0].n;
      await db.close();
      return out;
    },
    { from, into, other, plainName: dbName(t, 'plain.db'), marker: MARKER, scan: rawScan.toString() },
  );
  const expected = [`1:${MARKER} one:${6 << 20}`];
  assert.deepEqual(got.source, expected);
  assert.deepEqual(got.byName, expected, 'imported by name with its key');
  assert.equal(got.wrongKey, 'RESQ_BAD_KEY', 'a wrong key for the file');
  assert.equal(got.noKeyOwnKey, 'RESQ_BAD_KEY', "without a key the database's own is tried, and it is not the file's");
  assert.deepEqual(got.afterRefusals, ['kept'], 'the refusals changed nothing');
  assert.deepEqual(got.underOwnKey, expected, "imported into a database of another key, it opens with that database's key");
  assert.equal(got.sourceKeyThere, 'RESQ_BAD_KEY', "and not with the file's");
  assert.equal(got.hits, 0, 'no plaintext in either database after the imports');
  assert.equal(got.encryptedIntoPlain, 'RESQ_BAD_KEY', 'an encrypted file into a plain database');
  assert.deepEqual(got.plainKept, ['plain']);
  assert.equal(got.plainIntoEncrypted, 'RESQ_BAD_KEY', 'a plain file into an encrypted database');
  assert.equal(got.encryptedKept, 1);
});
