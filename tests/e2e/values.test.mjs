// Values through the packed package: API.md's parameter table in, `query`
// and `queryBytes` out, named and numbered parameters, duplicate column
// names, and who owns the bytes of a BLOB parameter.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { withDb, dbName, bytes } from './util.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

const onDb = (t, body, arg) => withDb(h.page, dbName(t), body, { arg });

const I64_MAX = '9223372036854775807';
const I64_MIN = '-9223372036854775808';
const str = (s) => [JSON.stringify(s), 'text', s];

// [label, the parameter as JS source (evaluated in the page), typeof() in SQLite, what query() gives back]
const CASES = [
  ['null', 'null', 'null', null],
  ['true', 'true', 'integer', 1],
  ['false', 'false', 'integer', 0],
  ['0', '0', 'integer', 0],
  ['-1', '-1', 'integer', -1],
  ['-0 is REAL', '-0', 'real', { number: '-0' }],
  ['1.5', '1.5', 'real', 1.5],
  ['-2.25', '-2.25', 'real', -2.25],
  ['2^53-1 as a number', '2 ** 53 - 1', 'integer', 9007199254740991],
  ['-(2^53-1) as a number', '-(2 ** 53 - 1)', 'integer', -9007199254740991],
  ['2^53 as a number is not safe: REAL', '2 ** 53', 'real', 9007199254740992],
  ['a small bigint comes back as a number', '5n', 'integer', 5],
  ['2^53+1 via bigint comes back as a bigint', '2n ** 53n + 1n', 'integer', { bigint: '9007199254740993' }],
  ['-(2^53+1) via bigint', '-(2n ** 53n + 1n)', 'integer', { bigint: '-9007199254740993' }],
  ['i64 max', '2n ** 63n - 1n', 'integer', { bigint: I64_MAX }],
  ['i64 min', '-(2n ** 63n)', 'integer', { bigint: I64_MIN }],
  ['1e308', '1e308', 'real', 1e308],
  ['-1e308', '-1e308', 'real', -1e308],
  ['Number.MAX_VALUE', 'Number.MAX_VALUE', 'real', Number.MAX_VALUE],
  ['denormal 5e-324', '5e-324', 'real', 5e-324],
  ['0.1', '0.1', 'real', 0.1],
  ['empty string', ...str('')],
  ['ASCII', ...str('hello')],
  ['emoji', ...str('🐈‍⬛ cat 😀 ﷽ 𝄞')],
  ['quotes and backslashes', ...str(`"double" 'single' \`back\` \\ / \\u0041`)],
  ['control characters', ...str('\u0000nul\u0001\u0008\t\n\f\r\u001b\u001f\u007f\u0085\u2028\u2029')],
  ['SQL-looking text', ...str("'); DROP TABLE vals; --")],
  ['two-byte UTF-8', ...str('café ñ ß Ωμέγα')],
  ['a long string of every UTF-8 width', ...str('aé€𝄞'.repeat(40))],
  ['BLOB of 0 bytes', 'new Uint8Array(0)', 'blob', bytes()],
  ['BLOB of 1 byte', 'new Uint8Array([0])', 'blob', bytes(0)],
  ['BLOB of 2 bytes', 'new Uint8Array([0, 255])', 'blob', bytes(0, 255)],
  ['BLOB of 3 bytes', 'new Uint8Array([1, 2, 3])', 'blob', bytes(1, 2, 3)],
  ['BLOB of 4 bytes', 'new Uint8Array([0, 1, 254, 255])', 'blob', bytes(0, 1, 254, 255)],
  ['a view with a byte offset: only its bytes', 'new Uint8Array(new Uint8Array([9, 9, 1, 2, 3, 9]).buffer, 2, 3)', 'blob', bytes(1, 2, 3)],
  ['an ArrayBuffer', 'new Uint8Array([4, 5, 6]).buffer', 'blob', bytes(4, 5, 6)],
  ['an Int16Array (its bytes, little-endian)', 'new Int16Array([1, -2])', 'blob', bytes(1, 0, 254, 255)],
  ['an Int16Array view with an offset', 'new Int16Array(new Int16Array([7, 258, 9]).buffer, 2, 1)', 'blob', bytes(2, 1)],
  ['a DataView', 'new DataView(new Uint8Array([7, 8, 9]).buffer, 1)', 'blob', bytes(8, 9)],
  ['a Float64Array', 'new Float64Array([1])', 'blob', bytes(0, 0, 0, 0, 0, 0, 240, 63)],
];

