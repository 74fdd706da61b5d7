// Failures through the packed package: every bad input and every failing
// statement rejects with a ResqError carrying API.md's code, changes nothing,
// and leaves the database usable for the next call.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { ENGINE, start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

const SETUP = `
  PRAGMA foreign_keys = ON;
  CREATE TABLE t(id INTEGER PRIMARY KEY, a UNIQUE, b NOT NULL DEFAULT 0);
  INSERT INTO t(a, b) VALUES ('first', 1);
  CREATE TABLE parent(id INTEGER PRIMARY KEY);
  CREATE TABLE child(pid REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
`;

/**
 * In a fresh database set up with SETUP: runs `call` (JS source of a function
 * of `db` and `api`, the package's exports), then reports the error, whether
 * the tables and schema are what they were, and whether a transaction and a
 * reopen still work afterwards (in Node, whose databases live in memory
 * only, the rows are read before the close instead).
 */
function check(t, call) {
  return inPage(
    h.page,
    async (api, { name, setup, call, reopen }) => {
      const { open, describe } = api;
      const snapshot = async (db) =>
        JSON.stringify({
          t: await db.query('SELECT * FROM t ORDER BY id'),
          child: await db.query('SELECT * FROM child'),
          schema: await db.query('SELECT type, name FROM sqlite_schema ORDER BY name'),
        });
      let db = await open(name);
      await db.execute(setup);
      const before = await snapshot(db);
      let error = null;
      let value;
      try {
        value = await (0, eval)(`(${call})`)(db, api);
      } catch (e) {
        error = describe(e);
      }
      const unchanged = (await snapshot(db)) === before;
      // Usable: a transaction can begin (none was left open) and commits.
      await db.transaction((tx) => tx.execute("INSERT INTO t(a, b) VALUES ('next', 2)"));
      const rows = async () => (await db.query('SELECT a FROM t ORDER BY id')).map((r) => r.a);
      if (!reopen) {
        const kept = await rows();
        await db.close();
        return { error, value, unchanged, rowsAfterReopen: kept };
      }
      await db.close();
      db = await open(name);
      const stored = await rows();
      await db.close();
      return { error, value, unchanged, rowsAfterReopen: stored };
    },
    { name: dbName(t), setup: SETUP, call, reopen: ENGINE !== 'node' },
  );
}

/** Asserts `r` is a clean failure: the code, the message, nothing changed, still usable. */
function assertRejected(r, code, message, errno) {
  assert.ok(r.error, `expected a rejection, got ${JSON.stringify(r.value)}`);
  assert.equal(r.error.isResqError, true, 'a ResqError');
  assert.equal(r.error.isError, true, 'extends Error');
  assert.equal(r.error.name, 'ResqError');
  assert.equal(r.error.code, code);
  if (errno !== undefined) assert.equal(r.error.errno, errno);
  assert.match(r.error.message, message);
  assert.equal(r.unchanged, true, 'the database is unchanged');
  assert.deepEqual(r.rowsAfterReopen, ['first', 'next'], 'usable afterwards');
}

const POS = 'INSERT INTO t(a, b) VALUES (?, ?)';
const NAMED = 'INSERT INTO t(a, b) VALUES (:a, :b)';
/** A positional call whose 2nd value is `src` (JS source). */
const pos = (src) => `(db, api) => db.execute('${POS}', ['x', ${src}])`;
/** A named call whose :b is `src` (JS source). */
const named = (src) => `(db, api) => db.execute('${NAMED}', { a: 'x', b: ${src} })`;
/** JS source of a Uint8Array whose buffer is detached. */
const DETACHED = '(() => { const b = new Uint8Array(4); structuredClone(b.buffer, { transfer: [b.buffer] }); return b; })()';

const BAD_VALUES = [
  ['undefined', 'undefined'],
  ['NaN', 'NaN'],
  ['Infinity', 'Infinity'],
  ['-Infinity', '-Infinity'],
  ['a bigint above i64', '2n ** 63n'],
  ['a bigint below i64', '-(2n ** 63n) - 1n'],
  ['a string with a lone high surrogate', "'ok \\uD800'"],
  ['a string with a lone low surrogate', "'\\uDC00 ok'"],
  ['a plain object', '{ b: 1 }'],
  ['an array', '[1]'],
  ['a Date', 'new Date(0)'],
  ['a function', '() => 1'],
  ['a Symbol', "Symbol('s')"],
  ['a view over a detached buffer', DETACHED],
  ['a detached ArrayBuffer', `${DETACHED}.buffer`],
  ['transfer() of a detached view', `api.transfer(${DETACHED})`],
  ['transfer() of a detached ArrayBuffer', `api.transfer(${DETACHED}.buffer)`],
];

for (const [label, src] of BAD_VALUES) {
  test(`positional: ${label} is RESQ_BAD_PARAM naming "parameter 2"`, async (t) => {
    assertRejected(await check(t, pos(src)), 'RESQ_BAD_PARAM', /parameter 2\b/);
  });
  test(`named: ${label} is RESQ_BAD_PARAM naming ":b"`, async (t) => {
    assertRejected(await check(t, named(src)), 'RESQ_BAD_PARAM', /:b\b/);
  });
}

