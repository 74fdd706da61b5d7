// The canary of hostile.test.mjs and its rows of bad inputs: values, shapes
// of parameters, Blob parameters, SQL and constraint failures, and limits.
// The rows of misuse (calls after close, inside transactions, raw messages,
// damaged files, odd names) are in hostile-misuse.mjs. Rows are plain
// functions `(db, api, c)` sent to the page as source text: they can use
// only their arguments; `c` holds the helpers (HELPERS in hostile.test.mjs).

/** The canary, and the tables the rows aim at. `scratch` is outside the checksum. */
export const SETUP = `
  PRAGMA foreign_keys = ON;
  CREATE TABLE canary(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, n REAL CHECK (n >= 0), data BLOB);
  WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 40)
    INSERT INTO canary(name, n, data) SELECT 'row ' || i, i * 1.5, randomblob(i * 16) FROM k;
  INSERT INTO canary(name, n, data) VALUES ('big', 0, randomblob(300000)), ('max', 1e308, 9223372036854775807),
    ('text', 0, 'not a blob'), ('unicode ✓ é 😀', 0, x'00ff');
  CREATE TABLE parent(id INTEGER PRIMARY KEY);
  INSERT INTO parent VALUES (1);
  CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL REFERENCES parent(id));
  INSERT INTO child(pid) VALUES (1);
  CREATE TABLE strict_t(x INTEGER) STRICT;
  CREATE TABLE keyed(k TEXT PRIMARY KEY, data BLOB) WITHOUT ROWID;
  CREATE TABLE "we""ird t.ä"("da ta""" BLOB);
  INSERT INTO "we""ird t.ä" VALUES (x'CAFEF00D');
  CREATE TABLE scratch(id INTEGER PRIMARY KEY, data BLOB);
`;

/** Rows in the canary table after SETUP (40 + 4). */
export const CANARY_ROWS = 44;

/**
 * One class: `code` is the ResqError code the call must reject with (`null`:
 * it must resolve, to `want` when given); `errno` and `message` are checked
 * when given.
 */
export const row = (name, code, run, { errno, message, want, opfs } = {}) => ({ name, code, run, errno, message, want, opfs });

export const BAD = 'RESQ_BAD_PARAM';
export const CLOSED = 'RESQ_CLOSED';
export const NOT_FOUND = 'RESQ_NOT_FOUND';

/** Bad values for the 3rd of three positional parameters (`parameter 3`). */
export const BAD_VALUES = [
  row('undefined', BAD, (db, api, c) => c.ins(['x', 1, undefined]), { message: /parameter 3: undefined/ }),
  row('NaN', BAD, (db, api, c) => c.ins(['x', 1, NaN]), { message: /parameter 3/ }),
  row('Infinity', BAD, (db, api, c) => c.ins(['x', 1, Infinity]), { message: /parameter 3/ }),
  row('-Infinity', BAD, (db, api, c) => c.ins(['x', 1, -Infinity]), { message: /parameter 3/ }),
  row('a bigint above the 64-bit range', BAD, (db, api, c) => c.ins(['x', 1, 2n ** 63n]), { message: /parameter 3.*64-bit/ }),
  row('a bigint below the 64-bit range', BAD, (db, api, c) => c.ins(['x', 1, -(2n ** 63n) - 1n]), { message: /parameter 3.*64-bit/ }),
  row('a string with a lone high surrogate', BAD, (db, api, c) => c.ins(['x', 1, 'ok \uD800']), { message: /parameter 3.*surrogate/ }),
  row('a string with a lone low surrogate', BAD, (db, api, c) => c.ins(['x', 1, '\uDC00 ok']), { message: /parameter 3.*surrogate/ }),
  row('a plain object', BAD, (db, api, c) => c.ins(['x', 1, { a: 1 }]), { message: /parameter 3: an object/ }),
  row('a nested array', BAD, (db, api, c) => c.ins(['x', 1, [1, 2]]), { message: /parameter 3: an object/ }),
  row('a Date', BAD, (db, api, c) => c.ins(['x', 1, new Date(0)]), { message: /parameter 3/ }),
  row('a Map', BAD, (db, api, c) => c.ins(['x', 1, new Map([[1, 2]])]), { message: /parameter 3/ }),
  row('a function', BAD, (db, api, c) => c.ins(['x', 1, () => 1]), { message: /parameter 3: a function/ }),
  row('a symbol', BAD, (db, api, c) => c.ins(['x', 1, Symbol('s')]), { message: /parameter 3: a symbol/ }),
  row(
    'a view over a detached buffer',
    BAD,
    (db, api, c) => {
      const b = new Uint8Array(8);
      structuredClone(b.buffer, { transfer: [b.buffer] });
      return c.ins(['x', 1, b]);
    },
    { message: /parameter 3.*detached/ },
  ),
  row(
    'a detached ArrayBuffer',
    BAD,
    (db, api, c) => {
      const b = new ArrayBuffer(8);
      structuredClone(b, { transfer: [b] });
      return c.ins(['x', 1, b]);
    },
    { message: /parameter 3.*detached/ },
  ),
  row(
    'a transfer() marker used a second time (its buffer is gone)',
    BAD,
    async (db, api, c) => {
      const marker = api.transfer(new Uint8Array([1, 2, 3]));
      await db.execute('INSERT INTO scratch(data) VALUES (?)', [marker]);
      return c.ins(['x', 1, marker]);
    },
    { message: /parameter 3.*detached/ },
  ),
  row('a value the browser cannot send to a worker (a WeakMap)', BAD, (db, api, c) => c.ins(['x', 1, new WeakMap()]), {
    message: /cannot be sent/,
  }),
  row('undefined as a named value', BAD, (db, api, c) => c.insNamed({ name: 'x', n: 1, data: undefined }), { message: /:data: undefined/ }),
  row('a bigint out of range as a named value', BAD, (db, api, c) => c.insNamed({ name: 'x', n: 2n ** 64n, data: null }), {
    message: /:n/,
  }),
];