/** What queryBytes must say for a value query() gives back as `expected`. */
function jsonFor(expected) {
  if (expected?.bytes) return JSON.stringify(Buffer.from(expected.bytes).toString('base64'));
  if (expected?.bigint) return expected.bigint;
  if (expected?.number === '-0') return '-0';
  return null; // compared after JSON.parse
}

test('values round-trip through query and queryBytes, stored and bound directly', async (t) => {
  const got = await onDb(
    t,
    async (db, { plain }, sources) => {
      await db.execute('CREATE TABLE vals(id INTEGER PRIMARY KEY, v)'); // no type: no affinity
      const out = [];
      for (const [i, src] of sources.entries()) {
        const value = (0, eval)(`(${src})`);
        await db.execute('INSERT INTO vals(id, v) VALUES (?, ?)', [i, value]);
        const [stored] = await db.query('SELECT v, typeof(v) AS t FROM vals WHERE id = ?', [i]);
        const [direct] = await db.query('SELECT ?1 AS v, typeof(?1) AS t', [value]);
        const json = new TextDecoder().decode(await db.queryBytes('SELECT v FROM vals WHERE id = ?', [i]));
        const own = stored.v instanceof Uint8Array ? stored.v.byteOffset === 0 && stored.v.buffer.byteLength === stored.v.byteLength : null;
        out.push({ stored: plain(stored), direct: plain(direct), json, own });
      }
      return out;
    },
    CASES.map((c) => c[1]),
  );
  for (const [i, [label, , type, expected]] of CASES.entries()) {
    await t.test(label, () => {
      const r = got[i];
      assert.deepEqual(r.stored, { v: expected, t: type }, 'stored, then read by query');
      assert.deepEqual(r.direct, { v: expected, t: type }, 'bound and selected directly');
      const exact = jsonFor(expected);
      if (exact !== null) assert.equal(r.json, `[{"v":${exact}}]`, 'queryBytes');
      else assert.deepEqual(JSON.parse(r.json), [{ v: expected }], 'queryBytes');
      if (type === 'blob') assert.equal(r.own, true, 'a BLOB is a Uint8Array with its own buffer');
    });
  }
});

test('executeBatch stores every value as execute does, in array sets and in object sets', async (t) => {
  // The page encodes such batches into one buffer (src/js/batch.ts); a set
  // holding a Blob goes the other way, and so does this one's last batch.
  const got = await onDb(
    t,
    async (db, { plain }, sources) => {
      await db.execute('CREATE TABLE vals(id INTEGER PRIMARY KEY, v)');
      const values = sources.map((src) => (0, eval)(`(${src})`));
      const n = values.length;
      await db.executeBatch(
        'INSERT INTO vals(id, v) VALUES (?, ?)',
        values.map((v, i) => [i, v]),
      );
      await db.executeBatch(
        'INSERT INTO vals(v, id) VALUES (:v, $id)',
        values.map((v, i) => ({ v, id: n + i })),
      );
      await db.executeBatch('INSERT INTO vals(id, v) VALUES (?, ?)', [...values.map((v, i) => [2 * n + i, v]), [3 * n, new Blob(['b'])]]);
      const rows = await db.query('SELECT id, v, typeof(v) AS t FROM vals ORDER BY id');
      return rows.map((r) => plain({ v: r.v, t: r.t }));
    },
    CASES.map((c) => c[1]),
  );
  const n = CASES.length;
  assert.equal(got.length, 3 * n + 1, 'every row stored');
  for (const [i, [label, , type, expected]] of CASES.entries()) {
    await t.test(label, () => {
      assert.deepEqual(got[i], { v: expected, t: type }, 'array set');
      assert.deepEqual(got[n + i], { v: expected, t: type }, 'object set');
      assert.deepEqual(got[2 * n + i], { v: expected, t: type }, 'a batch with a Blob');
    });
  }
});

