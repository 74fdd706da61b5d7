// The runner of the hostile-input tables, one test a row: hostile.test.mjs
// runs the bad values and shapes, bad BLOBs, SQL errors and limits
// (hostile-rows.mjs), hostile-misuse.test.mjs the calls after close, misuse
// inside transactions, garbage posted straight to the worker, damaged
// database files and odd names (hostile-misuse.mjs).
//
// Every row runs in a fresh database holding a canary (rows, BLOBs, a
// schema). The row's call must reject with exactly its ResqError code (or,
// where the input is legal however odd, resolve to what it should); the
// canary's checksum, SHA-256 over `queryBytes` of every table and the schema
// with `PRAGMA integrity_check`, must be unchanged afterwards; and the next
// call must answer. A row that hangs fails after ROW_TIMEOUT.
//
// The canary and the rows are in hostile-rows.mjs and hostile-misuse.mjs.
// Rows are plain functions `(db, api, c)` sent to the page as source text:
// they can use only their arguments. `c` holds the helpers (HELPERS below).

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName, keepWorkers } from './util.mjs';
import { SETUP, CANARY_ROWS } from './hostile-rows.mjs';

/** A row that has not settled after this long has hung. */
const ROW_TIMEOUT = 60_000;

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
      const db = await api.open(`${state.name}-${suffix}`, options);
      others.push(db);
      return db;
    },
    closeOthers: () => Promise.all(others.map((db) => db.close().catch(() => {}))),
    /** Opens the row's database again; the canary is then checked there. */
    reopen: async () => {
      state.db = await api.open(state.name);
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
      await v.executeBatch(
        'INSERT INTO c(t, b) VALUES (?, ?)',
        Array.from({ length: 60 }, (_, i) => [`row ${i}`, new Uint8Array(3000).fill(i)]),
      );
      await v.close();
      const pool = await (await (await (await root()).getDirectoryHandle('.resq-wasm')).getDirectoryHandle(name)).getDirectoryHandle(
        '.opaque',
      );
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
function runRow(h, t, row) {
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
      const state = { name, db: await api.open(name), worker: window.workers.at(-1) };
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

// Rows that need OPFS: those marked, and the damaged files (made in the
// OPFS pool).
const NEEDS_OPFS = new Set(['file']);

/**
 * One test a row of `table` ([group, rows] pairs), each in a fresh database
 * of one started app (harness.mjs) made before the file's first test.
 */
export function rowTests(table) {
  let h;
  before(async () => {
    h = await start();
    // Raw messages are posted to the database's Worker object.
    await keepWorkers(h.page);
  });
  after(async () => {
    await h?.close();
  });
  for (const [group, rows] of table) {
    for (const r of rows) {
      const expect = r.code ?? (r.want === undefined ? 'resolves' : `resolves to ${JSON.stringify(r.want)}`);
      const opfs = r.opfs || NEEDS_OPFS.has(group);
      test(`${group}: ${r.name} → ${expect}`, { timeout: ROW_TIMEOUT + 30_000, opfs }, async (t) => {
        const got = await runRow(h, t, r);
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
}