/** Parameters of the wrong shape or count, and SQL of the wrong kind. */
export const BAD_SHAPES = [
  row('a missing positional value', BAD, (db, api, c) => c.ins(['x', 1]), { message: /parameter 3 is missing/ }),
  row('an extra positional value', BAD, (db, api, c) => c.ins(['x', 1, null, 4]), { message: /parameter 4 is extra/ }),
  row('no values for a statement with parameters', BAD, (db) => db.execute('INSERT INTO canary(name, n, data) VALUES (?, ?, ?)'), {
    message: /3 parameters.*no values/,
  }),
  row('a missing named key', BAD, (db, api, c) => c.insNamed({ name: 'x', n: 1 }), { message: /:data is missing/ }),
  row('an extra named key', BAD, (db, api, c) => c.insNamed({ name: 'x', n: 1, data: null, extra: 2 }), { message: /`extra`/ }),
  row('an object for ? parameters', BAD, (db, api, c) => c.ins({ name: 'x', n: 1, data: null }), { message: /parameter 1 is positional/ }),
  row(
    'an object for a statement mixing :name and ?',
    BAD,
    (db) => db.execute('INSERT INTO canary(name, n, data) VALUES (:name, ?, NULL)', { name: 'x' }),
    { message: /parameter 2 is positional/ },
  ),
  row('parameters as a string', BAD, (db, api, c) => c.ins('x, 1, null'), { message: /array.*plain object/ }),
  row('parameters as a number', BAD, (db, api, c) => c.ins(3), { message: /array.*plain object/ }),
  row('parameters as a Map', BAD, (db, api, c) => c.ins(new Map([['name', 'x']])), { message: /array.*plain object/ }),
  row(
    'parameters as a class instance',
    BAD,
    (db, api, c) =>
      c.insNamed(
        new (class P {
          name = 'x';
          n = 1;
          data = null;
        })(),
      ),
    { message: /array.*plain object/ },
  ),
  row(
    'parameters whose getter throws',
    BAD,
    (db, api, c) =>
      c.insNamed({
        name: 'x',
        n: 1,
        get data() {
          throw new Error('boom from a getter');
        },
      }),
    { message: /could not be read.*boom from a getter/ },
  ),
  row(
    'parameters that are a Proxy whose trap throws',
    BAD,
    (db, api, c) =>
      c.ins(
        new Proxy(['x', 1, null], {
          get: (t, k) => {
            if (k === '2') throw new Error('trap');
            return Reflect.get(t, k);
          },
        }),
      ),
    { message: /could not be read.*trap/ },
  ),
  row('sql that is a number', BAD, (db) => db.query(42), { message: /sql must be a string/ }),
  row('sql that is a String object', BAD, (db) => db.execute(new String('DELETE FROM canary')), { message: /sql must be a string/ }),
  row('empty SQL in query', BAD, (db) => db.query(''), { message: /no statement/ }),
  row('two statements with parameters', BAD, (db) => db.execute('INSERT INTO canary(name) VALUES (?); DELETE FROM canary', ['x']), {
    message: /one statement/,
  }),
  row('two statements in query', BAD, (db) => db.query('SELECT 1; DELETE FROM canary'), { message: /one statement/ }),
  row(
    'a script whose second statement has a parameter',
    BAD,
    (db) => db.execute('DELETE FROM canary; INSERT INTO canary(name) VALUES (?)'),
    { message: /script takes no values/ },
  ),
  row('executeBatch with sets that are not an array', BAD, (db) => db.executeBatch('DELETE FROM canary WHERE id = ?', 1), {
    message: /array/,
  }),
  row('executeBatch with a set that is a string', BAD, (db) => db.executeBatch('DELETE FROM canary WHERE id = ?', [[1], 'x']), {
    message: /array.*plain object/,
  }),
  row(
    'executeBatch whose 3rd set has a bad value: nothing of it stays',
    BAD,
    (db) => db.executeBatch('DELETE FROM canary WHERE id = ?', [[1], [2], [NaN], [4]]),
    { message: /parameter set 3: parameter 1/ },
  ),
];

