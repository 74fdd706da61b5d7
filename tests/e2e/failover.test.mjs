// No call fails because another tab went away: a call that a following tab
// has sent to the leader, and has no answer for when the leading tab
// closes or its worker ends, is completed by the next leader exactly once.
// Writes are recorded with their answers (so one that committed is not run
// again); reads run again. Leaders are ended for real: their tab closed,
// or their worker stopped by the probe worker (tests/e2e/probe-worker.js)
// right after a call committed and before its answer was sent.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName, openIn } from './util.mjs';

// Every test here runs in each engine's default storage: OPFS, or
// IndexedDB in WebKitGTK.

/** Failovers in each model check: RESQ_FAILOVERS (npm test: 10 in each engine; `npm run stress`: 40). */
const FAILOVERS = Number(process.env.RESQ_FAILOVERS ?? 10);

let h;
before(async () => {
  h = await start({ probe: {} });
});
after(async () => {
  await h?.close();
});

/** Opens `name` in a new page as `globalThis.db`. */
async function tab(name) {
  const page = await h.newPage();
  await openIn(page, name);
  return page;
}

/** Makes the leader's worker end right after the next call a follower sends it has run. */
const dieBeforeReply = (page, name) => inPage(page, async ({ probe }, name) => probe(name, 'dieBeforeReply'), name);

