// No tab waits forever on another: a transaction that keeps other calls
// waiting (another tab's, or its own page's `db`) and makes no call of its
// own for `transactionTimeout` is rolled back, and its promise and its next
// `tx` call reject with RESQ_TIMEOUT; one nobody waits on is never timed
// out. And a following tab that opens and closes leaves nothing behind in
// the leader's worker; a batch of many Files is read in bounded parts.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { CHROMIUM_IDB_BLOB_LIMIT, start } from './harness.mjs';
import { inPage, dbName, openIn } from './util.mjs';

let h;
before(async () => {
  h = await start({ probe: {} });
});
after(async () => {
  await h?.close();
});

async function tab(name, options = {}) {
  const page = await h.newPage();
  await openIn(page, name, options);
  return page;
}

/**
 * In `page`: a transaction that writes a row, then waits until released
 * (`release()`), then makes one more `tx` call. Its outcome and that
 * call's land in `globalThis.stuck`.
 */
const startStuck = (page) =>
  inPage(page, async ({ outcome }) => {
    globalThis.stuck = {};
    let inside;
    const entered = new Promise((r) => (inside = r));
    const gate = new Promise((r) => (globalThis.release = r));
    stuck.promise = outcome(
      db.transaction(async (tx) => {
        await tx.execute("INSERT INTO t(v) VALUES ('stuck')");
        inside();
        await gate;
        stuck.next = await outcome(tx.execute("INSERT INTO t(v) VALUES ('after')"));
      }),
    ).then((r) => (stuck.result = r));
    await entered;
  });

for (const stuckIn of ['follower', 'leader']) {
  test(`a ${stuckIn} tab stuck in transaction(): the other tab's write runs after transactionTimeout, the stuck one is rolled back and rejects with RESQ_TIMEOUT`, async (t) => {
    const name = dbName(t);
    const first = await tab(name, { transactionTimeout: 700 });
    const second = await tab(name, { transactionTimeout: 700 });
    const [stuck, other] = stuckIn === 'leader' ? [first, second] : [second, first];
    await inPage(first, async () => db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)'));
    await startStuck(stuck);
    const write = await inPage(other, async ({ outcome }) => {
      const t0 = performance.now();
      const r = await outcome(db.execute("INSERT INTO t(v) VALUES ('other')"));
      return { ...r, waited: performance.now() - t0 };
    });
    assert.equal(write.ok, true, JSON.stringify(write.error));
    t.diagnostic(`the other tab's write waited ${write.waited.toFixed(0)} ms (timeout 700 ms)`);
    const r = await inPage(stuck, async () => {
      while (!stuck.result) await new Promise((r) => setTimeout(r, 10));
      release();
      while (!stuck.next) await new Promise((r) => setTimeout(r, 10));
      const later = await db.execute("INSERT INTO t(v) VALUES ('later')");
      return { result: stuck.result, next: stuck.next, later, rows: (await db.query('SELECT v FROM t ORDER BY id')).map((x) => x.v) };
    });
    assert.equal(r.result.ok, false);
    assert.equal(r.result.error.isResqError, true);
    assert.equal(r.result.error.code, 'RESQ_TIMEOUT');
    assert.equal(r.next.ok, false, 'the callback cannot go on after the timeout');
    assert.equal(r.next.error.code, 'RESQ_TIMEOUT');
    assert.deepEqual(r.rows, ['other', 'later'], 'the stuck transaction left nothing; its tab works on');
    await Promise.all([first.close(), second.close()]);
  });
}

test("a transaction begun with execute('BEGIN') that keeps another tab waiting is rolled back: its calls get RESQ_TIMEOUT until its ROLLBACK", async (t) => {
  const name = dbName(t);
  const a = await tab(name, { transactionTimeout: 500 });
  const b = await tab(name);
  await inPage(a, async () => {
    await db.execute('CREATE TABLE t(v TEXT)');
    await db.execute('BEGIN IMMEDIATE');
    await db.execute("INSERT INTO t VALUES ('in a')");
  });
  const write = await inPage(b, async ({ outcome }) => outcome(db.execute("INSERT INTO t VALUES ('b')")));
  assert.equal(write.ok, true, JSON.stringify(write.error));
  const r = await inPage(a, async ({ outcome }) => ({
    next: await outcome(db.execute("INSERT INTO t VALUES ('after')")),
    commit: await outcome(db.execute('COMMIT')),
    rollback: await outcome(db.execute('ROLLBACK')),
    later: await outcome(db.execute("INSERT INTO t VALUES ('later')")),
    rows: (await db.query('SELECT v FROM t')).map((x) => x.v),
  }));
  assert.equal(r.next.error?.code, 'RESQ_TIMEOUT');
  assert.equal(r.commit.error?.code, 'RESQ_TIMEOUT', 'a COMMIT of the rolled-back transaction is refused');
  assert.equal(r.rollback.error?.code, 'SQLITE_ERROR', 'the COMMIT ended it: this ROLLBACK has no transaction');
  assert.equal(r.later.ok, true);
  assert.deepEqual(r.rows.sort(), ['b', 'later']);
  await Promise.all([a.close(), b.close()]);
});

