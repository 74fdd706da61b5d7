// Power-loss simulation, SQLite's crash-test method on this package's
// storage layer. The probe worker records every write, truncate and flush
// that reaches an OPFS sync access handle while a workload of transactions
// runs (marking each one the page saw acknowledged); tests/powerloss/images.py
// then builds the files a power loss at a random point could leave — all
// writes up to each file's last flush, a random subset of the later ones,
// some torn at a sector boundary — and opens each with SQLite: integrity
// ok, every acknowledged transaction there with its bytes' hashes right, no
// partial transaction. `RESQ_POWERLOSS_IMAGES` sets the count (npm test: a
// reduced run; npm run stress: thousands); `RESQ_POWERLOSS_PAGE_SIZES` the
// page sizes, each its own database and record (npm test: the default,
// 8192; npm run stress: 4096, 8192 and 65536). At 8192 it runs on an
// encrypted database (`open(name, { key })`) too, whose images are checked
// with SQLite3 Multiple Ciphers (tests/powerloss/sqlite3mc.sh) under the
// key: encrypted databases have 8192-byte pages.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests();

const IMAGES = Number(process.env.RESQ_POWERLOSS_IMAGES ?? 200);
const PAGE_SIZES = (process.env.RESQ_POWERLOSS_PAGE_SIZES ?? '8192').split(',').map(Number);
const checker = resolve(import.meta.dirname, '../powerloss/images.py');

let h;
before(async () => {
  h = await start({ probe: { record: true } });
});
after(async () => {
  await h?.close();
});

/** Runs the workload in the page; returns the record and each transaction's row count. */
async function record(name, seed, pageSize, key) {
  return inPage(
    h.page,
    async ({ open, probe }, { name, seed, pageSize, key }) => {
      let x = seed;
      const rand = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
      const hex = async (b) =>
        Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b)), (v) => v.toString(16).padStart(2, '0')).join('');
      const bytes = (n) => Uint8Array.from({ length: n }, () => (rand() * 256) | 0);
      const db = await open(name, key ? { key } : {});
      await db.execute(`PRAGMA page_size = ${pageSize}`);
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, tx INTEGER, k INTEGER, sum TEXT, data BLOB)');
      await probe(name, 'mark', 0);
      const txs = {};
      for (let tx = 1; tx <= 40; tx++) {
        const rows = 1 + ((rand() * 3) | 0);
        const values = [];
        for (let k = 0; k < rows; k++) {
          // 1 KB to 64 KB, log-uniform: small rows, overflow chains, some spanning pages.
          const data = bytes(Math.round(1024 * 64 ** rand()));
          values.push([tx, k, await hex(data), data]);
        }
        const insert = 'INSERT INTO t(tx, k, sum, data) VALUES (?, ?, ?, ?)';
        if (tx === 25) {
          // A File above the stream limit: placeholder, resize, chunked
          // writes. 9 MB of new pages, past the file's end, is more than a
          // checkpoint waits for (8 MiB: src/worker/journal.rs), so the
          // call that stores it is followed by a copy in slices.
          const data = bytes(9 << 20);
          await db.execute(insert, [tx, 0, await hex(data), new File([data], 'clip.bin')]);
          txs[tx] = 1;
          await probe(name, 'mark', tx);
          continue;
        }
        if (rows === 1) await db.execute(insert, values[0]);
        else if (tx % 2) await db.executeBatch(insert, values);
        else
          await db.transaction(async (t) => {
            for (const v of values) await t.execute(insert, v);
          });
        // An export midway checkpoints the WAL into the database file and
        // empties it, so the workload's later commits write the WAL over
        // from its start.
        if (tx === 30) await new Response(db.export()).arrayBuffer();
        // A pause midway: the worker's idle checkpoint copies the WAL into
        // the database file in slices (src/worker/backfill.rs), and the
        // next commit writes the WAL over from its start.
        if (tx === 20) await new Promise((r) => setTimeout(r, 1000));
        // Deletes and updates too, so pages are freed and reused.
        if (tx % 7 === 0) await db.execute('UPDATE t SET data = data WHERE tx = ?', [tx - 3]);
        txs[tx] = rows;
        await probe(name, 'mark', tx);
      }
      const log = await probe(name, 'log');
      await db.close();
      const b64 = (u8) => {
        let s = '';
        for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
        return btoa(s);
      };
      return { txs, log: log.map((e) => (e[0] === 'w' ? [e[0], e[1], e[2], b64(e[3])] : e)) };
    },
    { name, seed, pageSize, key },
  );
}

