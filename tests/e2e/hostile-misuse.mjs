// Rows of misuse for hostile.test.mjs: calls after close(), misuse inside
// transactions, garbage posted straight to the worker, damaged database
// files, odd names for the blob reads, and names open() must take or refuse.
// As in hostile-rows.mjs, a row's function travels to the page as source.

import { row, BAD, CLOSED, NOT_FOUND, CANARY_ROWS } from './hostile-rows.mjs';

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

export const CLOSED_CALLS = [
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
export const TRANSACTIONS = [
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
  row('COMMIT through tx.executeBatch', BAD, (db) => db.transaction((tx) => tx.executeBatch('COMMIT', [[]])), {
    message: /may not BEGIN, COMMIT/,
  }),
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
export const RAW_MESSAGES = [
  row('a string posted to the worker', null, (db, api, c) => c.post('DELETE FROM canary'), { want: 'no reply' }),
  row('null posted to the worker', null, (db, api, c) => c.post(null), { want: 'no reply' }),
  row('undefined posted to the worker', null, (db, api, c) => c.post(undefined), { want: 'no reply' }),
  row('an object without op', null, (db, api, c) => c.post({ id: 1e15, sql: 'DELETE FROM canary' }), { want: 'no reply' }),
  row('an unknown op', null, (db, api, c) => c.post({ id: 1e15, op: 'drop', sql: 'DELETE FROM canary' }), { want: 'no reply' }),
  row("an op named after Object.prototype's toString", null, (db, api, c) => c.post({ id: 1e15, op: 'toString' }), { want: 'no reply' }),
  row('a request whose id is a string', null, (db, api, c) => c.post({ id: 'x', op: 'execute', sql: 'DELETE FROM canary' }), {
    want: 'no reply',
  }),
  row('execute whose sql is a number', BAD, (db, api, c) => c.post({ id: 1e15, op: 'execute', sql: 42 }), {
    message: /sql must be a string/,
  }),
  row('query whose sql is an object', BAD, (db, api, c) => c.post({ id: 1e15, op: 'query', sql: { toString: 'DELETE' } }), {
    message: /sql must be a string/,
  }),
  row('readBlob whose table is a number', BAD, (db, api, c) => c.post({ id: 1e15, op: 'readBlob', table: 1, column: [], rowid: 'x' }), {
    message: /table must be a non-empty name/,
  }),
  row('executeBatch whose sets are not an array', BAD, (db, api, c) =>
    c.post({ id: 1e15, op: 'executeBatch', sql: 'DELETE FROM canary', sets: 'x' }),
  ),
  row(
    'blobStreamRead of an unknown session, 10 GB long',
    BAD,
    (db, api, c) => c.post({ id: 1e15, op: 'blobStreamRead', session: 'x', offset: -1, length: 1e10 }),
    { message: /stream has ended/ },
  ),
  row(
    'a second open (another database, in memory)',
    BAD,
    (db, api, c) =>
      c.post({ id: 1e15, op: 'open', name: 'swap.db', storage: 'memory', blobTransferThreshold: 0, lock: 'resq-hostile-swap' }),
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
export const DAMAGED_FILES = [
  row(
    'a database file truncated to half',
    'SQLITE_CORRUPT',
    (db, api, c) => c.damaged('half.db', (w, size) => w.truncate(4096 + (size - 4096) / 2)),
    {
      errno: 11,
    },
  ),
  row(
    'a database file with a page overwritten',
    'SQLITE_CORRUPT',
    (db, api, c) => c.damaged('page.db', (w) => w.write({ type: 'write', position: 4096 + 8192, data: new Uint8Array(8192).fill(0x55) })),
    { errno: 11 },
  ),
  row(
    'a database file whose SQLite header is overwritten',
    'SQLITE_NOTADB',
    (db, api, c) =>
      c.damaged('magic.db', (w) => w.write({ type: 'write', position: 4096, data: new TextEncoder().encode('Not a database!!') })),
    { errno: 26 },
  ),
  row(
    'a text file where the database was',
    'SQLITE_NOTADB',
    (db, api, c) =>
      c.damaged('text.db', async (w) => {
        await w.truncate(4096);
        await w.write({
          type: 'write',
          position: 4096,
          data: new TextEncoder().encode('hello, a text file and not SQLite at all.\n'.repeat(400)),
        });
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
export const NAMES = [
  row('a table and column named with quotes, spaces, a dot and a non-ASCII letter', null, (db) => db.readBlob('we"ird t.ä', 'da ta"', 1), {
    want: { bytes: [0xca, 0xfe, 0xf0, 0x0d] },
  }),
  row('a table name ending in "; DROP TABLE canary"', NOT_FOUND, (db) => db.readBlob('canary; DROP TABLE canary', 'data', 1), {
    message: /no such table/,
  }),
  row('a column name carrying SQL', NOT_FOUND, (db) => db.readBlob('canary', 'data FROM canary; DROP TABLE canary; --', 1), {
    message: /no such column/,
  }),
  row('a table name in double quotes', NOT_FOUND, (db) => db.readBlob('"canary"', 'data', 1)),
  row('a table name qualified with its schema', NOT_FOUND, (db) => db.readBlob('main.canary', 'data', 1)),
  row('a table name with spaces that does not exist', NOT_FOUND, (db) => db.readBlob('no such table', 'data', 1)),
  row('a non-ASCII table name that does not exist', NOT_FOUND, (db) => db.readBlob('фото', 'data', 1)),
  row('blobStream of a table name carrying SQL', NOT_FOUND, (db, api, c) =>
    c.drain(db.blobStream('canary"; DROP TABLE canary; --', 'data', 1)),
  ),
  row('blobFile of a column name carrying SQL', NOT_FOUND, (db) => db.blobFile('canary', 'data" FROM canary; --', 1)),
  row('an empty table name', BAD, (db) => db.readBlob('', 'data', 1), { message: /table must be a non-empty name/ }),
  row('a table name that is a number', BAD, (db) => db.readBlob(42, 'data', 1), { message: /table must be a non-empty name/ }),
  row('a column name that is null', BAD, (db) => db.blobFile('canary', null, 1), { message: /column must be a non-empty name/ }),
  row('a column name that is an object', BAD, (db, api, c) => c.drain(db.blobStream('canary', { toString: () => 'data' }, 1)), {
    message: /column/,
  }),
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
export const OPEN_NAMES = [
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
    { want: [{ x: 1 }] },
  ),
  row('a storage option that is a number', BAD, (db, api) => api.open('storage-42.db', { storage: 42 }), { message: /storage/ }),
  row('a file: URI name', BAD, (db, api) => api.open('file:x.db?mode=memory'), { message: /URI/ }),
];