// [label, call (JS source of a function of db), code, message pattern, errno]
const FAILURES = [
  ['a missing positional parameter', `(db) => db.execute('${POS}', ['x'])`, 'RESQ_BAD_PARAM', /2 parameters.*1 value/],
  ['an extra positional parameter', `(db) => db.execute('${POS}', ['x', 1, 2])`, 'RESQ_BAD_PARAM', /2 parameters.*3 values/],
  ['no parameters for a statement that has some', `(db) => db.execute('${POS}')`, 'RESQ_BAD_PARAM', /2 parameters.*no values/],
  ['a missing named key', `(db) => db.execute('${NAMED}', { a: 'x' })`, 'RESQ_BAD_PARAM', /:b is missing/],
  ['an extra named key', `(db) => db.execute('${NAMED}', { a: 'x', b: 1, c: 2 })`, 'RESQ_BAD_PARAM', /`c`/],
  ['an object for ? parameters', `(db) => db.execute('${POS}', { a: 'x', b: 1 })`, 'RESQ_BAD_PARAM', /parameter 1 is positional/],
  ['parameters that are neither array nor object', `(db) => db.execute('${POS}', 'x')`, 'RESQ_BAD_PARAM', /array/],
  ['sql that is not a string', '(db) => db.query(42)', 'RESQ_BAD_PARAM', /sql/],
  [
    'execute with params and two statements',
    `(db) => db.execute("INSERT INTO t(a, b) VALUES (?, 1); INSERT INTO t(a, b) VALUES ('y', 1)", ['x'])`,
    'RESQ_BAD_PARAM',
    /one statement/,
  ],
  ['query with two statements', "(db) => db.query('SELECT 1; DELETE FROM t')", 'RESQ_BAD_PARAM', /one statement/],
  ['executeBatch with two statements', "(db) => db.executeBatch('DELETE FROM t; SELECT ?', [[1]])", 'RESQ_BAD_PARAM', /one statement/],
  ['executeBatch without an array of sets', "(db) => db.executeBatch('SELECT ?', 1)", 'RESQ_BAD_PARAM', /array/],
  ['transaction without a function', '(db) => db.transaction(42)', 'RESQ_BAD_PARAM', /function/],
  ['a SQL syntax error', "(db) => db.execute('SELEC a FROM t')", 'SQLITE_ERROR', /syntax error.*SELEC a FROM t/, 1],
  ['a syntax error in query', "(db) => db.query('SELECT FROM WHERE')", 'SQLITE_ERROR', /SELECT FROM WHERE/, 1],
  ['no such table', "(db) => db.query('SELECT * FROM nope')", 'SQLITE_ERROR', /no such table: nope.*SELECT \* FROM nope/, 1],
  [
    'a UNIQUE constraint violation',
    `(db) => db.execute('${POS}', ['first', 5])`,
    'SQLITE_CONSTRAINT_UNIQUE',
    /UNIQUE constraint failed: t\.a.*INSERT INTO t/,
    2067,
  ],
  [
    'a NOT NULL constraint violation',
    `(db) => db.execute('${POS}', ['x', null])`,
    'SQLITE_CONSTRAINT_NOTNULL',
    /NOT NULL constraint failed: t\.b/,
    1299,
  ],
  [
    'a PRIMARY KEY violation',
    "(db) => db.execute('INSERT INTO t(id, a, b) VALUES (1, ?, 1)', ['x'])",
    'SQLITE_CONSTRAINT_PRIMARYKEY',
    /UNIQUE constraint failed: t\.id/,
    1555,
  ],
  [
    'a script failing in its middle: nothing of it stays',
    `(db) => db.execute("CREATE TABLE u(x); INSERT INTO t(a, b) VALUES ('s1', 1); INSERT INTO t(a, b) VALUES ('first', 1); INSERT INTO t(a, b) VALUES ('s3', 1)")`,
    'SQLITE_CONSTRAINT_UNIQUE',
    /UNIQUE constraint failed/,
    2067,
  ],
  [
    'a script with a syntax error in its middle: nothing of it stays',
    `(db) => db.execute("INSERT INTO t(a, b) VALUES ('s1', 1); SELEC 2; INSERT INTO t(a, b) VALUES ('s3', 1)")`,
    'SQLITE_ERROR',
    /syntax error/,
    1,
  ],
  [
    'a script (no values) with a parameter in its 2nd statement: nothing of it stays',
    `(db) => db.execute("INSERT INTO t(a, b) VALUES ('s1', 1); INSERT INTO t(a, b) VALUES ('s2', ?)")`,
    'RESQ_BAD_PARAM',
    /parameters/,
  ],
  [
    'an executeBatch whose 3rd set violates UNIQUE: nothing stays',
    `(db) => db.executeBatch('${POS}', [['b1', 1], ['b2', 2], ['first', 3], ['b4', 4]])`,
    'SQLITE_CONSTRAINT_UNIQUE',
    /UNIQUE constraint failed/,
    2067,
  ],
  [
    'an executeBatch whose 3rd set has a bad value: nothing stays',
    `(db) => db.executeBatch('${POS}', [['b1', 1], ['b2', 2], ['b3', NaN], ['b4', 4]])`,
    'RESQ_BAD_PARAM',
    /parameter set 3.*parameter 2/,
  ],
  [
    'an executeBatch whose 3rd set has a function: nothing stays',
    `(db) => db.executeBatch('${POS}', [['b1', 1], ['b2', 2], ['b3', () => 1]])`,
    'RESQ_BAD_PARAM',
    /parameter 2/,
  ],
  [
    'an executeBatch whose 3rd set misses a value: nothing stays',
    `(db) => db.executeBatch('${POS}', [['b1', 1], ['b2', 2], ['b3']])`,
    'RESQ_BAD_PARAM',
    /parameter set 3/,
  ],
  [
    'a statement failing inside a transaction, not caught: nothing stays',
    `(db) => db.transaction(async (tx) => {
       await tx.execute("INSERT INTO t(a, b) VALUES ('in tx', 1)");
       await tx.execute('${POS}', ['first', 1]);
     })`,
    'SQLITE_CONSTRAINT_UNIQUE',
    /UNIQUE constraint failed/,
    2067,
  ],
  [
    'a deferred foreign key failing at COMMIT of a transaction',
    `(db) => db.transaction(async (tx) => {
       await tx.execute("INSERT INTO t(a, b) VALUES ('in tx', 1)");
       await tx.execute('INSERT INTO child(pid) VALUES (99)');
     })`,
    'SQLITE_CONSTRAINT_FOREIGNKEY',
    /FOREIGN KEY constraint failed/,
    787,
  ],
  [
    'a deferred foreign key failing at the end of a script',
    `(db) => db.execute("INSERT INTO t(a, b) VALUES ('s1', 1); INSERT INTO child(pid) VALUES (99)")`,
    'SQLITE_CONSTRAINT_FOREIGNKEY',
    /FOREIGN KEY constraint failed/,
    787,
  ],
  [
    'a deferred foreign key failing at the end of an executeBatch',
    "(db) => db.executeBatch('INSERT INTO child(pid) VALUES (?)', [[98], [99]])",
    'SQLITE_CONSTRAINT_FOREIGNKEY',
    /FOREIGN KEY constraint failed/,
    787,
  ],
  [
    'a deferred foreign key failing in a single statement',
    "(db) => db.execute('INSERT INTO child(pid) VALUES (?)', [99])",
    'SQLITE_CONSTRAINT_FOREIGNKEY',
    /FOREIGN KEY constraint failed/,
    787,
  ],
];

