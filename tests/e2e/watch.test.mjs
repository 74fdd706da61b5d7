// Live queries in one tab: what `watch` and `watchBytes` deliver and when,
// the async-iterator form, and bad input (the many-tab cases are in
// tabs.test.mjs).

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

let h;
let hp; // databases in the probe worker, which counts live-query runs
before(async () => {
  h = await start();
  hp = await start({ probe: {} });
});
after(async () => {
  await h?.close();
  await hp?.close();
});

const until = async (cond, ms = 5000) => {
  const t0 = performance.now();
  while (!(await cond())) {
    if (performance.now() - t0 > ms) throw new Error(`gave up waiting after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

test('watch: rows now, then after each commit that changes them; not for rollbacks, other tables or unchanged results', async (t) => {
  const r = await inPage(
    h.page,
    async ({ open }, { name, until }) => {
      until = (0, eval)(`(${until})`);
      const db = await open(name);
      await db.execute('CREATE TABLE a(id INTEGER PRIMARY KEY, v); CREATE TABLE b(x); CREATE VIEW av AS SELECT v FROM a');
      const seen = [];
      const viaView = [];
      const sub = db.watch('SELECT v FROM a ORDER BY id', [], (rows) => seen.push(rows.map((r) => r.v)));
      const sub2 = db.watch('SELECT count(*) AS n FROM av', undefined, (rows) => viaView.push(rows[0].n));
      await Promise.all([sub.ready, sub2.ready]);
      await db.execute('INSERT INTO a(v) VALUES (1)');
      await until(() => seen.length === 2 && viaView.length === 2);
      await db.transaction(async (tx) => {
        await tx.execute('INSERT INTO a(v) VALUES (2)');
        await tx.execute('INSERT INTO a(v) VALUES (3)');
      });
      await until(() => seen.length === 3);
      await db
        .transaction(async (tx) => {
          await tx.execute('INSERT INTO a(v) VALUES (99)');
          throw new Error('undo');
        })
        .catch(() => {});
      await db.execute('INSERT INTO b VALUES (1)');
      await db.execute('UPDATE a SET v = v');
      await db.executeBatch('INSERT INTO a(v) VALUES (?)', [[4], [5]]);
      await until(() => seen.length === 4);
      await db.execute('DELETE FROM a'); // no WHERE: SQLite's truncate path
      await until(() => seen.length === 5);
      await new Promise((r) => setTimeout(r, 100));
      sub();
      sub2();
      await db.execute('INSERT INTO a(v) VALUES (6)');
      await new Promise((r) => setTimeout(r, 100));
      await db.close();
      return { seen, viaView };
    },
    { name: dbName(t), until: until.toString() },
  );
  assert.deepEqual(r.seen, [[], [1], [1, 2, 3], [1, 2, 3, 4, 5], []]);
  assert.deepEqual(r.viaView, [0, 1, 3, 5, 0]);
});

test('watchBytes gives the JSON bytes; the iterator form yields the newest rows; identical watches each get every result', async (t) => {
  const r = await inPage(
    h.page,
    async ({ open }, { name, until }) => {
      until = (0, eval)(`(${until})`);
      const db = await open(name);
      await db.execute('CREATE TABLE t(v)');
      const texts = [];
      const twins = [[], []];
      const subB = db.watchBytes('SELECT v FROM t WHERE v > ?', [0], (json) => texts.push(new TextDecoder().decode(json)));
      const s1 = db.watch('SELECT v FROM t WHERE v > ?', [0], (rows) => twins[0].push(rows.length));
      const s2 = db.watch('SELECT v FROM t WHERE v > ?', [0], (rows) => twins[1].push(rows.length));
      const iterated = [];
      const loop = (async () => {
        for await (const rows of db.watch('SELECT count(*) AS n FROM t')) {
          iterated.push(rows[0].n);
          if (rows[0].n === 2) break; // ends the subscription
        }
      })();
      await Promise.all([subB.ready, s1.ready, s2.ready]);
      await db.execute('INSERT INTO t VALUES (1)');
      await db.execute("INSERT INTO t VALUES (x'00ff')");
      await loop;
      await until(() => texts.length === 3 && twins[1].length === 3);
      for (const s of [subB, s1, s2]) s();
      await db.close();
      return { texts, twins, iterated };
    },
    { name: dbName(t), until: until.toString() },
  );
  assert.deepEqual(r.texts, ['[]', '[{"v":1}]', '[{"v":1},{"v":"AP8="}]']);
  assert.deepEqual(r.twins, [
    [0, 1, 2],
    [0, 1, 2],
  ]);
  assert.equal(r.iterated[0], 0);
  assert.equal(r.iterated.at(-1), 2);
});

test('watch bad input: invalid SQL, a write, two statements and a Blob parameter reject ready; unsubscribing inside the callback is safe; a callback that throws is reported and keeps its watch', async (t) => {
  const before = h.errors.length;
  const r = await inPage(
    h.page,
    async ({ open, outcome }, { name, until }) => {
      until = (0, eval)(`(${until})`);
      const db = await open(name);
      await db.execute('CREATE TABLE t(v)');
      const refused = {};
      for (const [k, sql, params] of [
        ['invalid', 'SELEC v FROM t', []],
        ['noTable', 'SELECT * FROM nowhere', []],
        ['write', 'INSERT INTO t VALUES (1)', []],
        ['two', 'SELECT 1; SELECT 2', []],
        ['blob', 'SELECT ?', [new Blob(['x'])]],
        ['params', 'SELECT ?', 'not params'],
      ]) {
        const sub = db.watch(sql, params, () => {});
        refused[k] = await outcome(sub.ready);
        let iterError = null;
        try {
          for await (const _ of sub) break;
        } catch (e) {
          iterError = e.code;
        }
        refused[k].iterError = iterError;
      }
      // Unsubscribing inside the callback: no call after it.
      let once = 0;
      const self = db.watch('SELECT count(*) AS n FROM t', [], () => {
        once += 1;
        self();
      });
      await self.ready;
      // A callback that throws: reported, and called again next time.
      let thrown = 0;
      const loud = db.watch('SELECT count(*) AS n FROM t', [], () => {
        thrown += 1;
        throw new Error('a subscriber bug');
      });
      await loud.ready;
      await db.execute('INSERT INTO t VALUES (1)');
      await db.execute('INSERT INTO t VALUES (2)');
      await until(() => thrown === 3);
      loud();
      // The next call works.
      const next = await db.query('SELECT count(*) AS n FROM t');
      await db.close();
      return { refused, once, thrown, next };
    },
    { name: dbName(t), until: until.toString() },
  );
  const codes = Object.fromEntries(
    Object.entries(r.refused).map(([k, v]) => [k, [v.ok, v.error?.code, v.error?.isResqError, v.iterError]]),
  );
  assert.deepEqual(codes, {
    invalid: [false, 'SQLITE_ERROR', true, 'SQLITE_ERROR'],
    noTable: [false, 'SQLITE_ERROR', true, 'SQLITE_ERROR'],
    write: [false, 'RESQ_BAD_PARAM', true, 'RESQ_BAD_PARAM'],
    two: [false, 'RESQ_BAD_PARAM', true, 'RESQ_BAD_PARAM'],
    blob: [false, 'RESQ_BAD_PARAM', true, 'RESQ_BAD_PARAM'],
    params: [false, 'RESQ_BAD_PARAM', true, 'RESQ_BAD_PARAM'],
  });
  assert.equal(r.once, 1);
  assert.equal(r.thrown, 3);
  assert.deepEqual(r.next, [{ n: 2 }]);
  // reportError surfaced each throw as a page error.
  await until(() => h.errors.length - before >= 3);
  assert.ok(h.errors.slice(before).every((e) => /a subscriber bug/.test(String(e?.message ?? e))));
  h.errors.splice(before);
});

test('identical watches share one query: a commit re-runs it once for all of them, and a query on another table not at all', async (t) => {
  const r = await inPage(
    hp.page,
    async ({ open, probe }, { name, until }) => {
      until = (0, eval)(`(${until})`);
      const db = await open(name);
      await db.execute('CREATE TABLE t(v); CREATE TABLE u(v)');
      const got = [[], [], []];
      const subs = [
        db.watch('SELECT count(*) AS n FROM t', [], (rows) => got[0].push(rows[0].n)),
        db.watch('SELECT count(*) AS n FROM t', [], (rows) => got[1].push(rows[0].n)),
        db.watch('SELECT count(*) AS n FROM u', [], (rows) => got[2].push(rows[0].n)),
      ];
      await Promise.all(subs.map((s) => s.ready));
      const before = await probe(name, 'watchRuns');
      await db.execute('INSERT INTO t VALUES (1)');
      await until(() => got[0].length === 2 && got[1].length === 2);
      const after = await probe(name, 'watchRuns');
      for (const s of subs) s();
      await db.close();
      return { runs: after - before, got };
    },
    { name: dbName(t), until: until.toString() },
  );
  assert.deepEqual(r.got, [[0, 1], [0, 1], [0]]);
  assert.equal(r.runs, 1, 'one re-run served both identical watches; the one on u did not run');
});
