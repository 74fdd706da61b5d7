// Kill trials of rekey: the renderer (and with it the worker, in the
// middle of rewriting every page) is crashed at a spread of points during
// a rekey from one key to another, from a key to none, and from none to a
// key. Then a fresh tab opens the database: the new way or the old one
// opens it, never neither, with every row and integrity ok; a rekey that
// was acknowledged before the crash is kept. `RESQ_REKEY_TRIALS` sets the
// count. rekey-kill.test.mjs runs the trials of rekeys from a key,
// rekey-kill-plain.test.mjs those of a plain database's rekey(key): two
// files, so that the two halves run side by side.
//
// The points are writes, not times: a first rekey counts the writes a
// rekey of this database makes, and each trial's worker (the probe
// worker's `freezeAt`) stands still at a fraction of that count, from
// 0.1 to 1.3, before the renderer is crashed. So the trials land before
// and after the rekey's commit however loaded the machine is (timed
// crashes landed all after it on a busy machine), and a 10 MB database
// (about 25 writes) spreads them as well as the 40 MB one the timed
// crashes needed.

import assert from 'node:assert/strict';
import { inPage, keepWorkers } from './util.mjs';

export const TRIALS = Number(process.env.RESQ_REKEY_TRIALS ?? 6);

/** Runs in the page: what identifies the rows, to compare before and after. */
const summary = 'SELECT count(*) AS n, sum(length(b)) AS bytes, group_concat(s) AS s, sum(unicode(substr(b, 1000, 1))) AS probe FROM t';

