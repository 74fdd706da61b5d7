// Hostile inputs through the packed package, one row per class: bad values
// and shapes, SQL and constraint failures, calls after close, misuse inside
// transactions, garbage posted straight to the worker, damaged database
// files, odd names for the blob reads, and inputs too large or too deep.
//
// Every row runs in a fresh database holding a canary (rows, BLOBs, a
// schema). The row's call must reject with exactly its ResqError code (or,
// where the input is legal however odd, resolve to what it should); the
// canary's checksum, SHA-256 over `queryBytes` of every table and the schema
// with `PRAGMA integrity_check`, must be unchanged afterwards; and the next
// call must answer. A row that hangs fails after ROW_TIMEOUT.
//
// Rows are plain functions `(db, api, c)` sent to the page as source text:
// they can use only their arguments. `c` holds the helpers (HELPERS below).

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName, keepWorkers } from './util.mjs';

let h;
let hp;
before(async () => {
  h = await start();
  // Raw messages are posted to the database's Worker object.
  await keepWorkers(h.page);
});
after(async () => {
  await h?.close();
  await hp?.close();
});

/** A row that has not settled after this long has hung. */
const ROW_TIMEOUT = 60_000;

/** The canary, and the tables the rows aim at. `scratch` is outside the checksum. */
const SETUP = `
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
const CANARY_ROWS = 44;

/**
 * The helpers a row gets as `c`, made in the page: `api` is the package's
 * exports plus util.mjs's helpers; `state` holds the database (`state.db`,
 * which a row may replace: the canary is then checked there), its name and
 * its Worker.
 */
const HELPERS = (api, state) => {
  const MB = 1 << 20;
  const root = () => navigator.storage.getDirectory();
  const others = [];
  const c = {
    MB,
    /** Bytes from which a Blob parameter streams (src/codec/stream.rs). */
    LIMIT: 4 * MB,
    /** An INSERT into the canary with positional values `v`. */
    ins: (v) => state.db.execute('INSERT INTO canary(name, n, data) VALUES (?, ?, ?)', v),
    /** The same with named values. */
    insNamed: (v) => state.db.execute('INSERT INTO canary(name, n, data) VALUES (:name, :n, :data)', v),
    /** Another database, closed when the row ends. */
    other: async (suffix, options) => {
      const db = await api.open(`${state.name}-${suffix}`, { ...api.scratch, ...options });
      others.push(db);
      return db;
    },
    closeOthers: () => Promise.all(others.map((db) => db.close().catch(() => {}))),
    /** Opens the row's database again; the canary is then checked there. */
    reopen: async () => {
      state.db = await api.open(state.name, api.scratch);
      return state.db;
    },
    /** Reads a stream to its end; its error rejects. */
    drain: async (stream) => {
      let n = 0;
      for await (const chunk of stream) n += chunk.length;
      return n;
    },
    /**
     * Posts `message` straight to the database's Worker (kept by util.mjs
     * keepWorkers). A reply with the message's id
     * resolves to its value or rejects with a ResqError of its code (as the
     * package's client would); none within `wait` ms resolves 'no reply'.
     */
    post: (message, wait = 400) =>
      new Promise((resolve, reject) => {
        const id = message !== null && typeof message === 'object' ? message.id : undefined;
        const w = state.worker;
        const done = () => {
          w.removeEventListener('message', listen);
          clearTimeout(timer);
        };
        const listen = ({ data }) => {
          if (id === undefined || data?.id !== id) return;
          done();
          if (data.ok) resolve(data.value);
          else reject(new api.ResqError(data.error.code, data.error.message, data.error.errno));
        };
        const timer = setTimeout(() => {
          done();
          resolve('no reply');
        }, wait);
        w.addEventListener('message', listen);
        w.postMessage(message);
      }),
    /**
     * A File from OPFS whose file was rewritten after it was taken: the
     * browser refuses to read it (NotReadableError).
     */
    stale: async (size) => {
      const fh = await (await root()).getFileHandle(`stale-${Math.random()}.bin`, { create: true });
      let w = await fh.createWritable();
      await w.write(new Uint8Array(size));
      await w.close();
      const file = await fh.getFile();
      await new Promise((r) => setTimeout(r, 20));
      w = await fh.createWritable();
      await w.write(new Uint8Array(size).fill(1));
      await w.close();
      return file;
    },
    /**
     * Makes database `victim` (a table c of rows and BLOBs), closes it, lets
     * `damage(writable, size)` change the sync-access-handle pool file that
     * holds its data (a 4096-byte header naming the file, then the data),
     * then opens it again and reads it: the open or the read rejects.
     */
    damaged: async (suffix, damage) => {
      const name = `${state.name}-${suffix}`;
      const v = await api.open(name);
      await v.execute('CREATE TABLE c(id INTEGER PRIMARY KEY, t TEXT, b BLOB)');
      await v.executeBatch('INSERT INTO c(t, b) VALUES (?, ?)', Array.from({ length: 60 }, (_, i) => [`row ${i}`, new Uint8Array(3000).fill(i)]));
      await v.close();
      const pool = await (await (await (await root()).getDirectoryHandle('.resq-wasm')).getDirectoryHandle(name)).getDirectoryHandle('.opaque');
      let file = null;
      for await (const handle of pool.values()) {
        const head = new Uint8Array(await (await handle.getFile()).slice(0, 512).arrayBuffer());
        if (new TextDecoder().decode(head.subarray(0, head.indexOf(0))) === name) file = handle;
      }
      if (!file) throw new Error(`no pool file holds ${name}`);
      const w = await file.createWritable({ keepExistingData: true });
      await damage(w, (await file.getFile()).size);
      await w.close();
      const again = await api.open(name);
      try {
        return await again.query('SELECT count(*) AS n, sum(length(b)) AS bytes FROM c');
      } finally {
        await again.close();
      }
    },
  };
  return c;
};

/** Runs one row in the page; returns its outcome, the checksums and the next call's answer. */
function runRow(t, row) {
  return inPage(
    h.page,
    async (api, { name, setup, run, helpers, timeout }) => {
      const checksum = async (db) => {
        const parts = [];
        for (const sql of [
          'SELECT * FROM canary ORDER BY id',
          'SELECT * FROM parent ORDER BY id',
          'SELECT * FROM child ORDER BY id',
          'SELECT * FROM strict_t',
          'SELECT * FROM keyed ORDER BY k',
          'SELECT * FROM "we""ird t.ä"',
          'SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name',
          'SELECT * FROM pragma_integrity_check',
        ]) {
          parts.push(await db.queryBytes(sql));
        }
        const digest = await crypto.subtle.digest('SHA-256', await new Blob(parts).arrayBuffer());
        return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
      };
      const state = { name, db: await api.open(name, api.scratch), worker: window.workers.at(-1) };
      await state.db.execute(setup);
      const before = await checksum(state.db);
      const c = (0, eval)(`(${helpers})`)(api, state);
      const fn = (0, eval)(`(${run})`);
      let result;
      try {
        const value = await Promise.race([
          Promise.resolve().then(() => fn(state.db, api, c)),
          new Promise((_, hang) => setTimeout(() => hang({ hung: true }), timeout)),
        ]);
        result = { ok: true, value: api.plain(value) };
      } catch (e) {
        result = e?.hung ? { hung: true } : { ok: false, error: api.describe(e) };
      }
      await c.closeOthers();
      const db = state.db;
      const after = await checksum(db).catch((e) => `checksum failed: ${e.code} ${e.message}`);
      const next = await api.outcome(db.query('SELECT count(*) AS n FROM canary'));
      await db.close().catch(() => {});
      return { result, same: before === after, after: before === after ? undefined : after, next };
    },
    { name: dbName(t), setup: SETUP, run: row.run.toString(), helpers: HELPERS.toString(), timeout: ROW_TIMEOUT },
  );
}

/**
 * One class: `code` is the ResqError code the call must reject with (`null`:
 * it must resolve, to `want` when given); `errno` and `message` are checked
 * when given.
 */
const row = (name, code, run, { errno, message, want, opfs } = {}) => ({ name, code, run, errno, message, want, opfs });

const BAD = 'RESQ_BAD_PARAM';
const CLOSED = 'RESQ_CLOSED';
const NOT_FOUND = 'RESQ_NOT_FOUND';

/** Bad values for the 3rd of three positional parameters (`parameter 3`). */
const BAD_VALUES = [
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
  row('a value the browser cannot send to a worker (a WeakMap)', BAD, (db, api, c) => c.ins(['x', 1, new WeakMap()]), { message: /cannot be sent/ }),
  row('undefined as a named value', BAD, (db, api, c) => c.insNamed({ name: 'x', n: 1, data: undefined }), { message: /:data: undefined/ }),
  row('a bigint out of range as a named value', BAD, (db, api, c) => c.insNamed({ name: 'x', n: 2n ** 64n, data: null }), { message: /:n/ }),
];

/** Parameters of the wrong shape or count, and SQL of the wrong kind. */
const BAD_SHAPES = [
  row('a missing positional value', BAD, (db, api, c) => c.ins(['x', 1]), { message: /parameter 3 is missing/ }),
  row('an extra positional value', BAD, (db, api, c) => c.ins(['x', 1, null, 4]), { message: /parameter 4 is extra/ }),
  row('no values for a statement with parameters', BAD, (db) => db.execute('INSERT INTO canary(name, n, data) VALUES (?, ?, ?)'), { message: /3 parameters.*no values/ }),
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
    (db, api, c) => c.insNamed(new (class P { name = 'x'; n = 1; data = null })()),
    { message: /array.*plain object/ },
  ),
  row(
    'parameters whose getter throws',
    BAD,
    (db, api, c) => c.insNamed({ name: 'x', n: 1, get data() { throw new Error('boom from a getter'); } }),
    { message: /could not be read.*boom from a getter/ },
  ),
  row(
    'parameters that are a Proxy whose trap throws',
    BAD,
    (db, api, c) => c.ins(new Proxy(['x', 1, null], { get: (t, k) => { if (k === '2') throw new Error('trap'); return Reflect.get(t, k); } })),
    { message: /could not be read.*trap/ },
  ),
  row('sql that is a number', BAD, (db) => db.query(42), { message: /sql must be a string/ }),
  row('sql that is a String object', BAD, (db) => db.execute(new String('DELETE FROM canary')), { message: /sql must be a string/ }),
  row('empty SQL in query', BAD, (db) => db.query(''), { message: /no statement/ }),
  row(
    'two statements with parameters',
    BAD,
    (db) => db.execute("INSERT INTO canary(name) VALUES (?); DELETE FROM canary", ['x']),
    { message: /one statement/ },
  ),
  row('two statements in query', BAD, (db) => db.query('SELECT 1; DELETE FROM canary'), { message: /one statement/ }),
  row(
    'a script whose second statement has a parameter',
    BAD,
    (db) => db.execute("DELETE FROM canary; INSERT INTO canary(name) VALUES (?)"),
    { message: /script takes no values/ },
  ),
  row('executeBatch with sets that are not an array', BAD, (db) => db.executeBatch('DELETE FROM canary WHERE id = ?', 1), { message: /array/ }),
  row('executeBatch with a set that is a string', BAD, (db) => db.executeBatch('DELETE FROM canary WHERE id = ?', [[1], 'x']), { message: /array.*plain object/ }),
  row(
    'executeBatch whose 3rd set has a bad value: nothing of it stays',
    BAD,
    (db) => db.executeBatch('DELETE FROM canary WHERE id = ?', [[1], [2], [NaN], [4]]),
    { message: /parameter set 3: parameter 1/ },
  ),
];

/** Blob, File and StagedBlob parameters where they cannot go. */
const BAD_BLOBS = [
  row('a Blob of 4 MB in query', BAD, (db, api, c) => db.query('SELECT length(?) AS n', [new Blob([new Uint8Array(c.LIMIT)])]), { message: /parameter 1.*a statement that writes nothing cannot take it/ }),
  row('a Blob of 4 MB in queryBytes', BAD, (db, api, c) => db.queryBytes('SELECT length(?) AS n', [new Blob([new Uint8Array(c.LIMIT)])]), { message: /parameter 1/ }),
  row(
    'a Blob of 4 MB in executeBatch',
    BAD,
    (db, api, c) => db.executeBatch("INSERT INTO canary(name, n, data) VALUES (?, 1, ?)", [['a', new Uint8Array(1)], ['b', new Blob([new Uint8Array(c.LIMIT)])]]),
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
  row('a StagedBlob append of something that is not bytes', BAD, async (db) => (await db.stageBlob()).append(42), { message: /append\(\) takes bytes/ }),
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
const SQL_ERRORS = [
  row('a syntax error', 'SQLITE_ERROR', (db) => db.execute('DELET FROM canary'), { errno: 1, message: /syntax error.*DELET FROM canary/ }),
  row('no such table', 'SQLITE_ERROR', (db) => db.query('SELECT * FROM nope'), { errno: 1, message: /no such table: nope/ }),
  row('no such column', 'SQLITE_ERROR', (db) => db.execute('UPDATE canary SET nope = 1'), { errno: 1, message: /no such column: nope/ }),
  row('a UNIQUE violation', 'SQLITE_CONSTRAINT_UNIQUE', (db, api, c) => c.ins(['row 1', 1, null]), { errno: 2067, message: /UNIQUE constraint failed: canary\.name/ }),
  row('a NOT NULL violation', 'SQLITE_CONSTRAINT_NOTNULL', (db, api, c) => c.ins([null, 1, null]), { errno: 1299, message: /NOT NULL constraint failed: canary\.name/ }),
  row('a CHECK violation', 'SQLITE_CONSTRAINT_CHECK', (db, api, c) => c.ins(['x', -1, null]), { errno: 275, message: /CHECK constraint failed/ }),
  row('a FOREIGN KEY violation (foreign_keys on)', 'SQLITE_CONSTRAINT_FOREIGNKEY', (db) => db.execute('INSERT INTO child(pid) VALUES (?)', [99]), {
    errno: 787,
    message: /FOREIGN KEY constraint failed/,
  }),
  row('a PRIMARY KEY violation', 'SQLITE_CONSTRAINT_PRIMARYKEY', (db) => db.execute("INSERT INTO canary(id, name) VALUES (1, 'x')"), { errno: 1555 }),
  row('a STRICT column given TEXT', 'SQLITE_CONSTRAINT_DATATYPE', (db) => db.execute('INSERT INTO strict_t VALUES (?)', ['abc']), { errno: 3091 }),
  row(
    "a trigger's RAISE(ABORT), the trigger made by the same script",
    'SQLITE_CONSTRAINT_TRIGGER',
    (db) => db.execute("CREATE TRIGGER no BEFORE INSERT ON canary BEGIN SELECT RAISE(ABORT, 'refused'); END; INSERT INTO canary(name) VALUES ('x')"),
    { errno: 1811, message: /refused/ },
  ),
  row(
    'a script failing in its middle: nothing of it stays',
    'SQLITE_CONSTRAINT_UNIQUE',
    (db) => db.execute("DELETE FROM child; CREATE TABLE more(x); INSERT INTO canary(name) VALUES ('row 2'); DELETE FROM canary"),
    { errno: 2067 },
  ),
  row("a value over SQLite's length limit", 'SQLITE_TOOBIG', (db) => db.query('SELECT length(zeroblob(2147483648)) AS n'), { errno: 18, message: /too big/ }),
  row('an integer overflow', 'SQLITE_ERROR', (db) => db.query('SELECT abs(-9223372036854775807 - 1) AS n'), { errno: 1, message: /integer overflow/ }),
  row('100,000 nested parentheses', 'SQLITE_ERROR', (db) => db.query(`SELECT ${'('.repeat(100000)}1${')'.repeat(100000)} AS x`), { errno: 1 }),
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
const LIMITS = [
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
  row('?32767, a parameter number past the limit', 'SQLITE_ERROR', (db) => db.query('SELECT ?32767 AS x', []), { errno: 1, message: /between \?1 and \?32766/ }),
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
  row('a 100 MB script of small statements', 'SQLITE_TOOBIG', (db) => db.execute('DELETE FROM canary;'.repeat((100 << 20) / 19)), { errno: 18 }),
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

/**
 * A call on a closed database: `call(db, staged, c)` runs after close() (a
 * staged blob made before it); the canary is checked in the database opened
 * again. Built as source text, since rows travel as source.
 */
const closed = (what, call) =>
  row(
    `${what} after close()`,
    CLOSED,
    `async (db, api, c) => {
      const staged = await db.stageBlob();
      await db.close();
      try {
        return await (${call})(db, staged, c);
      } finally {
        await c.reopen();
      }
    }`,
    { message: /closed/ },
  );

const CLOSED_CALLS = [
  closed('execute', (db) => db.execute('DELETE FROM canary')),
  closed('query', (db) => db.query('SELECT * FROM canary')),
  closed('queryBytes', (db) => db.queryBytes('SELECT * FROM canary')),
  closed('executeBatch', (db) => db.executeBatch('DELETE FROM canary WHERE id = ?', [[1]])),
  closed('transaction', (db) => db.transaction((tx) => tx.execute('DELETE FROM canary'))),
  closed('readBlob', (db) => db.readBlob('canary', 'data', 1)),
  closed('blobStream (its first read)', (db, staged, c) => c.drain(db.blobStream('canary', 'data', 1))),
  closed('blobFile', (db) => db.blobFile('canary', 'data', 1)),
  closed('stageBlob', (db) => db.stageBlob()),
  closed('StagedBlob.append of a blob staged before', (db, staged) => staged.append(new Uint8Array([1]))),
  closed('StagedBlob.writable (its close)', async (db, staged) => {
    const w = staged.writable.getWriter();
    await w.write(new Uint8Array([1]));
    return w.close();
  }),
];

/** Misuse inside transaction(): the callback's own error comes back, the transaction is undone. */
const TRANSACTIONS = [
  row(
    'a tx call after the transaction ended',
    BAD,
    async (db) => {
      let kept;
      await db.transaction(async (tx) => {
        kept = tx;
        await tx.execute('INSERT INTO scratch(data) VALUES (1)');
      });
      return kept.execute('DELETE FROM canary');
    },
    { message: /transaction has ended/ },
  ),
  row(
    'BEGIN through tx.execute',
    BAD,
    (db) =>
      db.transaction(async (tx) => {
        await tx.execute('DELETE FROM canary WHERE id < 10');
        await tx.execute('BEGIN');
      }),
    { message: /may not BEGIN, COMMIT/ },
  ),
  row(
    'COMMIT through tx.execute, then more statements',
    BAD,
    (db) =>
      db.transaction(async (tx) => {
        await tx.execute('DELETE FROM canary WHERE id < 10');
        await tx.execute('COMMIT');
        await tx.execute('DELETE FROM canary');
      }),
    { message: /may not BEGIN, COMMIT/ },
  ),
  row(
    'ROLLBACK through tx.execute, then more statements',
    BAD,
    (db) =>
      db.transaction(async (tx) => {
        await tx.execute('ROLLBACK');
        await tx.execute('DELETE FROM canary');
      }),
    { message: /may not BEGIN, COMMIT/ },
  ),
  row(
    'END TRANSACTION through tx.query',
    BAD,
    (db) =>
      db.transaction(async (tx) => {
        await tx.execute('DELETE FROM canary WHERE id < 10');
        await tx.query('END TRANSACTION');
      }),
    { message: /may not BEGIN, COMMIT/ },
  ),
  row(
    'COMMIT in the middle of a script through tx.execute',
    BAD,
    (db) => db.transaction((tx) => tx.execute('DELETE FROM canary WHERE id < 10; COMMIT; DELETE FROM canary')),
    { message: /may not BEGIN, COMMIT/ },
  ),
  row('COMMIT through tx.executeBatch', BAD, (db) => db.transaction((tx) => tx.executeBatch('COMMIT', [[]])), { message: /may not BEGIN, COMMIT/ }),
  row('transaction() of something that is not a function', BAD, (db) => db.transaction('DELETE FROM canary'), { message: /function/ }),
  row(
    'SAVEPOINT, ROLLBACK TO and RELEASE through tx nest as documented',
    null,
    async (db) =>
      db.transaction(async (tx) => {
        await tx.execute('SAVEPOINT inner');
        await tx.execute('DELETE FROM canary');
        await tx.execute('ROLLBACK TO inner');
        await tx.execute('RELEASE inner');
        return (await tx.query('SELECT count(*) AS n FROM canary'))[0].n;
      }),
    { want: CANARY_ROWS },
  ),
];

/**
 * Messages posted straight to the worker (anyone holding the Worker can).
 * Garbage gets no reply at all; a request with an id but wrong fields gets
 * an error reply (rejected here as the package's client would reject it).
 */
const RAW_MESSAGES = [
  row('a string posted to the worker', null, (db, api, c) => c.post('DELETE FROM canary'), { want: 'no reply' }),
  row('null posted to the worker', null, (db, api, c) => c.post(null), { want: 'no reply' }),
  row('undefined posted to the worker', null, (db, api, c) => c.post(undefined), { want: 'no reply' }),
  row('an object without op', null, (db, api, c) => c.post({ id: 1e15, sql: 'DELETE FROM canary' }), { want: 'no reply' }),
  row('an unknown op', null, (db, api, c) => c.post({ id: 1e15, op: 'drop', sql: 'DELETE FROM canary' }), { want: 'no reply' }),
  row("an op named after Object.prototype's toString", null, (db, api, c) => c.post({ id: 1e15, op: 'toString' }), { want: 'no reply' }),
  row('a request whose id is a string', null, (db, api, c) => c.post({ id: 'x', op: 'execute', sql: 'DELETE FROM canary' }), { want: 'no reply' }),
  row('execute whose sql is a number', BAD, (db, api, c) => c.post({ id: 1e15, op: 'execute', sql: 42 }), { message: /sql must be a string/ }),
  row('query whose sql is an object', BAD, (db, api, c) => c.post({ id: 1e15, op: 'query', sql: { toString: 'DELETE' } }), { message: /sql must be a string/ }),
  row('readBlob whose table is a number', BAD, (db, api, c) => c.post({ id: 1e15, op: 'readBlob', table: 1, column: [], rowid: 'x' }), {
    message: /table must be a non-empty name/,
  }),
  row('executeBatch whose sets are not an array', BAD, (db, api, c) => c.post({ id: 1e15, op: 'executeBatch', sql: 'DELETE FROM canary', sets: 'x' })),
  row(
    'blobStreamRead of an unknown session, 10 GB long',
    BAD,
    (db, api, c) => c.post({ id: 1e15, op: 'blobStreamRead', session: 'x', offset: -1, length: 1e10 }),
    { message: /stream has ended/ },
  ),
  row(
    'a second open (another database, in memory)',
    BAD,
    (db, api, c) => c.post({ id: 1e15, op: 'open', name: 'swap.db', storage: 'memory', blobTransferThreshold: 0, lock: 'resq-hostile-swap' }),
    { message: /opened its database already/ },
  ),
  row(
    'a request with an id of 1e308 and wrong fields',
    BAD,
    (db, api, c) => c.post({ id: 1e308, op: 'blobStreamOpen', table: 'canary', column: 'data', rowid: 1, offset: 'a', length: {} }),
    { message: /offset must be a whole number/ },
  ),
];

/** A damaged file where a database is expected; the canary is the row's own database, left open. */
const DAMAGED_FILES = [
  row('a database file truncated to half', 'SQLITE_CORRUPT', (db, api, c) => c.damaged('half.db', (w, size) => w.truncate(4096 + (size - 4096) / 2)), {
    errno: 11,
  }),
  row(
    'a database file with a page overwritten',
    'SQLITE_CORRUPT',
    (db, api, c) => c.damaged('page.db', (w) => w.write({ type: 'write', position: 4096 + 8192, data: new Uint8Array(8192).fill(0x55) })),
    { errno: 11 },
  ),
  row(
    'a database file whose SQLite header is overwritten',
    'SQLITE_NOTADB',
    (db, api, c) => c.damaged('magic.db', (w) => w.write({ type: 'write', position: 4096, data: new TextEncoder().encode('Not a database!!') })),
    { errno: 26 },
  ),
  row(
    'a text file where the database was',
    'SQLITE_NOTADB',
    (db, api, c) =>
      c.damaged('text.db', async (w) => {
        await w.truncate(4096);
        await w.write({ type: 'write', position: 4096, data: new TextEncoder().encode('hello, a text file and not SQLite at all.\n'.repeat(400)) });
      }),
    { errno: 26 },
  ),
  row(
    'a pool file whose header (the file name it holds) is overwritten',
    'SQLITE_CORRUPT',
    (db, api, c) => c.damaged('header.db', (w) => w.write({ type: 'write', position: 0, data: new Uint8Array(600).fill(0x41) })),
    { errno: 11, message: /damaged/ },
  ),
];

/** Odd names into the three blob reads. */
const NAMES = [
  row('a table and column named with quotes, spaces, a dot and a non-ASCII letter', null, (db) => db.readBlob('we"ird t.ä', 'da ta"', 1), {
    want: { bytes: [0xca, 0xfe, 0xf0, 0x0d] },
  }),
  row('a table name ending in "; DROP TABLE canary"', NOT_FOUND, (db) => db.readBlob('canary; DROP TABLE canary', 'data', 1), { message: /no such table/ }),
  row('a column name carrying SQL', NOT_FOUND, (db) => db.readBlob('canary', 'data FROM canary; DROP TABLE canary; --', 1), { message: /no such column/ }),
  row('a table name in double quotes', NOT_FOUND, (db) => db.readBlob('"canary"', 'data', 1)),
  row('a table name qualified with its schema', NOT_FOUND, (db) => db.readBlob('main.canary', 'data', 1)),
  row('a table name with spaces that does not exist', NOT_FOUND, (db) => db.readBlob('no such table', 'data', 1)),
  row('a non-ASCII table name that does not exist', NOT_FOUND, (db) => db.readBlob('фото', 'data', 1)),
  row('blobStream of a table name carrying SQL', NOT_FOUND, (db, api, c) => c.drain(db.blobStream('canary"; DROP TABLE canary; --', 'data', 1))),
  row('blobFile of a column name carrying SQL', NOT_FOUND, (db) => db.blobFile('canary', 'data" FROM canary; --', 1)),
  row('an empty table name', BAD, (db) => db.readBlob('', 'data', 1), { message: /table must be a non-empty name/ }),
  row('a table name that is a number', BAD, (db) => db.readBlob(42, 'data', 1), { message: /table must be a non-empty name/ }),
  row('a column name that is null', BAD, (db) => db.blobFile('canary', null, 1), { message: /column must be a non-empty name/ }),
  row('a column name that is an object', BAD, (db, api, c) => c.drain(db.blobStream('canary', { toString: () => 'data' }, 1)), { message: /column/ }),
  row('a table name holding a NUL character', BAD, (db) => db.readBlob('canary\0; DROP TABLE canary', 'data', 1), { message: /NUL/ }),
  row('a rowid of 1.5', BAD, (db) => db.readBlob('canary', 'data', 1.5), { message: /rowid/ }),
  row('a rowid of 2^64', BAD, (db) => db.readBlob('canary', 'data', 2n ** 64n), { message: /rowid/ }),
  row('a rowid that is a string', BAD, (db) => db.readBlob('canary', 'data', '1'), { message: /rowid/ }),
  row('a negative offset', 'RESQ_RANGE', (db) => db.readBlob('canary', 'data', 1, { offset: -1 })),
  row('a length past the end', 'RESQ_RANGE', (db) => db.readBlob('canary', 'data', 1, { offset: 1, length: 16 })),
  row('an offset of Infinity', BAD, (db) => db.readBlob('canary', 'data', 1, { offset: Infinity }), { message: /whole number/ }),
  row('a chunkSize of 0', BAD, (db, api, c) => c.drain(db.blobStream('canary', 'data', 1, { chunkSize: 0 })), { message: /chunkSize/ }),
  row('a cell that holds TEXT', BAD, (db) => db.readBlob('canary', 'data', 43), { message: /TEXT, not a BLOB/ }),
];

/** Names `open()` must take or refuse. */
const OPEN_NAMES = [
  row(
    'a database name with a character across byte 5 (фото.db)',
    null,
    async (db, api) => {
      const photos = await api.open('фото.db');
      try {
        return await photos.query('SELECT 1 AS x');
      } finally {
        await photos.close();
      }
    },
    { want: [{ x: 1 }], opfs: true },
  ),
  row('a storage option that is a number', BAD, (db, api) => api.open('storage-42.db', { storage: 42 }), { message: /storage/ }),
  row('a file: URI name', BAD, (db, api) => api.open('file:x.db?mode=memory'), { message: /URI/ }),
];

const TABLE = [
  ['value', BAD_VALUES],
  ['shape', BAD_SHAPES],
  ['blob', BAD_BLOBS],
  ['sql', SQL_ERRORS],
  ['limit', LIMITS],
  ['closed', CLOSED_CALLS],
  ['transaction', TRANSACTIONS],
  ['message', RAW_MESSAGES],
  ['file', DAMAGED_FILES],
  ['name', NAMES],
  ['open', OPEN_NAMES],
];

// Rows that need OPFS: those marked, the closed calls (the canary is read
// after a reopen) and the damaged files (made in the OPFS pool).
const NEEDS_OPFS = new Set(['closed', 'file']);

for (const [group, rows] of TABLE) {
  for (const r of rows) {
    const expect = r.code ?? (r.want === undefined ? 'resolves' : `resolves to ${JSON.stringify(r.want)}`);
    const opfs = r.opfs || NEEDS_OPFS.has(group);
    test(`${group}: ${r.name} → ${expect}`, { timeout: ROW_TIMEOUT + 30_000, opfs }, async (t) => {
      const got = await runRow(t, r);
      const { result } = got;
      assert.ok(!result.hung, `hung for ${ROW_TIMEOUT} ms`);
      if (r.code === null) {
        assert.equal(result.ok, true, `expected success, got ${JSON.stringify(result.error)}`);
        if (r.want !== undefined) assert.deepEqual(result.value, r.want);
      } else {
        assert.equal(result.ok, false, `expected ${r.code}, the call resolved to ${JSON.stringify(result.value)?.slice(0, 200)}`);
        const e = result.error;
        assert.equal(e.isResqError, true, `a ResqError, got ${JSON.stringify(e)}`);
        assert.equal(e.code, r.code, e.message?.slice(0, 300));
        if (r.errno !== undefined) assert.equal(e.errno, r.errno);
        if (r.message) assert.match(e.message, r.message);
      }
      assert.equal(got.same, true, 'the canary checksum changed');
      assert.deepEqual(got.next, { ok: true, value: [{ n: CANARY_ROWS }] }, 'the next call answers');
    });
  }
}

test('the table has at least 40 classes that must fail, each with its code', () => {
  const failing = TABLE.flatMap(([, rows]) => rows).filter((r) => r.code !== null);
  assert.ok(failing.length >= 40, `${failing.length}`);
  assert.equal(new Set(TABLE.flatMap(([, rows]) => rows).map((r) => r.name)).size, TABLE.flatMap(([, rows]) => rows).length, 'class names are unique');
});

test('100 MB of SQL is refused before it reaches wasm memory: the worker grows by at most 2 MB', async (t) => {
  // The probe worker reports the instance's memory (the package has no such hook).
  hp = await start({ probe: {} });
  const name = dbName(t);
  const r = await inPage(
    hp.page,
    async ({ open, outcome, probe, scratch }, name) => {
      const db = await open(name, scratch);
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