test('executeBatch: a value the encoding has no place for is refused as in execute, and nothing of the batch stays', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute('CREATE TABLE vals(id INTEGER PRIMARY KEY, v)');
    const sets = (bad) => [
      [1, 'a'],
      [2, 'b'],
      [3, bad],
      [4, 'd'],
    ];
    const cases = {
      short: '\uD800 lone',
      long: `${'x'.repeat(100)}\uDC00`,
      big: 2n ** 64n,
      undef: undefined,
      nan: NaN,
    };
    const out = {};
    for (const [k, v] of Object.entries(cases)) {
      try {
        await db.executeBatch('INSERT INTO vals(id, v) VALUES (?, ?)', sets(v));
        out[k] = 'stored';
      } catch (e) {
        out[k] = `${e.code}: ${e.message}`;
      }
    }
    out.key = await db.executeBatch('INSERT INTO vals(id, v) VALUES (:id, :v)', [{ id: 1, v: 1, '\uD800': 1 }]).then(
      () => 'stored',
      (e) => `${e.code}: ${e.message}`,
    );
    out.rows = (await db.query('SELECT count(*) AS n FROM vals'))[0].n;
    await db.executeBatch('INSERT INTO vals(id, v) VALUES (?, ?)', sets('c'));
    out.after = (await db.query('SELECT count(*) AS n FROM vals'))[0].n;
    return out;
  });
  assert.match(got.short, /^RESQ_BAD_PARAM: parameter set 3: parameter 2: the string has a lone surrogate/);
  assert.match(got.long, /^RESQ_BAD_PARAM: parameter set 3: parameter 2: the string has a lone surrogate/);
  assert.match(got.big, /^RESQ_BAD_PARAM: parameter set 3: parameter 2: the bigint is outside the 64-bit integer range/);
  assert.match(got.undef, /^RESQ_BAD_PARAM: parameter set 3: parameter 2: undefined is not a SQLite value/);
  assert.match(got.nan, /^RESQ_BAD_PARAM: parameter set 3: parameter 2: NaN is not a finite number/);
  assert.match(got.key, /^RESQ_BAD_PARAM: parameter set 1: /);
  assert.equal(got.rows, 0, 'nothing of a refused batch stays');
  assert.equal(got.after, 4, 'the next batch works');
});

test('JSON.parse(queryBytes) equals query, except BLOB (base64) and bigint columns', async (t) => {
  const got = await onDb(
    t,
    async (db, { plain }, sources) => {
      await db.execute('CREATE TABLE vals(id INTEGER PRIMARY KEY, v, w TEXT, x REAL)');
      await db.executeBatch(
        "INSERT INTO vals(id, v, w, x) VALUES (?, ?, 'row ' || ?1, ?1 / 3.0)",
        sources.map((src, i) => [i, (0, eval)(`(${src})`)]),
      );
      const sql = 'SELECT id, v, typeof(v) AS t, w, x FROM vals ORDER BY id';
      return { rows: plain(await db.query(sql)), json: new TextDecoder().decode(await db.queryBytes(sql)) };
    },
    CASES.map((c) => c[1]),
  );
  const parsed = JSON.parse(got.json);
  assert.equal(parsed.length, CASES.length);
  assert.equal(got.rows.length, CASES.length);
  for (const [i, row] of got.rows.entries()) {
    const fromJson = parsed[i];
    assert.deepEqual(Object.keys(fromJson), Object.keys(row), `row ${i}: same keys, same order`);
    for (const [k, v] of Object.entries(row)) {
      if (v?.bytes) assert.equal(fromJson[k], Buffer.from(v.bytes).toString('base64'), `row ${i}.${k}`);
      else if (v?.bigint)
        assert.equal(fromJson[k], Number(v.bigint), `row ${i}.${k}`); // JSON.parse rounds; digits checked below
      else if (v?.number === '-0') assert.ok(Object.is(fromJson[k], -0), `row ${i}.${k}`);
      else assert.deepEqual(fromJson[k], v, `row ${i}.${k}`);
    }
  }
  // Big integers keep all their digits in the JSON text.
  for (const digits of [I64_MAX, I64_MIN, '9007199254740993']) assert.ok(got.json.includes(`"v":${digits},`), digits);
});

