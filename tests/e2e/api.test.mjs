// The core contract of API.md, method by method, through the packed package
// in Chromium: open, execute, query, queryBytes, executeBatch, transaction,
// close, and the order in which calls complete.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { notInNode, start } from './harness.mjs';
import { inPage, withDb, dbName } from './util.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

const run = (body, arg) => inPage(h.page, body, arg);
const onDb = (t, body, opts) => withDb(h.page, dbName(t), body, opts);

test('open() keeps a named database (OPFS, or IndexedDB where there are no sync access handles): the data outlives close', {
  skip: notInNode('it reopens the database, and Node keeps none after close'),
}, async (t) => {
  const got = await run(async ({ open }, name) => {
    const a = await open(name);
    await a.execute('CREATE TABLE t(x)');
    await a.execute('INSERT INTO t VALUES (42)');
    await a.close();
    const b = await open(name);
    const rows = await b.query('SELECT x FROM t');
    await b.close();
    return rows;
  }, dbName(t));
  assert.deepEqual(got, [{ x: 42 }]);
});

test("open(name, { storage: 'memory' }) keeps nothing after close", async (t) => {
  const got = await run(async ({ open, outcome }, name) => {
    const a = await open(name, { storage: 'memory' });
    await a.execute('CREATE TABLE t(x)');
    await a.execute('INSERT INTO t VALUES (1)');
    const during = await a.query('SELECT x FROM t');
    await a.close();
    const b = await open(name, { storage: 'memory' });
    const after = await outcome(b.query('SELECT x FROM t'));
    await b.close();
    return { during, after };
  }, dbName(t));
  assert.deepEqual(got.during, [{ x: 1 }]);
  assert.equal(got.after.ok, false);
  assert.equal(got.after.error.code, 'SQLITE_ERROR');
  assert.match(got.after.error.message, /no such table: t/);
});

test("open(':memory:') gives a private database each time", async () => {
  const got = await run(async ({ open, outcome }) => {
    const a = await open(':memory:');
    const b = await open(':memory:');
    await a.execute('CREATE TABLE t(x)');
    const inB = await outcome(b.query('SELECT * FROM t'));
    await Promise.all([a.close(), b.close()]);
    return inB;
  });
  assert.equal(got.ok, false);
  assert.match(got.error.message, /no such table: t/);
});

test('open() rejects a storage it does not know with RESQ_BAD_PARAM', async (t) => {
  const got = await run(async ({ open, outcome }, name) => outcome(open(name, { storage: 'disk' })), dbName(t));
  assert.equal(got.ok, false);
  assert.equal(got.error.isResqError, true);
  assert.equal(got.error.code, 'RESQ_BAD_PARAM');
});

test('open() refuses an option it does not know with RESQ_BAD_PARAM naming it', async (t) => {
  const got = await run(async ({ open, outcome }, name) => {
    const misspelt = await outcome(open(name, { storge: 'memory' }));
    const badTimeout = await outcome(open(name, { transactionTimeout: -1 }));
    const notObject = await outcome(open(name, 'opfs'));
    const db = await open(name, { storage: 'memory', transactionTimeout: 100 });
    const tables = await db.query('SELECT count(*) AS n FROM sqlite_schema');
    await db.close();
    return { misspelt, badTimeout, notObject, tables };
  }, dbName(t));
  for (const k of ['misspelt', 'badTimeout', 'notObject']) {
    assert.equal(got[k].ok, false, k);
    assert.equal(got[k].error.isResqError, true, k);
    assert.equal(got[k].error.code, 'RESQ_BAD_PARAM', k);
  }
  assert.match(got.misspelt.error.message, /"storge"/);
  assert.deepEqual(got.tables, [{ n: 0 }]);
});

