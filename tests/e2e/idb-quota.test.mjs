// A full store under IndexedDB storage (issue 30): with the origin's quota
// set low (lowQuota() in harness.mjs), a commit that does not fit fails with
// RESQ_QUOTA and is undone: the worker loads the database again from what
// IndexedDB holds, so the next call works, every acknowledged row is
// intact, the failed one is not there, and a reopen agrees.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE, start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

const QUOTA = 40 << 20;
// WebKitGTK's driver has no way to lower an origin's quota.
const skip = ENGINE === 'webkit' ? 'WebKitGTK: no quota to set' : false;

let h;
before(async () => {
  if (!skip) h = await start({ quota: QUOTA });
});
after(async () => {
  await h?.close();
});

test('a commit past the quota is RESQ_QUOTA and undone; the next call works; acknowledged rows stay intact', { skip }, async (t) => {
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
      let db = await open(name, { storage: 'idb' });
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
      const next = await outcome(db.query('SELECT count(*) AS n FROM m'));
      const small = await outcome(db.execute("INSERT INTO m(sum, data) VALUES ('small', x'00')"));
      const rows = async () => {
        const out = [];
        for (const row of await db.query("SELECT id, sum, data FROM m WHERE sum != 'small' ORDER BY id"))
          out.push({ id: row.id, intact: (await hex(row.data)) === row.sum });
        return out;
      };
      const before = await rows();
      await db.close();
      db = await open(name, { storage: 'idb' });
      const after = await rows();
      const check = await db.query('PRAGMA integrity_check');
      const smallAfter = await db.query("SELECT count(*) AS n FROM m WHERE sum = 'small'");
      await db.close();
      return { acked, failure, next, small, before, after, check, smallAfter };
    },
    dbName(t),
  );
  await quota.release();
  await page.close();
  assert.ok(r.acked.length > 3, `some rows fit first (${r.acked.length})`);
  assert.equal(r.failure?.code, 'RESQ_QUOTA', JSON.stringify(r.failure));
  assert.deepEqual(r.next, { ok: true, value: [{ n: r.acked.length }] }, 'the next call works and does not see the failed row');
  assert.equal(r.small.ok, true, `a small write fits after: ${JSON.stringify(r.small)}`);
  const want = r.acked.map((a) => ({ id: a.id, intact: true }));
  assert.deepEqual(r.before, want, 'every acknowledged row, intact, and nothing else');
  assert.deepEqual(r.after, want, 'the same after a reopen');
  assert.deepEqual(r.check, [{ integrity_check: 'ok' }]);
  assert.deepEqual(r.smallAfter, [{ n: 1 }]);
});
