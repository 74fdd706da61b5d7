// A worker that dies never leaves a promise pending: a trap in the wasm (a
// Rust panic) and a worker script that fails to load both reject every
// pending and later call with RESQ_WORKER_DIED.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

test('a panic in the worker rejects the pending calls, and every later one, with RESQ_WORKER_DIED', async () => {
  const r = await inPage(h.page, async ({ open, outcome }) => {
    const db = await open(':memory:');
    await db.execute('CREATE TABLE t(x)');
    const before = [1, 2, 3].map((i) => outcome(db.execute('INSERT INTO t VALUES (?)', [i])));
    const crash = outcome(db[Symbol.for('resq-wasm.crashWorkerForTests')]());
    const pending = [4, 5].map((i) => outcome(db.query('SELECT ? AS i', [i])));
    const results = await Promise.all([...before, crash, ...pending]);
    const later = await outcome(db.query('SELECT 1'));
    const closed = await outcome(db.close());
    const reopened = await open(':memory:');
    const works = await outcome(reopened.query('SELECT 42 AS x'));
    await reopened.close();
    return { results, later, closed, works };
  });
  assert.deepEqual(r.results.slice(0, 3).map((o) => o.ok), [true, true, true]);
  for (const o of [...r.results.slice(3), r.later]) {
    assert.equal(o.ok, false);
    assert.equal(o.error.isResqError, true);
    assert.equal(o.error.code, 'RESQ_WORKER_DIED');
  }
  assert.match(r.results[3].error.message, /deliberate panic/);
  assert.equal(r.closed.ok, true, 'close() of a dead database resolves');
  assert.deepEqual(r.works, { ok: true, value: [{ x: 42 }] });
});

test('a worker script that cannot load rejects open() with RESQ_WORKER_DIED instead of hanging', async () => {
  rmSync(join(h.app, 'node_modules/resq-wasm/pkg/worker.js'));
  const r = await inPage(h.page, async ({ open, outcome }) => outcome(open('never.db')));
  assert.equal(r.ok, false);
  assert.equal(r.error.code, 'RESQ_WORKER_DIED');
});