test('execute with params runs one statement and returns changes and lastInsertRowid', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)');
    const first = await db.execute('INSERT INTO t(name) VALUES (?)', ['a']);
    const second = await db.execute('INSERT INTO t(name) VALUES (?)', ['b']);
    const update = await db.execute('UPDATE t SET name = upper(name) WHERE id >= ?', [1]);
    return { first, second, update, rows: await db.query('SELECT id, name FROM t ORDER BY id') };
  });
  assert.deepEqual(got.first, { changes: 1, lastInsertRowid: 1 });
  assert.deepEqual(got.second, { changes: 1, lastInsertRowid: 2 });
  assert.equal(got.update.changes, 2);
  assert.deepEqual(got.rows, [
    { id: 1, name: 'A' },
    { id: 2, name: 'B' },
  ]);
});

test("execute without params runs a script; the figures are the last statement's", async (t) => {
  const got = await onDb(t, async (db) => {
    const r = await db.execute(`
      CREATE TABLE t(id INTEGER PRIMARY KEY, x);
      INSERT INTO t(x) VALUES (1), (2), (3);
      -- a comment between statements
      INSERT INTO t(x) VALUES (4), (5);
    `);
    return { r, rows: await db.query('SELECT x FROM t ORDER BY id') };
  });
  assert.deepEqual(got.r, { changes: 2, lastInsertRowid: 5 });
  assert.deepEqual(
    got.rows.map((r) => r.x),
    [1, 2, 3, 4, 5],
  );
});

test('query returns one object per row, keyed by column name in column order', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL)');
    await db.execute("INSERT INTO t(name, score) VALUES ('a', 1.5), ('b', NULL), ('c', 3)");
    const rows = await db.query('SELECT name, id, score FROM t WHERE id > ? ORDER BY id', [1]);
    const none = await db.query('SELECT * FROM t WHERE id > 100');
    return { rows, keys: Object.keys(rows[0]), none };
  });
  assert.deepEqual(got.rows, [
    { name: 'b', id: 2, score: null },
    { name: 'c', id: 3, score: 3 },
  ]);
  assert.deepEqual(got.keys, ['name', 'id', 'score']);
  assert.deepEqual(got.none, []);
});

test('queryBytes returns UTF-8 JSON text, keys in column order', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, data BLOB); INSERT INTO t VALUES (1, 'cat.jpg', x'ffd8ff')");
    const bytes = await db.queryBytes('SELECT id, name, data FROM t WHERE name LIKE ?', ['%cat%']);
    const empty = await db.queryBytes('SELECT * FROM t WHERE id = 99');
    return { isBytes: bytes instanceof Uint8Array, text: new TextDecoder().decode(bytes), empty: new TextDecoder().decode(empty) };
  });
  assert.equal(got.isBytes, true);
  assert.equal(got.text, '[{"id":1,"name":"cat.jpg","data":"/9j/"}]');
  assert.equal(got.empty, '[]');
});

test('executeBatch runs one statement per set in one transaction; changes is the total', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER)');
    const insert = await db.executeBatch('INSERT INTO t(name, n) VALUES (?, ?)', [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]);
    const update = await db.executeBatch('UPDATE t SET n = n * 10 WHERE name = :name', [{ name: 'b' }, { name: 'c' }, { name: 'zz' }]);
    const named = await db.executeBatch('INSERT INTO t(name, n) VALUES (:name, :n)', [{ name: 'd', n: 4 }]);
    const empty = await db.executeBatch('INSERT INTO t(name, n) VALUES (?, ?)', []);
    return { insert, update, named, empty, rows: await db.query('SELECT name, n FROM t ORDER BY id') };
  });
  assert.deepEqual(got.insert, { changes: 3, lastInsertRowid: 3 });
  assert.equal(got.update.changes, 2); // 1 row, 1 row, none
  assert.deepEqual(got.named, { changes: 1, lastInsertRowid: 4 });
  assert.equal(got.empty.changes, 0);
  assert.deepEqual(got.rows, [
    { name: 'a', n: 1 },
    { name: 'b', n: 20 },
    { name: 'c', n: 30 },
    { name: 'd', n: 4 },
  ]);
});

