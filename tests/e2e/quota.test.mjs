// A full disk: with the origin's quota set low (CDP
// Storage.overrideQuotaForOrigin in Chromium, the storage limit preference
// at launch in Firefox: see lowQuota() in harness.mjs), filling the database fails with
// RESQ_QUOTA, never a vague I/O error; every acknowledged row is intact;
// writes succeed again after deletes and VACUUM. Staging into temp space
// past the quota is RESQ_QUOTA too.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests();

const QUOTA = 40 << 20;

let h;
before(async () => {
  h = await start({ quota: QUOTA });
});
after(async () => {
  await h?.close();
});

test('filling the database past the quota is RESQ_QUOTA; acknowledged rows stay intact; deletes and VACUUM make room again', async (t) => {
  const page = await h.newPage();
  const quota = await h.lowQuota(page);
  const r = await inPage(
    page,
    async ({ open, outcome }, name) => {
      const hex = async (bytes) =>
        Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
      const random = (n) => {
        const b = new Uint8Array(n);
        for (let i = 0; i < n; i += 65536) crypto.getRandomValues(b.subarray(i, i + 65536));
        return b;
      };
      const db = await open(name);
      await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, sum TEXT, data BLOB)');
      const acked = [];
      let failure = null;
      for (let i = 0; i < 40 && !failure; i++) {
        const data = random(2 << 20);
        const sum = await hex(data);
        const o = await outcome(db.execute('INSERT INTO m(sum, data) VALUES (?, ?)', [sum, data]));
        if (o.ok) acked.push({ id: o.value.lastInsertRowid, sum });
        else failure = o.error;
      }
      // Also a streamed File (4 MB and up) into a full disk.
      const file = new File([random(6 << 20)], 'big.bin');
      const streamed = await outcome(db.execute('INSERT INTO m(sum, data) VALUES (?, ?)', ['file', file]));
      const rows = await db.query('SELECT id, sum, data FROM m ORDER BY id');
      let intact = 0;
      for (const row of rows) if ((await hex(row.data)) === row.sum) intact += 1;
      const check = await db.query('PRAGMA integrity_check');
      const next = await outcome(db.query('SELECT count(*) AS n FROM m'));
      // Make room: delete, then VACUUM gives the pages back to the disk.
      await db.execute('DELETE FROM m');
      const vacuum = await outcome(db.execute('VACUUM'));
      const again = await outcome(db.execute('INSERT INTO m(sum, data) VALUES (?, ?)', ['again', random(2 << 20)]));
      const againFile = await outcome(db.execute('INSERT INTO m(sum, data) VALUES (?, ?)', ['file', file]));
      await db.close();
      return {
        acked: acked.length,
        failure,
        streamed,
        ids: rows.map((x) => x.id),
        ackedIds: acked.map((a) => a.id),
        intact,
        check,
        next,
        vacuum,
        again,
        againFile,
      };
    },
    dbName(t),
  );
  await quota.release();
  await page.close();
  assert.ok(r.acked >= 5, `${r.acked} rows fit before the quota`);
  assert.equal(r.failure?.code, 'RESQ_QUOTA', JSON.stringify(r.failure));
  assert.equal(r.failure.isResqError, true);
  assert.equal(r.streamed.ok, false);
  assert.equal(r.streamed.error.code, 'RESQ_QUOTA', JSON.stringify(r.streamed.error));
  assert.deepEqual(r.ids, r.ackedIds, 'exactly the acknowledged rows are there');
  assert.equal(r.intact, r.acked, 'every acknowledged row has its bytes');
  assert.deepEqual(r.check, [{ integrity_check: 'ok' }]);
  assert.equal(r.next.ok, true);
  assert.equal(r.vacuum.ok, true, JSON.stringify(r.vacuum));
  assert.equal(r.again.ok, true, JSON.stringify(r.again));
  assert.equal(r.againFile.ok, true, JSON.stringify(r.againFile));
});

test('staging past the quota is RESQ_QUOTA, and the database is unchanged', async (t) => {
  const page = await h.newPage();
  const quota = await h.lowQuota(page);
  const r = await inPage(
    page,
    async ({ open, outcome }, name) => {
      const db = await open(name);
      await db.execute("CREATE TABLE c(x); INSERT INTO c VALUES ('canary')");
      const staged = await db.stageBlob();
      let failure = null;
      for (let i = 0; i < 60 && !failure; i++) {
        const o = await outcome(staged.append(new Uint8Array(1 << 20)));
        if (!o.ok) failure = o.error;
      }
      const discard = await outcome(staged.discard());
      const rows = await db.query('SELECT x FROM c');
      await db.close();
      return { failure, discard, rows };
    },
    dbName(t),
  );
  await quota.release();
  await page.close();
  assert.equal(r.failure?.code, 'RESQ_QUOTA', JSON.stringify(r.failure));
  assert.equal(r.discard.ok, true);
  assert.deepEqual(r.rows, [{ x: 'canary' }]);
});