for (const [label, call, code, message, errno] of FAILURES) {
  test(`${label} → ${code}`, async (t) => {
    assertRejected(await check(t, call), code, message, errno);
  });
}

test('a throw inside transaction rejects with that error and leaves nothing', async (t) => {
  const r = await check(
    t,
    `(db) => db.transaction(async (tx) => {
       await tx.execute("INSERT INTO t(a, b) VALUES ('in tx', 1)");
       await tx.executeBatch('${POS}', [['x1', 1], ['x2', 2]]);
       throw new RangeError('changed my mind');
     })`,
  );
  assert.equal(r.error.isResqError, false);
  assert.equal(r.error.name, 'RangeError');
  assert.equal(r.error.message, 'changed my mind');
  assert.equal(r.unchanged, true);
  assert.deepEqual(r.rowsAfterReopen, ['first', 'next']);
});

test('a failure caught inside transaction does not undo the rest: the callback decides', async (t) => {
  const r = await check(
    t,
    `async (db) => {
       const { code } = await db.transaction(async (tx) => {
         await tx.execute("INSERT INTO t(a, b) VALUES ('kept', 1)");
         return tx.execute('${POS}', ['first', 1]).catch((e) => e);
       });
       return code;
     }`,
  );
  assert.equal(r.error, null);
  assert.equal(r.value, 'SQLITE_CONSTRAINT_UNIQUE');
  assert.deepEqual(r.rowsAfterReopen, ['first', 'kept', 'next']);
});

test('transfer() of something that is not bytes throws RESQ_BAD_PARAM', async () => {
  const got = await inPage(h.page, async ({ transfer, describe }) => {
    const out = {};
    for (const [label, value] of [
      ['a string', 'bytes'],
      ['an array of numbers', [1, 2, 3]],
      ['null', null],
      ['a Blob', new Blob(['x'])],
    ]) {
      try {
        transfer(value);
        out[label] = 'no throw';
      } catch (e) {
        out[label] = describe(e);
      }
    }
    return out;
  });
  for (const [label, e] of Object.entries(got)) {
    assert.equal(e.isResqError, true, label);
    assert.equal(e.code, 'RESQ_BAD_PARAM', label);
  }
});