/** Blob, File and StagedBlob parameters where they cannot go. */
export const BAD_BLOBS = [
  row('a Blob of 4 MB in query', BAD, (db, api, c) => db.query('SELECT length(?) AS n', [new Blob([new Uint8Array(c.LIMIT)])]), {
    message: /parameter 1.*a statement that writes nothing cannot take it/,
  }),
  row('a Blob of 4 MB in queryBytes', BAD, (db, api, c) => db.queryBytes('SELECT length(?) AS n', [new Blob([new Uint8Array(c.LIMIT)])]), {
    message: /parameter 1/,
  }),
  row(
    'a Blob of 4 MB in executeBatch',
    BAD,
    (db, api, c) =>
      db.executeBatch('INSERT INTO canary(name, n, data) VALUES (?, 1, ?)', [
        ['a', new Uint8Array(1)],
        ['b', new Blob([new Uint8Array(c.LIMIT)])],
      ]),
    { message: /parameter set 2: parameter 2/ },
  ),
  row(
    'a Blob of 4 MB stored nowhere (only in an expression)',
    BAD,
    (db, api, c) => db.execute("UPDATE canary SET n = length(?) WHERE name = 'row 1'", [new Blob([new Uint8Array(c.LIMIT)])]),
    { message: /parameter 1.*column value/ },
  ),
  row(
    'a Blob of 4 MB into a WITHOUT ROWID table',
    BAD,
    (db, api, c) => db.execute("INSERT INTO keyed(k, data) VALUES ('k', ?)", [new Blob([new Uint8Array(c.LIMIT)])]),
    { message: /without rowid/ },
  ),
  row(
    'a File whose read fails, below 4 MB (its second part rewritten after it was taken)',
    BAD,
    async (db, api, c) => c.ins(['x', 1, new Blob([new Uint8Array(c.MB).fill(7), await c.stale(2 * c.MB)])]),
    { message: /parameter 3: the Blob or File could not be read/, opfs: true },
  ),
  row(
    'a File whose read fails midway through streaming, above 4 MB (3 MB read, then a rewritten part)',
    BAD,
    async (db, api, c) => c.ins(['x', 1, new Blob([new Uint8Array(3 * c.MB).fill(7), await c.stale(3 * c.MB)])]),
    { message: /a Blob parameter could not be read/, opfs: true },
  ),
  row(
    'a StagedBlob used a second time',
    BAD,
    async (db, api, c) => {
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array([1, 2, 3]));
      await db.execute('INSERT INTO scratch(data) VALUES (?)', [staged]);
      return c.ins(['x', 1, staged]);
    },
    { message: /parameter 3: this staged blob was already used/ },
  ),
  row(
    'a StagedBlob after discard()',
    BAD,
    async (db, api, c) => {
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array([1, 2, 3]));
      await staged.discard();
      return c.ins(['x', 1, staged]);
    },
    { message: /already discarded/ },
  ),
  row(
    'a StagedBlob from another database',
    BAD,
    async (db, api, c) => {
      const staged = await (await c.other('other.db')).stageBlob();
      await staged.append(new Uint8Array([1, 2, 3]));
      return c.ins(['x', 1, staged]);
    },
    { message: /another database/ },
  ),
  row(
    'a StagedBlob in query',
    BAD,
    async (db) => {
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array([1]));
      return db.query('SELECT length(?) AS n', [staged]);
    },
    { message: /parameter 1/ },
  ),
  row(
    'a StagedBlob in executeBatch',
    BAD,
    async (db) => {
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array([1]));
      return db.executeBatch("INSERT INTO canary(name, n, data) VALUES ('x', 1, ?)", [[staged]]);
    },
    { message: /parameter 1/ },
  ),
  row('a StagedBlob append of something that is not bytes', BAD, async (db) => (await db.stageBlob()).append(42), {
    message: /append\(\) takes bytes/,
  }),
  row(
    'a StagedBlob used after a failed append',
    BAD,
    async (db, api, c) => {
      const staged = await db.stageBlob();
      await staged.append(new Uint8Array([1]));
      await staged.append('not bytes').catch(() => {});
      return c.ins(['x', 1, staged]);
    },
    { message: /earlier append.*failed/ },
  ),
];

