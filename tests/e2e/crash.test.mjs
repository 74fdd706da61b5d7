// No data loss across a crash: rows whose INSERT had resolved are there
// after the whole browser is killed with SIGKILL mid-work and started again
// on the same profile; a transaction that had not committed is not, even
// when its pages had already spilled into the database file.

import { after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { installPackedApp, installProbe, launch as launchBrowser } from './harness.mjs';
import { inPage } from './util.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests();

const { app } = installPackedApp();
// The probe worker (the package's worker, plus hooks): a kill lands at a
// chosen write of its (`freezeAfter`), not after a time.
installProbe(app, {});
const server = await serve(app);
const profile = mkdtempSync(join(tmpdir(), 'resq-crash-'));
after(() => {
  server.close();
  rmSync(profile, { recursive: true, force: true });
  rmSync(app, { recursive: true, force: true });
});

/**
 * The browser on this file's profile, with a page on the app. `kill()`
 * SIGKILLs every process of it: no shutdown, no flush.
 */
async function launch() {
  const browser = await launchBrowser(profile);
  const page = await browser.newPage();
  await page.goto(server.url);
  return { ...browser, page };
}

/**
 * The bytes of every file in database `name`'s OPFS pool (`.resq-wasm/<name>/`,
 * file names opaque): run in the page, so it needs its own copy of the walk.
 */
const poolBytes = async (name) => {
  let total = 0;
  const walk = async (dir) => {
    for await (const [, entry] of dir.entries()) {
      if (entry.kind === 'directory') await walk(entry);
      else total += (await entry.getFile()).size;
    }
  };
  await walk(await (await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm')).getDirectoryHandle(name));
  return total;
};

/**
 * The files in the stage directory of OPFS database `name`
 * (`.resq-wasm-stage/opfs-<name>/`) as `[file, size]`, or null when the
 * directory does not exist: run in the page.
 */
const stageFiles = async (name) => {
  let dir;
  try {
    const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm-stage');
    dir = await top.getDirectoryHandle(`opfs-${encodeURIComponent(name)}`);
  } catch (e) {
    if (e.name === 'NotFoundError') return null;
    throw e;
  }
  const files = [];
  for await (const [n, f] of dir.entries()) files.push([n, f.kind === 'file' ? (await f.getFile()).size : f.kind]);
  return files;
};

/**
 * Resolves once the probe worker of database `name` stands still at the
 * write its `freezeAfter` chose (tests/e2e/probe-worker.js): run in the page.
 */
const frozen = (name) =>
  new Promise((resolve) => {
    const channel = new BroadcastChannel('resq-wasm-probe');
    channel.onmessage = ({ data }) => {
      if (data.frozen !== name) return;
      channel.close();
      resolve();
    };
  });

// The build's page cache holds 16 MiB (SQLITE_DEFAULT_CACHE_SIZE=-16384, 8 KiB
// pages). An open transaction smaller than that lives in memory and a crash
// loses it whatever the journal does; 40 MB must spill into the database file,
// so only the rollback journal can take it out again after the kill.
const CACHE = 16 << 20;
const OPEN_MB = 40;
// The database importDatabase copies over another: more than the page cache.
const IMPORT_MB = 40;

test('committed rows survive a SIGKILL of the browser; an open transaction that spilled past the page cache into the file does not', async (t) => {
  const first = await launch();
  const before = await inPage(
    first.page,
    async ({ open }, [poolSrc, OPEN_MB]) => {
      const poolBytes = (0, eval)(`(${poolSrc})`);
      const db = await open('crash.db');
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)');
      const blob = new Uint8Array(300000).map((_, i) => i & 255);
      for (let i = 0; i < 20; i++) await db.execute('INSERT INTO t(data) VALUES (?)', [blob]);
      const [{ page_count: committedPages }] = await db.query('PRAGMA page_count');
      // The committed database in its file alone, the WAL emptied.
      await db.execute('PRAGMA wal_checkpoint(TRUNCATE)');
      const committedBytes = await poolBytes('crash.db');
      // Leave a transaction open with 40 MB of rows in it, and never commit.
      const mb = new Uint8Array(1 << 20).fill(0xee);
      return new Promise((resolve, reject) => {
        db.transaction(async (tx) => {
          for (let i = 0; i < OPEN_MB; i++) await tx.execute('INSERT INTO t(data) VALUES (?)', [mb]);
          const [{ page_count: openPages }] = await tx.query('PRAGMA page_count');
          resolve({ committedPages, committedBytes, openPages, openBytes: await poolBytes('crash.db') });
          await new Promise(() => {});
        }).catch(reject);
      });
    },
    [poolBytes.toString(), OPEN_MB],
  );
  first.kill();
  await first.close().catch(() => {});
  t.diagnostic(`before the kill: ${JSON.stringify(before)}`);
  // The open transaction's pages were in the file: it had grown by more than
  // the whole page cache could have held back.
  assert.ok(before.openPages >= before.committedPages + (OPEN_MB << 20) / 8192, JSON.stringify(before));
  assert.ok(
    before.openBytes - before.committedBytes > CACHE,
    `the pool grew by ${before.openBytes - before.committedBytes} bytes only: no spill`,
  );

  const second = await launch();
  const after = await inPage(
    second.page,
    async ({ open }, poolSrc) => {
      const poolBytes = (0, eval)(`(${poolSrc})`);
      const db = await open('crash.db');
      const [row] = await db.query(
        'SELECT count(*) AS n, sum(length(data)) AS bytes, sum(length(data) != 300000) AS uncommitted, (SELECT integrity_check FROM pragma_integrity_check) AS ok FROM t',
      );
      const [{ page_count: pages }] = await db.query('PRAGMA page_count');
      const [{ first }] = await db.query('SELECT data AS first FROM t ORDER BY id LIMIT 1');
      await db.execute('PRAGMA wal_checkpoint(TRUNCATE)');
      const bytes = await poolBytes('crash.db');
      await db.close();
      return { ...row, pages, poolBytes: bytes, sample: Array.from(first.subarray(0, 4)).concat(first[299999]) };
    },
    poolBytes.toString(),
  );
  await second.close();
  t.diagnostic(`after the restart: ${JSON.stringify(after)}`);
  // Only the committed rows, and the pool back to its committed size: the
  // spilled pages were frames of the WAL past its last commit, which WAL
  // recovery leaves out, so a checkpoint copies none of them.
  assert.deepEqual(after, {
    n: 20,
    bytes: 20 * 300000,
    uncommitted: 0,
    ok: 'ok',
    pages: before.committedPages,
    poolBytes: before.committedBytes,
    sample: [0, 1, 2, 3, 299999 & 255],
  });
});

test('a SIGKILL while a large Blob streams into its row and a staged blob has spilled: the row is absent, the one before it whole, and the next open() of another database removes the temp file', async (t) => {
  const MB = 1 << 20;
  const first = await launch();
  const before = await inPage(
    first.page,
    async ({ open, probe }, [MB, stageSrc, frozenSrc, CACHE]) => {
      const stageFiles = (0, eval)(`(${stageSrc})`);
      const frozen = (0, eval)(`(${frozenSrc})`);
      const db = await open('crash-media.db');
      await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      const part = (seed) => Uint8Array.from({ length: MB }, (_, j) => (j * 7 + seed * 13) & 255);
      await db.execute("INSERT INTO media(name, data) VALUES ('committed', ?)", [new Blob([part(1)])]);
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array(6 * MB).fill(9)); // spilled to a temp file, never used
      const files = await stageFiles('crash-media.db');
      // 128 MB streamed in 1 MB steps into the zeroblob its INSERT made.
      const big = new Blob(Array.from({ length: 128 }, (_, i) => part(i)));
      // The zeroblob is in once all of it that the page cache cannot hold
      // has reached the file; the Blob's bytes are written into it after.
      // The worker stands still at its write 8 MB into those, well before
      // the commit, and the kill lands there.
      await probe('crash-media.db', 'freezeAfter', 128 * MB - CACHE + 8 * MB);
      const stopped = frozen('crash-media.db');
      let settled = null;
      const inserting = db.execute("INSERT INTO media(name, data) VALUES ('in flight', ?)", [big]).then(
        () => (settled = 'committed'),
        (e) => (settled = e.code),
      );
      await Promise.race([stopped, inserting]);
      return { files, settled };
    },
    [MB, stageFiles.toString(), frozen.toString(), CACHE],
  );
  first.kill();
  await first.close().catch(() => {});
  // The INSERT was still running at the kill, and the worker's temp space
  // held the spilled staged blob.
  assert.equal(before.settled, null, 'the 128 MB INSERT had ended before the kill');
  assert.deepEqual(before.files, [['1.bin', 6 * MB]]);

  const second = await launch();
  const after = await inPage(
    second.page,
    async ({ open }, [MB, stageSrc]) => {
      const stageFiles = (0, eval)(`(${stageSrc})`);
      const part = (seed) => Uint8Array.from({ length: MB }, (_, j) => (j * 7 + seed * 13) & 255);
      const hex = async (b) =>
        Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b)), (x) => x.toString(16).padStart(2, '0')).join('');
      // The dead worker's temp file outlived the browser; the next open() of
      // any database removes it (no live worker holds its lock), before any
      // close() could sweep.
      const leftAfterRestart = await stageFiles('crash-media.db');
      const other = await open('crash-other.db');
      const leftAfterOpen = await stageFiles('crash-media.db');
      await other.close();
      const db = await open('crash-media.db');
      const rows = await db.query('SELECT id, name, length(data) AS n FROM media ORDER BY id');
      const [{ ok }] = await db.query('SELECT integrity_check AS ok FROM pragma_integrity_check');
      const committed = (await hex(await db.readBlob('media', 'data', rows[0].id))) === (await hex(part(1)));
      await db.close();
      return { rows: rows.map((r) => [r.name, r.n]), ok, committed, leftAfterRestart, leftAfterOpen };
    },
    [MB, stageFiles.toString()],
  );
  await second.close();
  assert.equal(after.ok, 'ok');
  assert.equal(after.committed, true);
  assert.deepEqual(after.rows, [['committed', MB]]);
  assert.deepEqual(after.leftAfterRestart, [['1.bin', 6 * MB]]);
  assert.equal(after.leftAfterOpen, null);
});

