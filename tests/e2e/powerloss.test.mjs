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
import { record } from './powerloss-workload.mjs';
import { sqlite3mc } from './powerloss-kit.mjs';

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

// The checks that must fail (flushes ignored) look at fewer images: each
// fails in about half of them or more (tests/stress/results/powerloss.md).
// In npm test's reduced form they stop at the first image that fails: one
// shows the check bites.
const CONTROL_IMAGES = Math.min(IMAGES, 50);
const CONTROL = process.env.RESQ_POWERLOSS_IMAGES ? [] : ['--until-failure'];

function images(rec, db, key, extra = [], count = IMAGES) {
  const dir = mkdtempSync(join(tmpdir(), 'resq-powerloss-'));
  try {
    const file = join(dir, 'log.json');
    writeFileSync(file, JSON.stringify(rec));
    const keyed = key ? ['--key', key] : [];
    const env = key ? { ...process.env, LD_PRELOAD: sqlite3mc() } : process.env;
    const r = spawnSync('python3', [checker, file, '--db', db, '--images', String(count), '--seed', '7', ...keyed, ...extra], {
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
    const rec = await record(h.page, name, 12345, { pageSize, key });
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
    const broken = images(rec, name, key, ['--ignore-flushes', ...CONTROL], CONTROL_IMAGES);
    t.diagnostic(
      `page size ${pageSize}${what}, with flushes ignored: ${broken.failures} of ${broken.images} images checked fail, e.g. ${broken.first[0]?.why}`,
    );
    assert.ok(broken.failures > 0, 'ignoring flushes must lose acknowledged transactions');

    // Under WAL each of the two flushes matters on its own: the -wal
    // file's (a commit's), and the database file's (a checkpoint's, before
    // the WAL is written over from its start again).
    for (const file of ['wal', 'db']) {
      const without = images(rec, name, key, ['--ignore-flushes-of', file, ...CONTROL], CONTROL_IMAGES);
      t.diagnostic(
        `page size ${pageSize}${what}, with the ${file === 'wal' ? '-wal file' : 'database file'}'s flushes ignored: ${without.failures} of ${without.images} images checked fail, e.g. ${String(without.first[0]?.why).slice(0, 120)}`,
      );
      assert.ok(without.failures > 0, `ignoring the ${file} file's flushes must lose acknowledged transactions`);
    }
  });
}