test('a db call awaited inside transaction() (a same-page deadlock) ends with RESQ_TIMEOUT, then runs; the database works on', async (t) => {
  const name = dbName(t);
  const got = await inPage(
    h.page,
    async ({ open, outcome }, name) => {
      const db = await open(name, { transactionTimeout: 400 });
      await db.execute('CREATE TABLE t(v TEXT)');
      let inner;
      let next;
      const result = await outcome(
        db.transaction(async (tx) => {
          await tx.execute("INSERT INTO t VALUES ('in tx')");
          inner = await outcome(db.execute("INSERT INTO t VALUES ('from db')"));
          next = await outcome(tx.execute("INSERT INTO t VALUES ('after')"));
        }),
      );
      while (!next) await new Promise((r) => setTimeout(r, 10));
      const rows = (await db.query('SELECT v FROM t')).map((r) => r.v);
      await db.close();
      return { result, inner, next, rows };
    },
    name,
  );
  assert.equal(got.result.ok, false);
  assert.equal(got.result.error.code, 'RESQ_TIMEOUT');
  assert.equal(got.inner.ok, true, 'the waiting call ran once the transaction was rolled back');
  assert.equal(got.next.error.code, 'RESQ_TIMEOUT');
  assert.deepEqual(got.rows, ['from db']);
});

test('a transaction that nobody waits on is never timed out', async (t) => {
  const name = dbName(t);
  const a = await tab(name, { transactionTimeout: 150 });
  const b = await tab(name, { transactionTimeout: 150 });
  const got = await inPage(b, async ({ outcome }) => {
    await db.execute('CREATE TABLE t(v TEXT)');
    const r = await outcome(
      db.transaction(async (tx) => {
        await tx.execute("INSERT INTO t VALUES ('slow')");
        await new Promise((r) => setTimeout(r, 600));
        await tx.execute("INSERT INTO t VALUES ('still in')");
        return 'done';
      }),
    );
    return { r, rows: (await db.query('SELECT v FROM t')).map((x) => x.v) };
  });
  assert.deepEqual(got, { r: { ok: true, value: 'done' }, rows: ['slow', 'still in'] });
  await Promise.all([a.close(), b.close()]);
});

test('200 open/close cycles in a following tab leave the leader holding none of their ports', async (t) => {
  const name = dbName(t);
  const a = await tab(name);
  await inPage(a, async () => db.execute('CREATE TABLE t(v)'));
  const b = await h.newPage();
  const r = await inPage(
    b,
    async ({ open, probe }, name) => {
      for (let i = 0; i < 200; i++) {
        const db = await open(name);
        await db.execute('INSERT INTO t VALUES (?)', [i]);
        await db.close();
      }
      const keep = await open(name);
      const n = (await keep.query('SELECT count(*) AS n FROM t'))[0].n;
      // One follower is open now: the leader holds its port, and no other.
      const held = await probe(name, 'heldPorts');
      const waits = await probe(name, 'lockWaits');
      await keep.close();
      return { n, held, waits };
    },
    name,
  );
  assert.equal(r.n, 200);
  assert.equal(r.held, 1, 'the ports of the 200 closed followers were let go');
  t.diagnostic(`the leader worker's lock waits with one follower open: ${r.waits}`);
  await Promise.all([a.close(), b.close()]);
});

