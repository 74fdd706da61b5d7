// A worker that dies never leaves a promise pending: a trap in the wasm, a
// worker terminated from outside (as a browser does under memory pressure),
// a reply that cannot be posted, and a worker script that fails to load.
// A page that refuses to start the worker at all (Trusted Types) is told
// so with RESQ_UNSUPPORTED.
// Traps and unpostable replies come from the probe worker
// (tests/e2e/probe-worker.js): the package itself has no test hooks.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { start } from './harness.mjs';
import { inPage, dbName, keepWorkers } from './util.mjs';

let h;
let hp;
before(async () => {
  [h, hp] = await Promise.all([start(), start({ probe: {} })]);
});
after(async () => {
  await h?.close();
  await hp?.close();
});

test('a trap in the wasm (an out-of-bounds access) rejects the pending calls with RESQ_WORKER_DIED; later calls go to a new worker, which has every committed row', async (t) => {
  const r = await inPage(
    hp.page,
    async ({ open, outcome, probe }, name) => {
      const db = await open(name);
      await db.execute('CREATE TABLE t(x)');
      await probe(name, 'trapNextQuery');
      const before = [1, 2, 3].map((i) => outcome(db.execute('INSERT INTO t VALUES (?)', [i])));
      const trapped = outcome(db.query('SELECT count(*) AS n FROM t'));
      const pending = [4, 5].map((i) => outcome(db.query('SELECT ? AS i', [i])));
      const results = await Promise.all([...before, trapped, ...pending]);
      const rows = await outcome(db.query('SELECT x FROM t ORDER BY x'));
      const check = await outcome(db.query('PRAGMA integrity_check'));
      const closed = await outcome(db.close());
      return { results, closed, rows, check };
    },
    dbName(t),
  );
  assert.deepEqual(
    r.results.slice(0, 3).map((o) => o.ok),
    [true, true, true],
  );
  for (const o of r.results.slice(3)) {
    assert.equal(o.ok, false);
    assert.equal(o.error.isResqError, true);
    assert.equal(o.error.code, 'RESQ_WORKER_DIED');
  }
  // The trap's own message, in each engine's words for it.
  assert.match(
    r.results[3].error.message,
    { chromium: /memory access out of bounds/, firefox: /RuntimeError: index out of bounds/, webkit: /Out of bounds memory access/ }[
      hp.engine
    ],
  );
  // A new worker has the file, and what was committed before the trap.
  assert.deepEqual(r.rows, { ok: true, value: [{ x: 1 }, { x: 2 }, { x: 3 }] });
  assert.deepEqual(r.check, { ok: true, value: [{ integrity_check: 'ok' }] });
  assert.equal(r.closed.ok, true);
});