test('a follower call whose answer is lost with the leader completes once: execute, executeBatch, a write through query, a transaction commit, and a read', async (t) => {
  const name = dbName(t);
  const a = await tab(name);
  const b = await tab(name);
  await inPage(a, async () => db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)'));
  const calls = {
    execute: async () => db.execute('INSERT INTO t(v) VALUES (?)', ['execute']),
    executeBatch: async () => db.executeBatch('INSERT INTO t(v) VALUES (?)', [['batch-1'], ['batch-2']]),
    query: async () => db.query("INSERT INTO t(v) VALUES ('query') RETURNING id, v"),
    queryBytes: async () => new TextDecoder().decode(await db.queryBytes("INSERT INTO t(v) VALUES ('bytes') RETURNING v")),
    // The leader ends after the COMMIT ran: armed from inside the callback.
    transaction: async () =>
      db.transaction(async (tx) => {
        await tx.execute("INSERT INTO t(v) VALUES ('tx-1')");
        await tx.execute("INSERT INTO t(v) VALUES ('tx-2')");
        await probe(NAME, 'dieBeforeReply');
        return 'committed';
      }),
    read: async () => db.query('SELECT count(*) AS n FROM t'),
  };
  const got = {};
  let [leader, follower] = [a, b];
  for (const [what, call] of Object.entries(calls)) {
    // Each round the worker of the tab that leads ends after the call ran;
    // the other tab, queued for the lead, leads next.
    if (what !== 'transaction') await dieBeforeReply(leader, name);
    got[what] = await inPage(
      follower,
      async ({ outcome, probe }, { src, name }) => outcome(new Function('probe', 'NAME', `return (${src})()`)(probe, name)),
      { src: call.toString(), name },
    );
    [leader, follower] = [follower, leader];
  }
  for (const [what, r] of Object.entries(got)) assert.equal(r.ok, true, `${what}: ${JSON.stringify(r.error)}`);
  const rows = await inPage(a, async () => (await db.query('SELECT id, v FROM t ORDER BY id')).map((r) => r.v));
  assert.deepEqual(rows, ['execute', 'batch-1', 'batch-2', 'query', 'bytes', 'tx-1', 'tx-2'], 'every write there once, in order');
  assert.deepEqual(got.execute.value, { changes: 1, lastInsertRowid: 1 });
  assert.deepEqual(got.executeBatch.value, { changes: 2, lastInsertRowid: 3 });
  assert.deepEqual(got.query.value, [{ id: 4, v: 'query' }], 'the answer of the write that committed, not of a second run');
  assert.equal(got.queryBytes.value, '[{"v":"bytes"}]');
  assert.equal(got.transaction.value, 'committed');
  assert.deepEqual(got.read.value, [{ n: 7 }]);
  // The record is out of the way: not among the tables a schema tool lists.
  const tables = await inPage(a, async () =>
    (await db.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")).map((r) => r.name),
  );
  assert.deepEqual(tables, ['t']);
  await Promise.all([a.close(), b.close()]);
});

test("the leading tab closes mid-stream of another tab's 300 writes: no call rejects, every row is there once, in order", async (t) => {
  const name = dbName(t);
  const a = await tab(name);
  const b = await tab(name);
  await inPage(a, async () => db.execute('CREATE TABLE w(n INTEGER PRIMARY KEY, k TEXT)'));
  const running = inPage(b, async () => {
    const out = { ok: 0, failed: [] };
    for (let i = 0; i < 300; i++) {
      try {
        await db.execute('INSERT INTO w(k) VALUES (?)', [`b-${i}`]);
        out.ok += 1;
      } catch (e) {
        out.failed.push(`b-${i}: ${e.code} ${e.message}`);
      }
    }
    return out;
  });
  await new Promise((r) => setTimeout(r, 200));
  await a.close();
  const r = await running;
  assert.deepEqual(r.failed, []);
  assert.equal(r.ok, 300);
  const rows = await inPage(b, async () => (await db.query('SELECT k FROM w ORDER BY n')).map((x) => x.k));
  assert.deepEqual(
    rows,
    Array.from({ length: 300 }, (_, i) => `b-${i}`),
  );
  await b.close();
});

test('five cycles of "the leader closes, the other tab calls at once": every call succeeds', async (t) => {
  const name = dbName(t);
  let leader = await tab(name);
  await inPage(leader, async () => db.execute('CREATE TABLE c(n INTEGER PRIMARY KEY, cycle INTEGER)'));
  const results = [];
  for (let cycle = 0; cycle < 5; cycle++) {
    const other = await tab(name);
    // The other tab calls, without pause, as the leader's page goes.
    const calls = inPage(
      other,
      async ({ outcome }, cycle) =>
        Promise.all([outcome(db.execute('INSERT INTO c(cycle) VALUES (?)', [cycle])), outcome(db.query('SELECT count(*) AS n FROM c'))]),
      cycle,
    );
    await leader.close();
    results.push(await calls);
    leader = other;
  }
  for (const [cycle, [write, read]] of results.entries()) {
    assert.equal(write.ok, true, `cycle ${cycle}: ${JSON.stringify(write.error)}`);
    assert.equal(read.ok, true, `cycle ${cycle}: ${JSON.stringify(read.error)}`);
  }
  const rows = await inPage(leader, async () => (await db.query('SELECT cycle FROM c ORDER BY n')).map((r) => r.cycle));
  assert.deepEqual(rows, [0, 1, 2, 3, 4]);
  await leader.close();
});

/**
 * A model check over `writers` following tabs while `failovers` leaders go
 * in turn (each tab that leads closes; the next in line leads): each writer
 * runs inserts, updates, deletes, batches and reads of its own rows, and
 * logs every call it made. No call may reject; every write is there once.
 */
async function model(t, writers, failovers) {
  const name = dbName(t);
  // The leaders first: they queue for the lead in order, before the writers.
  const leaders = [];
  for (let i = 0; i <= failovers; i++) leaders.push(await tab(name));
  await inPage(leaders[0], async () =>
    db.execute('CREATE TABLE m(id TEXT PRIMARY KEY, v INTEGER); CREATE TABLE log(n INTEGER PRIMARY KEY, tab TEXT, i INTEGER)'),
  );
  const pages = [];
  for (let i = 0; i < writers; i++) pages.push(await tab(name));
  let stop = false;
  const runs = pages.map((page, w) =>
    inPage(
      page,
      async ({ seeded }, { tab, seed }) => {
        const next = seeded(seed);
        const rand = (n) => Math.floor(next() * n);
        const m = new Map();
        const out = { calls: 0, failed: [], wrongReads: 0, spans: [] };
        globalThis.stopModel = false;
        for (let i = 0; !globalThis.stopModel; i++) {
          const id = `${tab}-${rand(40)}`;
          const kind = rand(10);
          const began = performance.timeOrigin + performance.now();
          try {
            if (kind < 5) {
              const op = !m.has(id) ? 'insert' : rand(3) === 0 ? 'delete' : 'update';
              const sql = {
                insert: 'INSERT INTO m(id, v) VALUES (?1, ?2)',
                update: 'UPDATE m SET v = ?2 WHERE id = ?1',
                delete: 'DELETE FROM m WHERE id = ?1 AND ?2 IS NOT NULL',
              }[op];
              const r = await db.execute(sql, [id, i]);
              if (r.changes !== 1) out.failed.push(`${op} ${id}: changes ${r.changes}`);
              if (op === 'delete') m.delete(id);
              else m.set(id, i);
            } else if (kind < 7) {
              const ids = [...new Set([id, `${tab}-${rand(40)}`])];
              const r = await db.executeBatch(
                'INSERT INTO m(id, v) VALUES (?1, ?2) ON CONFLICT(id) DO UPDATE SET v = excluded.v',
                ids.map((k) => [k, i]),
              );
              if (r.changes !== ids.length) out.failed.push(`batch: changes ${r.changes}`);
              for (const k of ids) m.set(k, i);
            } else {
              const [row] = await db.query('SELECT v FROM m WHERE id = ?', [id]);
              if ((row?.v ?? null) !== (m.get(id) ?? null)) out.wrongReads += 1;
            }
            await db.execute('INSERT INTO log(tab, i) VALUES (?, ?)', [tab, i]);
            out.calls += 1;
            globalThis.completed = out.calls;
            out.spans.push([began, performance.timeOrigin + performance.now()]);
          } catch (e) {
            out.failed.push(`${id}: ${e.code} ${e.message}`);
          }
        }
        const rows = await db.query('SELECT id, v FROM m WHERE id LIKE ?', [`${tab}-%`]);
        out.diverged = rows.filter((r) => m.get(r.id) !== r.v).map((r) => r.id);
        out.missing = [...m.keys()].filter((id) => !rows.some((r) => r.id === id));
        const logged = (await db.query('SELECT i FROM log WHERE tab = ? ORDER BY n', [tab])).map((r) => r.i);
        out.logOk = logged.length === out.calls && logged.every((v, k) => k === 0 || v > logged[k - 1]);
        out.logged = logged.length;
        return out;
      },
      { tab: `w${w}`, seed: 17 + w * 31 },
    ),
  );
  const closes = [];
  // A writer that makes no progress for a minute fails the check, with the
  // origin's Web Locks (who leads, who waits), instead of holding the run.
  const stuck = async (what) => {
    const locks = await inPage(pages[0], async () => navigator.locks.query()).catch((e) => e.message);
    return new Error(`${what} in 60 s; Web Locks: ${JSON.stringify(locks)}`);
  };
  // Each leader closes once every writer has completed a call since the
  // last close (each leader serves every writer), then 50 ms on.
  const progress = () => Promise.all(pages.map((p) => inPage(p, async () => globalThis.completed ?? 0)));
  for (const leader of leaders) {
    const before = await progress();
    for (const began = Date.now(); (await progress()).some((n, w) => n <= before[w]); ) {
      if (Date.now() - began > 60_000) throw await stuck(`after ${closes.length} leaders closed, a writer completed no call`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 50));
    const began = Date.now();
    await leader.close();
    closes.push([began, Date.now()]);
  }
  stop = true;
  await Promise.all(pages.map((p) => inPage(p, async () => (globalThis.stopModel = true))));
  let timer;
  const hung = new Promise((_, reject) => {
    timer = setTimeout(async () => reject(await stuck("the writers' last calls did not end")), 60_000);
  });
  const results = await Promise.race([Promise.all(runs), hung]).finally(() => clearTimeout(timer));
  for (const [w, r] of results.entries()) {
    assert.deepEqual(r.failed, [], `writer ${w}`);
    assert.equal(r.wrongReads, 0, `writer ${w}: reads as the model says`);
    assert.deepEqual(r.diverged, [], `writer ${w}`);
    assert.deepEqual(r.missing, [], `writer ${w}`);
    assert.ok(r.logOk, `writer ${w}: every logged call once, in order (${r.logged} rows for ${r.calls} calls)`);
  }
  assert.ok(stop);
  // Figures (not assertions): per close, from the closed page gone to the
  // next call (a pair of statements) completed, and the calls under way
  // while the page went, which the next leader completed.
  const ends = results.flatMap((r) => r.spans.map(([, end]) => end)).sort((x, y) => x - y);
  const spans = results.flatMap((r) => r.spans);
  const next = closes.map(([, gone]) => ends.find((e) => e > gone) - gone).filter(Number.isFinite);
  const across = closes.map(([began, gone]) => spans.filter(([b, e]) => b < gone && e > began).length);
  const sorted = [...next].sort((x, y) => x - y);
  t.diagnostic(
    `${writers} writers, ${closes.length} leaders closed in turn: ${results.map((r) => r.calls).join(' + ')} calls, none rejected; ` +
      `page closed to the next completed call: median ${sorted[(sorted.length - 1) >> 1]?.toFixed(0)} ms, worst ${sorted.at(-1)?.toFixed(0)} ms (of ${sorted.length}); ` +
      `calls under way while a leader's page closed: ${across.reduce((x, y) => x + y, 0)} (${across.join(' ')})`,
  );
  await Promise.all(pages.map((p) => p.close()));
}

test(`model check: two following tabs, ${FAILOVERS} failovers in the middle of writes, reads and batches: every call once, none rejected`, async (t) => {
  await model(t, 2, FAILOVERS);
});

test(`model check: three following tabs, ${FAILOVERS} failovers in the middle of writes, reads and batches: every call once, none rejected`, async (t) => {
  await model(t, 3, FAILOVERS);
});