/** SQL errors and constraint violations, each with its extended code. */
export const SQL_ERRORS = [
  row('a syntax error', 'SQLITE_ERROR', (db) => db.execute('DELET FROM canary'), { errno: 1, message: /syntax error.*DELET FROM canary/ }),
  row('no such table', 'SQLITE_ERROR', (db) => db.query('SELECT * FROM nope'), { errno: 1, message: /no such table: nope/ }),
  row('no such column', 'SQLITE_ERROR', (db) => db.execute('UPDATE canary SET nope = 1'), { errno: 1, message: /no such column: nope/ }),
  row('a UNIQUE violation', 'SQLITE_CONSTRAINT_UNIQUE', (db, api, c) => c.ins(['row 1', 1, null]), {
    errno: 2067,
    message: /UNIQUE constraint failed: canary\.name/,
  }),
  row('a NOT NULL violation', 'SQLITE_CONSTRAINT_NOTNULL', (db, api, c) => c.ins([null, 1, null]), {
    errno: 1299,
    message: /NOT NULL constraint failed: canary\.name/,
  }),
  row('a CHECK violation', 'SQLITE_CONSTRAINT_CHECK', (db, api, c) => c.ins(['x', -1, null]), {
    errno: 275,
    message: /CHECK constraint failed/,
  }),
  row(
    'a FOREIGN KEY violation (foreign_keys on)',
    'SQLITE_CONSTRAINT_FOREIGNKEY',
    (db) => db.execute('INSERT INTO child(pid) VALUES (?)', [99]),
    {
      errno: 787,
      message: /FOREIGN KEY constraint failed/,
    },
  ),
  row('a PRIMARY KEY violation', 'SQLITE_CONSTRAINT_PRIMARYKEY', (db) => db.execute("INSERT INTO canary(id, name) VALUES (1, 'x')"), {
    errno: 1555,
  }),
  row('a STRICT column given TEXT', 'SQLITE_CONSTRAINT_DATATYPE', (db) => db.execute('INSERT INTO strict_t VALUES (?)', ['abc']), {
    errno: 3091,
  }),
  row(
    "a trigger's RAISE(ABORT), the trigger made by the same script",
    'SQLITE_CONSTRAINT_TRIGGER',
    (db) =>
      db.execute(
        "CREATE TRIGGER no BEFORE INSERT ON canary BEGIN SELECT RAISE(ABORT, 'refused'); END; INSERT INTO canary(name) VALUES ('x')",
      ),
    { errno: 1811, message: /refused/ },
  ),
  row(
    'a script failing in its middle: nothing of it stays',
    'SQLITE_CONSTRAINT_UNIQUE',
    (db) => db.execute("DELETE FROM child; CREATE TABLE more(x); INSERT INTO canary(name) VALUES ('row 2'); DELETE FROM canary"),
    { errno: 2067 },
  ),
  row("a value over SQLite's length limit", 'SQLITE_TOOBIG', (db) => db.query('SELECT length(zeroblob(2147483648)) AS n'), {
    errno: 18,
    message: /too big/,
  }),
  row('an integer overflow', 'SQLITE_ERROR', (db) => db.query('SELECT abs(-9223372036854775807 - 1) AS n'), {
    errno: 1,
    message: /integer overflow/,
  }),
  row('100,000 nested parentheses', 'SQLITE_ERROR', (db) => db.query(`SELECT ${'('.repeat(100000)}1${')'.repeat(100000)} AS x`), {
    errno: 1,
  }),
  row(
    '100,000 levels of [ in TEXT, through json()',
    'SQLITE_ERROR',
    (db) => db.query('SELECT json(?) AS j', ['['.repeat(100000) + ']'.repeat(100000)]),
    { errno: 1, message: /malformed JSON/ },
  ),
  row(
    '100,000 levels of [ in TEXT, through json_tree()',
    'SQLITE_ERROR',
    (db) => db.query('SELECT count(*) AS n FROM json_tree(?)', ['['.repeat(100000) + ']'.repeat(100000)]),
    { errno: 1, message: /malformed JSON/ },
  ),
];