test('REAL infinities: queryBytes spells them 1e999 / -1e999, query gives ±Infinity', async (t) => {
  const got = await onDb(t, async (db, { plain }) => {
    const sql = 'SELECT 1e999 AS p, -1e999 AS n';
    return { rows: plain(await db.query(sql)), json: new TextDecoder().decode(await db.queryBytes(sql)) };
  });
  assert.deepEqual(got.rows, [{ p: { number: 'Infinity' }, n: { number: '-Infinity' } }]);
  assert.equal(got.json, '[{"p":1e999,"n":-1e999}]');
});

test('BLOBs around the transfer threshold and of 1 MB come back byte for byte', async (t) => {
  const got = await onDb(t, async (db, { DEFAULT_BLOB_TRANSFER_THRESHOLD: T }) => {
    await db.execute('CREATE TABLE b(id INTEGER PRIMARY KEY, data BLOB)');
    const out = [];
    for (const size of [T - 1, T, T + 1, 1 << 20]) {
      const data = new Uint8Array(size);
      for (let i = 0; i < size; i++) data[i] = (i * 31 + (i >> 8)) & 255;
      const { lastInsertRowid: id } = await db.execute('INSERT INTO b(data) VALUES (?)', [data]);
      const [row] = await db.query('SELECT data, length(data) AS n FROM b WHERE id = ?', [id]);
      const [parsed] = JSON.parse(new TextDecoder().decode(await db.queryBytes('SELECT data FROM b WHERE id = ?', [id])));
      const fromBase64 = Uint8Array.from(atob(parsed.data), (c) => c.charCodeAt(0));
      const same = (a) => a.length === size && a.every((x, i) => x === data[i]);
      out.push({ size, n: row.n, query: row.data instanceof Uint8Array && same(row.data), queryBytes: same(fromBase64) });
    }
    return out;
  });
  for (const r of got) assert.deepEqual(r, { size: r.size, n: r.size, query: true, queryBytes: true });
});

test('values reach 2 GiB − 1: SQL has the limit, and a File or SQL value one byte over is SQLITE_TOOBIG naming it, with nothing stored', async (t) => {
  const got = await onDb(t, async (db) => {
    const fail = (p) =>
      p.then(
        () => 'resolved',
        (e) => ({ code: e.code, errno: e.errno, message: e.message }),
      );
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    const [{ n }] = await db.query('SELECT length(zeroblob(2147483647)) AS n');
    // 2 GiB as 2,048 references to one MiB: the browser copies nothing.
    const mib = new Blob([new Uint8Array(1 << 20).fill(7)]);
    const over = new File(Array(2048).fill(mib), 'too-big.bin');
    const file = await fail(db.execute('INSERT INTO m(data) VALUES (?)', [over]));
    const sql = await fail(db.execute('INSERT INTO m(data) VALUES (zeroblob(2147483648))'));
    const [{ rows }] = await db.query('SELECT count(*) AS rows FROM m');
    await db.execute('INSERT INTO m(data) VALUES (?)', [new Uint8Array([1, 2, 3])]);
    const [{ after }] = await db.query('SELECT count(*) AS after FROM m');
    return { n, size: over.size, file, sql, rows, after };
  });
  assert.equal(got.n, 2147483647);
  assert.equal(got.size, 2 ** 31);
  for (const e of [got.file, got.sql]) {
    assert.equal(typeof e, 'object', `refused, got ${e}`);
    assert.equal(e.code, 'SQLITE_TOOBIG');
    assert.equal(e.errno, 18);
    assert.match(e.message, /2147483647 bytes \(2 GiB − 1\)/);
  }
  assert.match(got.file.message, /parameter 1: the value is 2147483648 bytes/);
  assert.equal(got.rows, 0);
  assert.equal(got.after, 1);
});

