// Kill trials of rekey: the renderer (and with it the worker, in the
// middle of rewriting every page) is crashed at a spread of moments, during
// a rekey from one key to another, from a key to none, and from none to a
// key. Then a fresh tab opens the database: the new way or the old one
// opens it, never neither, with every row and integrity ok; a rekey that
// was acknowledged before the crash is kept. `RESQ_REKEY_TRIALS` sets the
// count.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests({ key: 'a passphrase' });

const TRIALS = Number(process.env.RESQ_REKEY_TRIALS ?? 6);

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

/** Runs in the page: what identifies the rows, to compare before and after. */
const summary = 'SELECT count(*) AS n, sum(length(b)) AS bytes, group_concat(s) AS s, sum(unicode(substr(b, 1000, 1))) AS probe FROM t';

/**
 * Runs in the page: a 40 MB database `name`, opened with `options`; with
 * `rekeyTo` given, how long a rekey of it to that takes.
 */
const build = async ({ open }, { name, options, summary, rekeyTo }) => {
  const db = await open(name, options);
  await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT, b BLOB)');
  const blob = new Uint8Array(256 << 10).map((_, i) => (i * 31) & 255);
  // One transaction: the rows are the trial's setup, not what it tests.
  await db.transaction(async (tx) => {
    for (let i = 0; i < 160; i++) await tx.execute('INSERT INTO t(s, b) VALUES (?, ?)', [`row ${i}`, blob]);
  });
  const s = JSON.stringify(await db.query(summary));
  await db.close();
  if (rekeyTo === undefined) return { s };
  // Timed as the trials run it: on the database opened afresh.
  const again = await open(name, options);
  await again.query('SELECT 1');
  const t0 = performance.now();
  await again.rekey(rekeyTo);
  const ms = performance.now() - t0;
  await again.close();
  return { s, ms };
};

/**
 * Kill trials of a rekey from `from` to `to`, `open` options (`{}` for
 * plain). After each crash a
 * fresh tab tries `to` first (after a cut-off rekey it must refuse, and
 * leave the journal for `from`), then `from`.
 */
async function acrossTrials(t, what, from, to) {
  const rekeyTo = to.key ?? null;
  let page = await h.newPage();
  const want = await inPage(page, build, { name: `rekey-${what}-kill-0.db`, options: from, summary, rekeyTo });
  await page.close();
  t.diagnostic(`a rekey(${rekeyTo === null ? 'null' : 'key'}) of 40 MB took ${want.ms.toFixed(0)} ms`);
  const trials = [];
  for (let trial = 1; trial <= TRIALS; trial++) {
    const name = `rekey-${what}-kill-${trial}.db`;
    page = await h.newPage();
    await inPage(page, build, { name, options: from, summary });
    const crash = await h.crasher(page);
    let acknowledged = false;
    await page.exposeFunction('resqRekeyed', () => (acknowledged = true));
    await inPage(
      page,
      async ({ open }, { name, from, rekeyTo }) => {
        const db = await open(name, from);
        await db.query('SELECT 1');
        void db.rekey(rekeyTo).then(
          () => window.resqRekeyed(),
          () => {},
        );
      },
      { name, from, rekeyTo },
    );
    // From or to plain, the rekey writes the file in its second half (a
    // VACUUM builds the new copy first): the crashes are spread from 0.3 to
    // 1.7 of its time, so that some land after its commit however much one
    // rekey's time varies from the next.
    const delay = Math.round((0.3 + ((trial * 0.61803) % 1) * 1.4) * want.ms);
    await new Promise((r) => setTimeout(r, delay));
    void crash().catch(() => {});
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
    trials.push({ trial, delay, acknowledged, ...r });
    assert.ok(r.opened === 'new' || r.opened === 'old', `trial ${trial}: ${r.opened}`);
    assert.equal(r.ok, 'ok', `trial ${trial}: integrity`);
    assert.equal(r.s, want.s, `trial ${trial}: every row as it was`);
    if (acknowledged) assert.equal(r.opened, 'new', `trial ${trial}: an acknowledged rekey is kept`);
  }
  t.diagnostic(trials.map((r) => `${r.delay} ms: ${r.opened}${r.acknowledged ? ' (acknowledged)' : ''}`).join(', '));
  assert.ok(
    trials.some((r) => r.opened === 'old'),
    'some crash landed before the rekey committed',
  );
  assert.ok(
    trials.some((r) => r.opened === 'new'),
    'some rekey committed',
  );
}

test(`a rekey crashed midway leaves the old key or the new one working, never neither (${TRIALS} trials)`, (t) =>
  acrossTrials(t, 'key', { key: 'old key' }, { key: 'new key' }));

test(`a rekey(null) crashed midway leaves the old key or no key opening it, never neither, and no key never harms it (${TRIALS} trials)`, (t) =>
  acrossTrials(t, 'null', { key: 'decrypt me' }, {}));

test(`a rekey(key) of a plain database crashed midway leaves no key or the new key opening it, never neither, and the key never harms it (${TRIALS} trials)`, (t) =>
  acrossTrials(t, 'plain', {}, { key: 'encrypt me' }));