/** Around SQLite's parameter limit (32,766 since 3.32) and the package's 1 MB of SQL text. */
export const LIMITS = [
  row(
    '10,000 parameters',
    null,
    (db) => {
      const v = Array.from({ length: 10000 }, (_, i) => i + 1);
      return db.query(`SELECT count(*) AS n, sum(column1) AS s FROM (VALUES ${Array(10000).fill('(?)').join(',')})`, v);
    },
    { want: [{ n: 10000, s: 50005000 }] },
  ),
  row(
    "32,766 parameters, SQLite's limit",
    null,
    (db) => {
      const v = Array.from({ length: 32766 }, (_, i) => i + 1);
      return db.query(`SELECT count(*) AS n, sum(column1) AS s FROM (VALUES ${Array(32766).fill('(?)').join(',')})`, v);
    },
    { want: [{ n: 32766, s: 536821761 }] },
  ),
  row(
    '32,767 parameters, one past the limit',
    'SQLITE_ERROR',
    (db) => {
      const v = Array.from({ length: 32767 }, (_, i) => i + 1);
      return db.query(`SELECT count(*) AS n FROM (VALUES ${Array(32767).fill('(?)').join(',')})`, v);
    },
    { errno: 1, message: /too many SQL variables/ },
  ),
  row('?32767, a parameter number past the limit', 'SQLITE_ERROR', (db) => db.query('SELECT ?32767 AS x', []), {
    errno: 1,
    message: /between \?1 and \?32766/,
  }),
  row(
    'a bad value in the last of 32,766 parameters',
    BAD,
    (db) => {
      const v = Array.from({ length: 32766 }, (_, i) => i + 1);
      v[32765] = NaN;
      return db.query(`SELECT count(*) AS n FROM (VALUES ${Array(32766).fill('(?)').join(',')})`, v);
    },
    { message: /parameter 32766/ },
  ),
  row('a 100 MB SQL string', 'SQLITE_TOOBIG', (db) => db.execute(`INSERT INTO canary(name) VALUES ('${'x'.repeat(100 << 20)}')`), {
    errno: 18,
    message: /statement too long.*1048576 bytes/,
  }),
  row('a 100 MB script of small statements', 'SQLITE_TOOBIG', (db) => db.execute('DELETE FROM canary;'.repeat((100 << 20) / 19)), {
    errno: 18,
  }),
  row(
    'SQL text one byte over 1 MB',
    'SQLITE_TOOBIG',
    (db, api, c) => {
      const head = "INSERT INTO canary(name) VALUES ('";
      return db.execute(`${head}${'x'.repeat(c.MB + 1 - head.length - 2)}')`);
    },
    { errno: 18 },
  ),
  row(
    'SQL text under 1 MB in characters but over it in bytes of UTF-8',
    'SQLITE_TOOBIG',
    (db, api, c) => db.execute(`INSERT INTO canary(name) VALUES ('${'é'.repeat(c.MB / 2)}')`),
    { errno: 18 },
  ),
  row(
    'SQL text of exactly 1 MB runs',
    null,
    (db, api, c) => {
      const [head, tail] = ["SELECT length('", "') AS n"];
      return db.query(head + 'x'.repeat(c.MB - head.length - tail.length) + tail);
    },
    { want: [{ n: (1 << 20) - 22 }] },
  ),
  row(
    '100,000 levels of [ stored as TEXT, read back whole by query and queryBytes',
    null,
    async (db) => {
      const deep = '['.repeat(100000) + ']'.repeat(100000);
      await db.execute('INSERT INTO scratch(data) VALUES (?)', [deep]);
      const [r] = await db.query('SELECT data, json_valid(data) AS valid FROM scratch');
      const bytes = JSON.parse(new TextDecoder().decode(await db.queryBytes('SELECT data FROM scratch')))[0].data;
      return { query: r.data === deep, queryBytes: bytes === deep, valid: r.valid };
    },
    { want: { query: true, queryBytes: true, valid: 0 } },
  ),
];