test('invalid UTF-8 in a stored TEXT comes back as U+FFFD from query and queryBytes', async (t) => {
  const got = await onDb(t, async (db) => {
    await db.execute("CREATE TABLE s(v TEXT); INSERT INTO s VALUES (CAST(x'ff' AS TEXT)), (CAST(x'61ff62c3' AS TEXT))");
    const sql = 'SELECT v, typeof(v) AS t FROM s ORDER BY rowid';
    return { rows: await db.query(sql), json: new TextDecoder('utf-8', { fatal: true }).decode(await db.queryBytes(sql)) };
  });
  const expected = [
    { v: '\uFFFD', t: 'text' },
    { v: 'a\uFFFDb\uFFFD', t: 'text' },
  ];
  assert.deepEqual(got.rows, expected);
  assert.deepEqual(JSON.parse(got.json), expected);
});

// [label, SQL, params, the row expected]
const PARAM_CASES = [
  ['?', 'SELECT ? AS a, ? AS b', [1, 2], { a: 1, b: 2 }],
  ['?NNN, out of order and repeated', 'SELECT ?2 AS b, ?1 AS a, ?2 AS b2', ['x', 'y'], { b: 'y', a: 'x', b2: 'y' }],
  [':name', 'SELECT :a AS a, :b AS b', { b: 2, a: 1 }, { a: 1, b: 2 }],
  ['@name', 'SELECT @a AS a, @b AS b', { a: 'one', b: null }, { a: 'one', b: null }],
  ['$name', 'SELECT $a AS a, $b AS b', { a: 1.5, b: 'two' }, { a: 1.5, b: 'two' }],
  ['one name used twice', 'SELECT :a AS a, :a + 1 AS b', { a: 41 }, { a: 41, b: 42 }],
  ['mixed prefixes', 'SELECT :a AS a, @b AS b, $c AS c', { c: 3, b: 2, a: 1 }, { a: 1, b: 2, c: 3 }],
  ['a null-prototype object', 'SELECT :a AS a', 'Object.assign(Object.create(null), { a: 7 })', { a: 7 }],
];

test('positional and named parameters', async (t) => {
  const got = await onDb(
    t,
    async (db, { plain }, cases) => {
      const out = [];
      for (const [sql, params] of cases) {
        out.push(plain(await db.query(sql, typeof params === 'string' ? (0, eval)(`(${params})`) : params)));
      }
      return out;
    },
    PARAM_CASES.map(([, sql, params]) => [sql, params]),
  );
  for (const [i, [label, , , row]] of PARAM_CASES.entries()) {
    await t.test(label, () => assert.deepEqual(got[i], [row]));
  }
});

test('duplicate column names: the last one wins, in query and queryBytes', async (t) => {
  const sqls = [
    'SELECT 1 AS a, 2 AS a',
    "SELECT x'0102' AS a, 'text' AS a",
    "SELECT 'text' AS a, x'0102' AS a",
    'SELECT 9223372036854775807 AS a, 3 AS a',
    'SELECT 3 AS a, 9223372036854775807 AS a',
    'SELECT 1 AS a, 2 AS b, 3 AS a',
  ];
  const got = await onDb(
    t,
    async (db, { plain }, sqls) => {
      const out = [];
      for (const sql of sqls) {
        out.push({ rows: plain(await db.query(sql)), json: new TextDecoder().decode(await db.queryBytes(sql)) });
      }
      return out;
    },
    sqls,
  );
  const expected = [
    [{ a: 2 }, [{ a: 2 }]],
    [{ a: 'text' }, [{ a: 'text' }]],
    [{ a: bytes(1, 2) }, [{ a: 'AQI=' }]],
    [{ a: 3 }, [{ a: 3 }]],
    [{ a: { bigint: I64_MAX } }, null],
    [{ a: 3, b: 2 }, [{ a: 3, b: 2 }]],
  ];
  for (const [i, [row, parsed]] of expected.entries()) {
    assert.deepEqual(got[i].rows, [row], sqls[i]);
    if (parsed) assert.deepEqual(JSON.parse(got[i].json), parsed, sqls[i]);
  }
  assert.equal(got[4].json, `[{"a":3,"a":${I64_MAX}}]`);
});