test("a SIGKILL while importDatabase copies a file over a database: after the restart it is the old database, whole, and the import's temp file goes at the next open()", async (t) => {
  const MB = 1 << 20;
  const first = await launch();
  const before = await inPage(
    first.page,
    async ({ open, importDatabase, probe }, [MB, stageSrc, poolSrc, frozenSrc, IMPORT_MB]) => {
      const stageFiles = (0, eval)(`(${stageSrc})`);
      const poolBytes = (0, eval)(`(${poolSrc})`);
      const frozen = (0, eval)(`(${frozenSrc})`);
      // The new database: more than the page cache holds, so the copy
      // spills into the file before its commit.
      const src = await open('crash-restore-src.db');
      await src.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB); CREATE TABLE which(v); INSERT INTO which VALUES ('new')");
      await src.executeBatch(
        'INSERT INTO t(data) VALUES (?)',
        Array.from({ length: IMPORT_MB }, () => [new Uint8Array(MB).fill(0x22)]),
      );
      const file = await new Response(src.export()).blob();
      await src.close();
      // The database it replaces.
      const db = await open('crash-restore.db');
      await db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB); CREATE TABLE which(v); INSERT INTO which VALUES ('old')");
      for (let i = 0; i < 20; i++) await db.execute('INSERT INTO t(data) VALUES (?)', [new Uint8Array(300000).fill(0x11)]);
      const [{ page_count: pages }] = await db.query('PRAGMA page_count');
      await db.execute('PRAGMA wal_checkpoint(TRUNCATE)');
      const base = await poolBytes('crash-restore.db');
      // Staged (the file's bytes), its journal (at most the old database's
      // pages), then the copy: the worker stands still at its write 20 MB
      // into the copy, and the kill lands there.
      await probe('crash-restore.db', 'freezeAfter', file.size + base + 20 * MB);
      const stopped = frozen('crash-restore.db');
      let settled = null;
      const importing = importDatabase(db, file).then(
        () => (settled = 'imported'),
        (e) => (settled = e.code),
      );
      await Promise.race([stopped, importing]);
      return { pages, base, settled, files: await stageFiles('crash-restore.db'), grown: (await poolBytes('crash-restore.db')) - base };
    },
    [MB, stageFiles.toString(), poolBytes.toString(), frozen.toString(), IMPORT_MB],
  );
  first.kill();
  await first.close().catch(() => {});
  t.diagnostic(`at the kill the pool had grown by ${before.grown} bytes`);
  assert.equal(before.settled, null, 'the import had ended before the kill');
  assert.equal(before.files.length, 1, `the import's staged file: ${JSON.stringify(before.files)}`);
  // The journal (at most the old database) and pages of the new one.
  assert.ok(before.grown > 2 * before.base, `the pool grew by ${before.grown} bytes only: the copy had not reached the file`);

  const second = await launch();
  const after = await inPage(
    second.page,
    async ({ open }, [stageSrc, poolSrc]) => {
      const stageFiles = (0, eval)(`(${stageSrc})`);
      const poolBytes = (0, eval)(`(${poolSrc})`);
      const leftAfterRestart = await stageFiles('crash-restore.db');
      const other = await open('crash-restore-other.db');
      const leftAfterOpen = await stageFiles('crash-restore.db');
      await other.close();
      const db = await open('crash-restore.db');
      const [row] = await db.query(
        "SELECT (SELECT v FROM which) AS which, count(*) AS n, sum(length(data)) AS bytes, sum(instr(data, x'22') > 0) AS mixed, (SELECT integrity_check FROM pragma_integrity_check) AS ok FROM t",
      );
      const [{ page_count: pages }] = await db.query('PRAGMA page_count');
      await db.execute('PRAGMA wal_checkpoint(TRUNCATE)');
      const bytes = await poolBytes('crash-restore.db');
      await db.close();
      return { ...row, pages, poolBytes: bytes, leftAfterRestart: leftAfterRestart?.length ?? 0, leftAfterOpen };
    },
    [stageFiles.toString(), poolBytes.toString()],
  );
  await second.close();
  t.diagnostic(`after the restart: ${JSON.stringify(after)}`);
  // The old database, as it was: the hot journal's rollback took the copied pages out.
  assert.deepEqual(after, {
    which: 'old',
    n: 20,
    bytes: 20 * 300000,
    mixed: 0,
    ok: 'ok',
    pages: before.pages,
    poolBytes: before.base,
    leftAfterRestart: 1,
    leftAfterOpen: null,
  });
});