/** The native SQLite3MC the encrypted images are checked with (built once). */
let cipherLibrary;
const sqlite3mc = () =>
  (cipherLibrary ??= (() => {
    const r = spawnSync('bash', [resolve(import.meta.dirname, '../powerloss/sqlite3mc.sh')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
  })());

function images(rec, db, key, extra = []) {
  const dir = mkdtempSync(join(tmpdir(), 'resq-powerloss-'));
  try {
    const file = join(dir, 'log.json');
    writeFileSync(file, JSON.stringify(rec));
    const keyed = key ? ['--key', key] : [];
    const env = key ? { ...process.env, LD_PRELOAD: sqlite3mc() } : process.env;
    const r = spawnSync('python3', [checker, file, '--db', db, '--images', String(IMAGES), '--seed', '7', ...keyed, ...extra], {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
      env,
    });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Encrypted, at 8192 only: an encrypted database's pages are 8192 bytes
// (cipher.rs, MIN_PAGE; its page_size is fixed at open).
for (const [pageSize, key] of PAGE_SIZES.flatMap((p) => [[p, null], ...(p === 8192 ? [[p, 'power loss key']] : [])])) {
  const what = key ? ', encrypted' : '';
  test(`power loss at ${IMAGES} random points of a recorded workload, ${pageSize}-byte pages${what}: every acknowledged transaction survives whole, none is partial, integrity ok`, async (t) => {
    const name = `powerloss-${pageSize}${key ? '-encrypted' : ''}.db`;
    const rec = await record(name, 12345, pageSize, key);
    const r = images(rec, name, key);
    t.diagnostic(
      `page size ${pageSize}${what}: images ${r.images}, log entries ${r.entries}, failures ${r.failures}, commits ${r.commits}, flushes per commit: median ${r.flushesPerCommit}, range ${r.flushesPerCommitRange}`,
    );
    assert.equal(r.images, IMAGES);
    assert.equal(r.failures, 0, JSON.stringify(r.first));
    assert.ok(r.commits >= 39 && r.flushesPerCommit >= 1, JSON.stringify(r));

    // The check bites: the same record with every flush after the schema
    // ignored (a storage layer that stops flushing) loses acknowledged
    // transactions.
    const broken = images(rec, name, key, ['--ignore-flushes']);
    t.diagnostic(
      `page size ${pageSize}${what}, with flushes ignored: ${broken.failures} of ${broken.images} images fail, e.g. ${broken.first[0]?.why}`,
    );
    assert.ok(broken.failures > 0, 'ignoring flushes must lose acknowledged transactions');

    // Under WAL each of the two flushes matters on its own: the -wal
    // file's (a commit's), and the database file's (a checkpoint's, before
    // the WAL is written over from its start again).
    for (const file of ['wal', 'db']) {
      const without = images(rec, name, key, ['--ignore-flushes-of', file]);
      t.diagnostic(
        `page size ${pageSize}${what}, with the ${file === 'wal' ? '-wal file' : 'database file'}'s flushes ignored: ${without.failures} of ${without.images} images fail, e.g. ${String(without.first[0]?.why).slice(0, 120)}`,
      );
      assert.ok(without.failures > 0, `ignoring the ${file} file's flushes must lose acknowledged transactions`);
    }
  });
}