test("the caller's buffer stays intact and unchanged, below and above the transfer threshold", async (t) => {
  const got = await onDb(t, async (db, { DEFAULT_BLOB_TRANSFER_THRESHOLD: T }) => {
    await db.execute('CREATE TABLE b(id INTEGER PRIMARY KEY, data BLOB)');
    const out = [];
    for (const size of [3, T - 1, T, T + 1, 2 * T]) {
      for (const kind of ['Uint8Array', 'ArrayBuffer', 'view']) {
        const backing = new Uint8Array(size + 8);
        for (let i = 0; i < backing.length; i++) backing[i] = (i * 7) & 255;
        const copy = backing.slice();
        const param = kind === 'Uint8Array' ? backing : kind === 'ArrayBuffer' ? backing.buffer : new Uint8Array(backing.buffer, 4, size);
        const call = db.execute('INSERT INTO b(data) VALUES (?)', [param]);
        const intact = !backing.buffer.detached && backing.byteLength === size + 8;
        // What is stored is what the bytes were when the call was made.
        backing.fill(0);
        const { lastInsertRowid: id } = await call;
        const [row] = await db.query('SELECT data FROM b WHERE id = ?', [id]);
        const want = kind === 'view' ? copy.subarray(4, 4 + size) : copy;
        const stored = row.data.length === want.length && row.data.every((x, i) => x === want[i]);
        out.push({ size, kind, intact, stored });
      }
    }
    return out;
  });
  for (const r of got) assert.deepEqual(r, { size: r.size, kind: r.kind, intact: true, stored: true });
});

test('transfer(bytes) hands the buffer over: it is detached, and the bytes are stored', async (t) => {
  const got = await onDb(t, async (db, { transfer, outcome }) => {
    await db.execute('CREATE TABLE b(id INTEGER PRIMARY KEY, data BLOB)');
    const out = [];
    for (const size of [3, 100 * 1024]) {
      const whole = new Uint8Array(size).map((_, i) => i & 255);
      const view = new Uint8Array(new Uint8Array(size + 4).map((_, i) => (i + 1) & 255).buffer, 2, size);
      const expectedView = Array.from(view);
      for (const [kind, bytes, expected] of [
        ['Uint8Array', whole, Array.from(whole)],
        ['view with an offset', view, expectedView],
      ]) {
        const buffer = bytes.buffer;
        const { lastInsertRowid: id } = await db.execute('INSERT INTO b(data) VALUES (?)', [transfer(bytes)]);
        const [row] = await db.query('SELECT data FROM b WHERE id = ?', [id]);
        const stored = row.data.length === expected.length && row.data.every((x, i) => x === expected[i]);
        // A detached buffer has no bytes left (`detached` itself is ES2024: Node 20 lacks it).
        out.push({ size, kind, detached: buffer.byteLength === 0 && bytes.byteLength === 0, stored });
      }
    }
    const ab = new Uint8Array([5, 6]).buffer;
    await db.execute('INSERT INTO b(id, data) VALUES (100, ?)', [transfer(ab)]);
    out.push({
      kind: 'ArrayBuffer',
      detached: ab.byteLength === 0,
      stored: Array.from((await db.query('SELECT data FROM b WHERE id = 100'))[0].data),
    });
    // Passing the detached bytes again is a bad parameter, and nothing runs.
    const gone = new Uint8Array([1, 2]);
    await db.execute('INSERT INTO b(data) VALUES (?)', [transfer(gone)]);
    const again = await outcome(db.execute('INSERT INTO b(data) VALUES (?)', [gone]));
    const count = (await db.query('SELECT count(*) AS n FROM b'))[0].n;
    return { out, again, count };
  });
  for (const r of got.out.slice(0, 4)) assert.deepEqual(r, { size: r.size, kind: r.kind, detached: true, stored: true });
  assert.deepEqual(got.out[4], { kind: 'ArrayBuffer', detached: true, stored: [5, 6] });
  assert.equal(got.again.ok, false);
  assert.equal(got.again.error.code, 'RESQ_BAD_PARAM');
  assert.match(got.again.error.message, /parameter 1/);
  assert.equal(got.count, 6);
});
