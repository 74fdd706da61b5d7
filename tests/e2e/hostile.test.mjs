// Hostile inputs, one row per class (hostile-kit.mjs runs them): bad values
// and shapes, bad BLOBs, SQL and constraint failures, and inputs too large
// or too deep, from hostile-rows.mjs; and SQL too long for wasm memory.
// hostile-misuse.test.mjs runs the misuse rows: two files, so that the two
// halves run side by side.

import { after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { BAD_VALUES, BAD_SHAPES, BAD_BLOBS, SQL_ERRORS, LIMITS } from './hostile-rows.mjs';
import { CLOSED_CALLS, TRANSACTIONS, RAW_MESSAGES, DAMAGED_FILES, NAMES, OPEN_NAMES } from './hostile-misuse.mjs';
import { rowTests } from './hostile-kit.mjs';

const TABLE = [
  ['value', BAD_VALUES],
  ['shape', BAD_SHAPES],
  ['blob', BAD_BLOBS],
  ['sql', SQL_ERRORS],
  ['limit', LIMITS],
];
rowTests(TABLE);

let hp;
after(async () => {
  await hp?.close();
});

test('the table has at least 40 classes that must fail, each with its code', () => {
  // Both files' rows: this one's and hostile-misuse.test.mjs's.
  const all = [
    BAD_VALUES,
    BAD_SHAPES,
    BAD_BLOBS,
    SQL_ERRORS,
    LIMITS,
    CLOSED_CALLS,
    TRANSACTIONS,
    RAW_MESSAGES,
    DAMAGED_FILES,
    NAMES,
    OPEN_NAMES,
  ].flat();
  const failing = all.filter((r) => r.code !== null);
  assert.ok(failing.length >= 40, `${failing.length}`);
  assert.equal(new Set(all.map((r) => r.name)).size, all.length, 'class names are unique');
});

test('100 MB of SQL is refused before it reaches wasm memory: the worker grows by at most 2 MB', async (t) => {
  // The probe worker reports the instance's memory (the package has no such hook).
  hp = await start({ probe: {} });
  const name = dbName(t);
  const r = await inPage(
    hp.page,
    async ({ open, outcome, probe }, name) => {
      const db = await open(name);
      await db.query('SELECT 1');
      const before = await probe(name, 'memory');
      const refused = await outcome(db.query(`SELECT length('${'x'.repeat(100 << 20)}') AS n`));
      const after = await probe(name, 'memory');
      const next = await outcome(db.query('SELECT 1 AS x'));
      await db.close();
      return { before, after, code: refused.error?.code, next };
    },
    name,
  );
  assert.equal(r.code, 'SQLITE_TOOBIG');
  // The worker cuts the text to just over the limit before the wasm copies
  // it: the refusal costs at most about 1 MB, not 100.
  assert.ok(r.after - r.before <= 2 << 20, `wasm memory grew from ${r.before} to ${r.after} bytes`);
  assert.ok(r.after < 16 << 20, `wasm memory ${r.after} bytes`);
  assert.deepEqual(r.next, { ok: true, value: [{ x: 1 }] });
});