/** Runs in the page: a 10 MB database `name`, opened with `options`; returns its summary. */
const build = async ({ open }, { name, options, summary }) => {
  const db = await open(name, options);
  await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT, b BLOB)');
  // 40 rows of 256 KB, each its own byte repeated, made by SQLite in one
  // statement: the rows are each trial's setup, not what it tests.
  await db.execute(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39)
     INSERT INTO t(s, b) SELECT 'row ' || i, CAST(printf('%.*c', ${256 << 10}, char(48 + i % 64)) AS BLOB) FROM n`,
  );
  const s = JSON.stringify(await db.query(summary));
  await db.close();
  return s;
};

/**
 * Runs in the page: how many writes a rekey of database `name` (opened with
 * `options`, as the trials open it) to `rekeyTo` makes, and how long it
 * takes. A plain database's rekey(key) moves it to a new worker, with
 * ciphers, which encrypts it as it opens it: there the count is that
 * worker's writes from its start. The page must hold no other worker of
 * `name` (each would answer the probe), and keeps its workers
 * (util.mjs, keepWorkers).
 */
const count = async ({ open, probe }, { name, options, rekeyTo }) => {
  const db = await open(name, options);
  await db.query('SELECT 1');
  const before = (await probe(name, 'opfsCalls')).writes;
  const t0 = performance.now();
  await db.rekey(rekeyTo);
  const ms = performance.now() - t0;
  const moved = window.workers.length > 1;
  // The plain worker, done with the file, would answer too until it ends.
  if (moved) window.workers[0].terminate();
  const writes = (await probe(name, 'opfsCalls')).writes - (moved ? 0 : before);
  await db.close();
  return { ms, writes };
};

/**
 * Kill trials of a rekey from `from` to `to`, `open` options (`{}` for
 * plain), in app `h` (harness.mjs `start({ probe: {} })`: the probe
 * worker). After each crash a fresh tab tries `to` first (after a cut-off
 * rekey it must refuse, and leave the journal for `from`), then `from`.
 */
export async function rekeyKillTrials(h, t, what, from, to) {
  const rekeyTo = to.key ?? null;
  // The count, on a database built in a page of its own (whose workers
  // go with it).
  const first = `rekey-${what}-kill-0.db`;
  let page = await h.newPage();
  const want = { s: await inPage(page, build, { name: first, options: from, summary }) };
  await page.close();
  page = await h.newPage();
  await keepWorkers(page);
  Object.assign(want, await inPage(page, count, { name: first, options: from, rekeyTo }));
  await page.close();
  t.diagnostic(`a rekey(${rekeyTo === null ? 'null' : 'key'}) of 10 MB made ${want.writes} writes in ${want.ms.toFixed(0)} ms`);
  const trials = [];
  for (let trial = 1; trial <= TRIALS; trial++) {
    const name = `rekey-${what}-kill-${trial}.db`;
    page = await h.newPage();
    await inPage(page, build, { name, options: from, summary });
    const crash = await h.crasher(page);
    let settle;
    const settled = new Promise((resolve) => (settle = resolve));
    let acknowledged = false;
    await page.exposeFunction('resqRekeyed', () => {
      acknowledged = true;
      settle('acknowledged');
    });
    await page.exposeFunction('resqFrozen', () => settle('frozen'));
    // From or to plain, the rekey writes the file in its second half (a
    // VACUUM builds the new copy first): the points are spread from 0.1 to
    // 1.3 of its writes, so that some land after its commit, and one past
    // its last write lets it be acknowledged first.
    const at = Math.max(1, Math.round((0.1 + ((trial * 0.61803) % 1) * 1.2) * want.writes));
    await inPage(
      page,
      async ({ open, probe }, { name, from, rekeyTo, at }) => {
        const db = await open(name, from);
        await db.query('SELECT 1');
        const channel = new BroadcastChannel('resq-wasm-probe');
        channel.onmessage = ({ data }) => data.frozen === name && window.resqFrozen();
        if (rekeyTo !== null && !from.key) {
          // The worker with ciphers this rekey moves to (see count above).
          const Base = Worker;
          window.Worker = class extends Base {
            constructor(...args) {
              super(...args);
              this.postMessage({ probeFreezeAt: at });
            }
          };
        } else await probe(name, 'freezeAt', at);
        void db.rekey(rekeyTo).then(
          () => window.resqRekeyed(),
          () => {},
        );
      },
      { name, from, rekeyTo, at },
    );
    let timer;
    const how = await Promise.race([settled, new Promise((r) => (timer = setTimeout(() => r('neither'), 60_000)))]);
    clearTimeout(timer);
    assert.notEqual(how, 'neither', `trial ${trial}: in 60 s the rekey neither reached write ${at} nor was acknowledged`);
    await crash();
    // As before the points were writes: Firefox's tab takes a moment to
    // see its content process gone, and closing it at once was seen to hang.
    await new Promise((r) => setTimeout(r, 300));
    await page.close().catch(() => {});
    page = await h.newPage();
    const r = await inPage(
      page,
      async ({ open, outcome }, { name, from, to, summary }) => {
        for (const [which, options] of [
          ['new', to],
          ['old', from],
        ]) {
          const o = await outcome(open(name, options));
          if (!o.ok && o.error.code === 'RESQ_BAD_KEY') continue;
          if (!o.ok) return { opened: `neither: ${o.error.code} ${o.error.message}` };
          const db = await open(name, options);
          const [{ integrity_check: ok }] = await db.query('PRAGMA integrity_check');
          const s = JSON.stringify(await db.query(summary));
          await db.close();
          return { opened: which, ok, s };
        }
        return { opened: 'neither: both refused' };
      },
      { name, from, to, summary },
    );
    await page.close();
    trials.push({ trial, at, acknowledged, ...r });
    assert.ok(r.opened === 'new' || r.opened === 'old', `trial ${trial}: ${r.opened}`);
    assert.equal(r.ok, 'ok', `trial ${trial}: integrity`);
    assert.equal(r.s, want.s, `trial ${trial}: every row as it was`);
    if (acknowledged) assert.equal(r.opened, 'new', `trial ${trial}: an acknowledged rekey is kept`);
  }
  t.diagnostic(trials.map((r) => `write ${r.at}: ${r.opened}${r.acknowledged ? ' (acknowledged)' : ''}`).join(', '));
  assert.ok(
    trials.some((r) => r.opened === 'old'),
    'some crash landed before the rekey committed',
  );
  assert.ok(
    trials.some((r) => r.opened === 'new'),
    'some rekey committed',
  );
}