test('executeBatch is one transaction: a later reader sees all sets or none', async (t) => {
  const got = await onDb(t, async (db, { outcome }) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, x UNIQUE)');
    const ok = await outcome(db.executeBatch('INSERT INTO t(x) VALUES (?)', [[1], [2]]));
    const failed = await outcome(db.executeBatch('INSERT INTO t(x) VALUES (?)', [[3], [4], [1], [5]]));
    return { ok, failed, rows: await db.query('SELECT x FROM t ORDER BY x') };
  });
  assert.equal(got.ok.ok, true);
  assert.equal(got.failed.error.code, 'SQLITE_CONSTRAINT_UNIQUE');
  assert.deepEqual(got.rows, [{ x: 1 }, { x: 2 }]);
});

test('transaction commits when the callback resolves and returns its value; tx has every call', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, x)');
    const value = await db.transaction(async (tx) => {
      const a = await tx.execute('INSERT INTO t(x) VALUES (?)', [1]);
      const b = await tx.executeBatch('INSERT INTO t(x) VALUES (?)', [[2], [3]]);
      const rows = await tx.query('SELECT count(*) AS n FROM t');
      const text = new TextDecoder().decode(await tx.queryBytes('SELECT max(x) AS m FROM t'));
      return { a, b, n: rows[0].n, text };
    });
    return { value, rows: await db.query('SELECT x FROM t ORDER BY x') };
  });
  assert.deepEqual(got.value, {
    a: { changes: 1, lastInsertRowid: 1 },
    b: { changes: 2, lastInsertRowid: 3 },
    n: 3,
    text: '[{"m":3}]',
  });
  assert.deepEqual(got.rows, [{ x: 1 }, { x: 2 }, { x: 3 }]);
});

test("transaction rolls back and re-throws the callback's own error, the same object", async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE t(x)');
    const mine = new TypeError('mine');
    mine.extra = 7;
    let caught;
    try {
      await db.transaction(async (tx) => {
        await tx.execute('INSERT INTO t VALUES (1)');
        throw mine;
      });
    } catch (e) {
      caught = e;
    }
    // A thrown non-Error value comes back as it is, too.
    const token = { reason: 'not an Error' };
    let caughtToken;
    try {
      await db.transaction(async (tx) => {
        await tx.execute('INSERT INTO t VALUES (2)');
        throw token;
      });
    } catch (e) {
      caughtToken = e;
    }
    return {
      same: caught === mine,
      extra: caught?.extra,
      sameToken: caughtToken === token,
      rows: await db.query('SELECT x FROM t'),
    };
  });
  assert.deepEqual(got, { same: true, extra: 7, sameToken: true, rows: [] });
});

test('calls on db made during a transaction wait until it ends', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE t(x)');
    const log = [];
    let committedView;
    await db.transaction(async (tx) => {
      await tx.execute('INSERT INTO t VALUES (1)');
      committedView = db.query('SELECT count(*) AS n FROM t').then((r) => {
        log.push('db.query');
        return r[0].n;
      });
      await tx.execute('INSERT INTO t VALUES (2)');
      await tx.query('SELECT * FROM t');
      log.push('callback end');
    });
    const afterCommit = await committedView;

    let rolledBackView;
    await db
      .transaction(async (tx) => {
        await tx.execute('INSERT INTO t VALUES (3)');
        rolledBackView = db.query('SELECT count(*) AS n FROM t').then((r) => r[0].n);
        throw new Error('undo');
      })
      .catch(() => {});
    return { log, afterCommit, afterRollback: await rolledBackView };
  });
  assert.deepEqual(got.log, ['callback end', 'db.query']);
  assert.equal(got.afterCommit, 2);
  assert.equal(got.afterRollback, 2);
});

test('parameters are taken when the call is made, even if it waits for a transaction', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v)');
    let waiting;
    await db.transaction(async (tx) => {
      await tx.execute('INSERT INTO t(v) VALUES (0)');
      const small = new Uint8Array([1, 2, 3]);
      const params = [small];
      waiting = db.execute('INSERT INTO t(v) VALUES (?)', params);
      // The caller reuses its buffer and its array while the call waits.
      small.fill(9);
      params[0] = 'changed';
    });
    await waiting;
    return (await db.query('SELECT v FROM t WHERE id = 2')).map((r) => Array.from(r.v));
  });
  assert.deepEqual(got, [[1, 2, 3]]);
});

