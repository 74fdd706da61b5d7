// Power-loss simulation of IndexedDB storage. The probe worker records
// every readwrite transaction that reaches the package's IndexedDB database
// and completes, with its puts and deletes, while the power-loss workload
// runs (powerloss-workload.mjs, marking each transaction the page saw
// acknowledged); tests/powerloss/idb_images.py then cuts that sequence at
// every point — IndexedDB commits a transaction whole or not at all, in
// order — builds the database's files from the stores as they were there,
// and opens each with SQLite: integrity ok, every acknowledged transaction
// there with its bytes' hashes right, no partial transaction. Plain and
// encrypted. `RESQ_POWERLOSS_IDB_RUNS` sets how many workloads (each its own
// seed) are recorded and cut (npm test: 1; npm run stress: enough for
// 10,000 images each).

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { start } from './harness.mjs';
import { record } from './powerloss-workload.mjs';
import { sqlite3mc } from './powerloss-kit.mjs';

const RUNS = Number(process.env.RESQ_POWERLOSS_IDB_RUNS ?? 1);
const checker = resolve(import.meta.dirname, '../powerloss/idb_images.py');

let h;
before(async () => {
  h = await start({ probe: { recordIdb: true } });
});
after(async () => {
  await h?.close();
});

function images(rec, db, key, extra = []) {
  const dir = mkdtempSync(join(tmpdir(), 'resq-powerloss-idb-'));
  try {
    const file = join(dir, 'log.json');
    writeFileSync(file, JSON.stringify(rec));
    const keyed = key ? ['--key', key] : [];
    const env = key ? { ...process.env, LD_PRELOAD: sqlite3mc() } : process.env;
    const r = spawnSync('python3', [checker, file, '--db', db, ...keyed, ...extra], { encoding: 'utf8', maxBuffer: 1 << 26, env });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const key of [null, 'power loss key']) {
  const what = key ? ', encrypted' : '';
  test(`power loss at every point of ${RUNS} recorded workload(s) on IndexedDB${what}: every acknowledged transaction survives whole, none is partial, integrity ok`, async (t) => {
    const total = { images: 0, failures: 0, transactions: 0, first: [] };
    let split = null;
    for (let run = 0; run < RUNS; run++) {
      const name = `powerloss-idb-${run}${key ? '-encrypted' : ''}.db`;
      const rec = await record(h.page, name, 12345 + run, { key, storage: 'idb' });
      const r = images(rec, name, key);
      total.images += r.images;
      total.failures += r.failures;
      total.transactions += r.transactions;
      total.first.push(...r.first);
      // The check bites: cut inside each transaction too, as storage would
      // be had a commit been split over several transactions.
      // In npm test's reduced form it stops at the first image that fails:
      // one shows the check bites.
      if (run === 0) split = images(rec, name, key, ['--split', ...(process.env.RESQ_POWERLOSS_IDB_RUNS ? [] : ['--until-failure'])]);
    }
    t.diagnostic(
      `IndexedDB${what}: ${RUNS} workload(s), ${total.transactions} transactions, images ${total.images}, failures ${total.failures}; cut inside transactions too: ${split.failures} of ${split.images} images checked fail (${JSON.stringify(split.kinds)})`,
    );
    assert.equal(total.failures, 0, JSON.stringify(total.first.slice(0, 5)));
    assert.ok(total.transactions >= 40 * RUNS, `${total.transactions} transactions recorded`);
    assert.equal(total.images, total.transactions + RUNS);
    assert.ok(split.failures > 0, 'a commit split over transactions must show lost or partial transactions');
  });
}