test('a memory database whose worker traps is gone: pending and later calls reject with RESQ_WORKER_DIED, close() resolves', async () => {
  const r = await inPage(hp.page, async ({ open, outcome, probe }) => {
    const db = await open(':memory:');
    await db.execute('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    await probe(':memory:', 'trapNextQuery');
    const trapped = await outcome(db.query('SELECT x FROM t'));
    const later = await outcome(db.query('SELECT 1'));
    const closed = await outcome(db.close());
    return { trapped, later, closed };
  });
  for (const o of [r.trapped, r.later]) {
    assert.equal(o.ok, false);
    assert.equal(o.error.code, 'RESQ_WORKER_DIED');
  }
  assert.equal(r.closed.ok, true, 'close() of a dead database resolves');
});

test('a worker terminated from outside settles every pending call with RESQ_WORKER_DIED; later calls go to a new worker', async (t) => {
  const page = await h.newPage();
  await keepWorkers(page);
  const r = await inPage(
    page,
    async ({ open, outcome }, name) => {
      const db = await open(name);
      await db.execute('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
      const blob = new Blob([new Uint8Array(8 << 20)]);
      const pending = [
        outcome(db.execute('INSERT INTO t VALUES (?)', [blob])),
        outcome(db.query('SELECT x FROM t')),
        outcome(db.readBlob('t', 'x', 1)),
      ];
      window.workers.at(-1).terminate();
      const settled = await Promise.all(pending);
      const rows = await outcome(db.query('SELECT count(*) AS n FROM t'));
      const closed = await outcome(db.close());
      const again = await open(name);
      await again.close();
      return { settled, closed, rows, workers: window.workers.length };
    },
    dbName(t),
  );
  for (const o of r.settled) {
    assert.equal(o.ok, false, JSON.stringify(o));
    assert.equal(o.error.code, 'RESQ_WORKER_DIED');
  }
  assert.equal(r.rows.ok, true, JSON.stringify(r.rows));
  assert.ok(r.rows.value[0].n >= 1);
  assert.equal(r.closed.ok, true);
  assert.equal(r.workers, 3, 'the first worker, the one after it, and the reopen');
  await page.close();
});

test('a reply that cannot be posted rejects its own call with the reason, and the calls after it still work', async (t) => {
  const r = await inPage(
    hp.page,
    async ({ open, outcome, probe }, name) => {
      const db = await open(name);
      await db.execute('CREATE TABLE t(x)');
      await probe(name, 'failNextReply');
      const failed = outcome(db.query('SELECT 42 AS x'));
      const after = [outcome(db.execute('INSERT INTO t VALUES (1)')), outcome(db.query('SELECT x FROM t'))];
      const results = await Promise.all([failed, ...after]);
      await db.close();
      return results;
    },
    dbName(t),
  );
  assert.equal(r[0].ok, false);
  assert.equal(r[0].error.isResqError, true);
  assert.equal(r[0].error.code, 'RESQ_UNSUPPORTED');
  assert.match(r[0].error.message, /could not be sent/);
  assert.deepEqual(r.slice(1), [
    { ok: true, value: { changes: 1, lastInsertRowid: 1 } },
    { ok: true, value: [{ x: 1 }] },
  ]);
});

test('a worker script that cannot load rejects open() with RESQ_WORKER_DIED instead of hanging', async () => {
  rmSync(join(h.app, 'node_modules/resq-wasm/pkg/worker.js'));
  const r = await inPage(h.page, async ({ open, outcome }) => outcome(open('never.db')));
  assert.equal(r.ok, false);
  assert.equal(r.error.code, 'RESQ_WORKER_DIED');
});

test('a page that enforces Trusted Types gets RESQ_UNSUPPORTED from open(), saying why; with a policy for the worker URLs, the next open() works', async (t) => {
  const ht = await start({ headers: { 'Content-Security-Policy': "require-trusted-types-for 'script'" } });
  try {
    // Not inPage(): it evaluates its snippet from text, which this page refuses.
    const r = await ht.page.evaluate(
      async ([name]) => {
        if (typeof trustedTypes === 'undefined') return { enforced: false };
        const { open, ResqError } = await import('resq-wasm');
        let refused;
        try {
          await open(name);
          refused = { ok: true };
        } catch (e) {
          refused = { ok: false, isResqError: e instanceof ResqError, code: e.code, message: e.message };
        }
        // What the README tells such a page to do: a policy for the package's URLs.
        trustedTypes.createPolicy('default', {
          createScriptURL: (url) => (new URL(url).pathname.startsWith('/node_modules/resq-wasm/') ? url : null),
        });
        const db = await open(name);
        await db.execute('CREATE TABLE t(x); INSERT INTO t VALUES (42)');
        const rows = await db.query('SELECT x FROM t');
        await db.close();
        return { enforced: true, refused, rows };
      },
      [dbName(t)],
    );
    assert.equal(r.enforced, true, `${ht.engine} enforces Trusted Types (every engine this suite runs does)`);
    assert.equal(r.refused.ok, false, 'open() is refused');
    assert.equal(r.refused.isResqError, true);
    assert.equal(r.refused.code, 'RESQ_UNSUPPORTED');
    assert.match(r.refused.message, /Trusted Types/);
    assert.deepEqual(r.rows, [{ x: 42 }]);
  } finally {
    await ht.close();
  }
});

test('a wasm that cannot load rejects open() with RESQ_UNSUPPORTED, naming it, and nothing is left unhandled', async () => {
  const hw = await start();
  try {
    rmSync(join(hw.app, 'node_modules/resq-wasm/pkg/wasm/resq_wasm_bg.wasm'));
    const r = await inPage(hw.page, async ({ open, outcome }) => outcome(open('never.db')));
    assert.equal(r.ok, false);
    assert.equal(r.error.isResqError, true);
    assert.equal(r.error.code, 'RESQ_UNSUPPORTED');
    assert.match(r.error.message, /could not load the SQLite wasm/);
    assert.deepEqual(hw.errors, [], 'no uncaught error or unhandled rejection on the page');
  } finally {
    await hw.close();
  }
});