test('lastInsertRowid is a number inside ±(2^53-1) and a bigint outside', async (t) => {
  const got = await onDb(t, async (db, { plain }) => {
    await db.execute('CREATE TABLE t(x)');
    const out = [];
    for (const rowid of [2n ** 53n - 1n, 2n ** 53n, 2n ** 60n, -(2n ** 53n) + 1n, -(2n ** 60n)]) {
      out.push(plain((await db.execute('INSERT INTO t(rowid, x) VALUES (?, 1)', [rowid])).lastInsertRowid));
    }
    return out;
  });
  assert.deepEqual(got, [
    9007199254740991,
    { bigint: '9007199254740992' },
    { bigint: '1152921504606846976' },
    -9007199254740991,
    { bigint: '-1152921504606846976' },
  ]);
});

test('close: later calls reject with RESQ_CLOSED, a second close resolves, earlier calls complete', {
  skip: notInNode('it reopens the database, and Node keeps none after close'),
}, async (t) => {
  const got = await run(async ({ open, outcome }, name) => {
    const db = await open(name);
    await db.execute('CREATE TABLE t(x)');
    const before = db.execute('INSERT INTO t VALUES (1)');
    const closing = db.close();
    const calls = {
      execute: db.execute('SELECT 1'),
      query: db.query('SELECT 1'),
      queryBytes: db.queryBytes('SELECT 1'),
      executeBatch: db.executeBatch('SELECT ?', [[1]]),
      transaction: db.transaction(async () => 1),
    };
    const out = { before: await outcome(before), close: await outcome(closing), after: {} };
    for (const [k, p] of Object.entries(calls)) out.after[k] = await outcome(p);
    out.secondClose = await outcome(db.close());
    out.lateCall = await outcome(db.query('SELECT 1'));
    const again = await open(name);
    out.stored = await again.query('SELECT x FROM t');
    await again.close();
    return out;
  }, dbName(t));
  assert.deepEqual(got.before, { ok: true, value: { changes: 1, lastInsertRowid: 1 } });
  assert.equal(got.close.ok, true);
  for (const [method, r] of Object.entries({ ...got.after, lateCall: got.lateCall })) {
    assert.equal(r.ok, false, method);
    assert.equal(r.error.isResqError, true, method);
    assert.equal(r.error.code, 'RESQ_CLOSED', method);
  }
  assert.equal(got.secondClose.ok, true);
  assert.deepEqual(got.stored, [{ x: 1 }]);
});

test('1,000 concurrent calls resolve in call order', async (t) => {
  const got = await onDb(t, async (db) => {
    const order = [];
    const calls = [];
    for (let i = 0; i < 1000; i++) {
      calls.push(
        db.query('SELECT ? AS i', [i]).then((rows) => {
          order.push(i);
          return rows[0].i;
        }),
      );
    }
    return { values: await Promise.all(calls), order };
  });
  const expected = Array.from({ length: 1000 }, (_, i) => i);
  assert.deepEqual(got.values, expected);
  assert.deepEqual(got.order, expected);
});

test('calls complete in call order, failures included', async (t) => {
  const got = await run(async ({ open }, name) => {
    const db = await open(name);
    const order = [];
    const calls = [];
    const track = (label, p) =>
      calls.push(
        p.then(
          () => order.push(`${label} ok`),
          () => order.push(`${label} failed`),
        ),
      );
    for (let i = 0; i < 30; i++) {
      if (i % 3 === 0) track(i, db.query('SELECT ? AS i', [i]));
      if (i % 3 === 1) track(i, db.query('SELEC ?', [i])); // SQLite refuses it, in the worker
      if (i % 3 === 2) track(i, db.query('SELECT ?', [() => i])); // the page refuses it
    }
    track('close', db.close());
    track('after close', db.query('SELECT 1'));
    await Promise.all(calls);
    return order;
  }, dbName(t));
  const expected = Array.from({ length: 30 }, (_, i) => `${i} ${i % 3 === 0 ? 'ok' : 'failed'}`);
  assert.deepEqual(got, [...expected, 'close ok', 'after close failed']);
});