test('executeBatch of 100 Files of 3 MB reads them in bounded parts, in one transaction, every byte in place', {
  skip: CHROMIUM_IDB_BLOB_LIMIT,
}, async (t) => {
  const name = dbName(t);
  const got = await inPage(
    h.page,
    async ({ open, probe }, name) => {
      const db = await open(name);
      await db.execute('CREATE TABLE f(n INTEGER PRIMARY KEY, data BLOB)');
      // One 64 MB buffer; the Files are 3 MB windows of it (no 300 MB of copies in the page).
      const big = new Uint8Array(64 << 20);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i >> 12) & 255;
      const whole = new Blob([big]);
      const size = 3 << 20;
      const at = (n) => n * 600_000;
      const sets = Array.from({ length: 100 }, (_, n) => [n, new File([whole.slice(at(n), at(n) + size)], `f${n}`)]);
      const r = await db.executeBatch('INSERT INTO f(n, data) VALUES (?, ?)', sets);
      const lengths = await db.query('SELECT count(*) AS rows, min(length(data)) AS lo, max(length(data)) AS hi FROM f');
      const checks = [];
      for (const n of [0, 37, 99]) {
        const got = await db.readBlob('f', 'data', n, { offset: 4096 * 5, length: 4096 * 3 });
        checks.push(got.every((v, i) => v === big[at(n) + 4096 * 5 + i]));
      }
      const peak = await probe(name, 'batchBytes');
      await db.close();
      return { r, lengths, checks, peak };
    },
    name,
  );
  assert.deepEqual(got.r, { changes: 100, lastInsertRowid: 99 });
  assert.deepEqual(got.lengths, [{ rows: 100, lo: 3 << 20, hi: 3 << 20 }]);
  assert.deepEqual(got.checks, [true, true, true]);
  assert.ok(got.peak <= 40 << 20, `at most about 32 MB of Files read before a part ran (${(got.peak / 2 ** 20).toFixed(1)} MB)`);
  t.diagnostic(`most bytes of Files read at once: ${(got.peak / 2 ** 20).toFixed(1)} MB of 300 MB`);
});

test('executeBatch in parts that fails in its third part: the error names the set in the whole batch, nothing is stored or seen changed, and the next call works', {
  skip: CHROMIUM_IDB_BLOB_LIMIT,
}, async (t) => {
  const name = dbName(t);
  const got = await inPage(
    h.page,
    async ({ open, outcome, probe }, name) => {
      const db = await open(name);
      await db.execute('CREATE TABLE f(n INTEGER PRIMARY KEY, data BLOB)');
      const counts = [];
      const stop = db.watch('SELECT count(*) AS n FROM f', [], (rows) => counts.push(rows[0].n));
      await stop.ready;
      await db.query('SELECT 1');
      const runsBefore = await probe(name, 'watchRuns');
      // Ten 3 MB Files fill a part (the worker reads at most 32 MB of them
      // before it runs the sets that hold them): sets 21 to 25 are the
      // third part, and set 23 has a value no SQLite type takes.
      const file = new File([new Uint8Array(3 << 20).fill(7)], 'f.bin');
      const sets = Array.from({ length: 25 }, (_, n) => [n, file]);
      sets[22] = [22, undefined];
      const failed = await outcome(db.executeBatch('INSERT INTO f(n, data) VALUES (?, ?)', sets));
      const stored = (await db.query('SELECT count(*) AS n FROM f'))[0].n;
      const runsAfterFailure = await probe(name, 'watchRuns');
      const next = await outcome(db.executeBatch('INSERT INTO f(n, data) VALUES (?, ?)', sets.slice(0, 12)));
      await db.query('SELECT 1');
      const runsAfterNext = await probe(name, 'watchRuns');
      stop();
      await db.close();
      return { failed, stored, next, counts, runs: [runsBefore, runsAfterFailure, runsAfterNext] };
    },
    name,
  );
  assert.equal(got.failed.ok, false);
  assert.equal(got.failed.error.code, 'RESQ_BAD_PARAM', got.failed.error.message);
  assert.match(got.failed.error.message, /^parameter set 23: parameter 2: undefined/);
  assert.equal(got.stored, 0, 'nothing of the first two parts is stored');
  assert.equal(got.runs[1], got.runs[0], 'the live query did not run again: no table changed');
  assert.deepEqual(got.next, { ok: true, value: { changes: 12, lastInsertRowid: 11 } });
  assert.equal(got.runs[2], got.runs[1] + 1, 'the next batch changed f: its live query ran again');
  assert.deepEqual(got.counts, [0, 12]);
});
