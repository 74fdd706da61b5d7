// Peer: sql.js, memory only (it is not durable), used as its README shows:
// initSqlJs({ locateFile }) then new SQL.Database(), run / prepare / bind /
// step / getAsObject / getRowsModified. Protocol: see client.js.
//
// sql.js ships no ES module, only a UMD script (CommonJS or a global
// `initSqlJs`), and a module worker cannot importScripts(). So this does what
// a bundler's CommonJS interop does: provide `module`/`exports` and import the
// file the package's "browser" export points at (dist/sql-wasm-browser.js).
// (A dynamic import, so the message handler below is in place first.)
import { serve } from './rpc.js';

const loaded = (async () => {
  globalThis.module = { exports: {} };
  globalThis.exports = globalThis.module.exports;
  await import('/node_modules/sql.js/dist/sql-wasm-browser.js');
  return globalThis.module.exports;
})();
loaded.catch(() => {}); // reported by open

let SQL, db;

function rows(sql, params) {
  const stmt = db.prepare(sql);
  try {
    if (params?.length) stmt.bind(params);
    const out = [];
    // getAsObject copies BLOB cells out of wasm memory (getBlob).
    while (stmt.step()) out.push(stmt.getAsObject());
    return out;
  } finally {
    stmt.free();
  }
}
const one = (sql) => Object.values(rows(sql)[0])[0];

const ops = {
  async open() {
    const initSqlJs = await loaded;
    SQL = await initSqlJs({ locateFile: (file) => `/node_modules/sql.js/dist/${file}` });
    // initSqlJs assigns `module = undefined` (sloppy-mode code run here as a
    // strict module): the globals must live until it has run.
    delete globalThis.module;
    delete globalThis.exports;
    db = new SQL.Database();
    db.run('PRAGMA page_size=8192');
    db.run('PRAGMA journal_mode=TRUNCATE');
    db.run('PRAGMA synchronous=FULL');
    return {
      journal_mode: one('PRAGMA journal_mode'),
      synchronous: one('PRAGMA synchronous'),
      page_size: one('PRAGMA page_size'),
      vfs: 'memory',
      version: one('SELECT sqlite_version()'),
    };
  },
  exec({ sql, params }) {
    db.run(sql, params?.length ? params : undefined);
    const changes = db.getRowsModified();
    // sql.js has no last-insert-rowid call: a user asks SQLite for it.
    return { changes, lastInsertRowid: one('SELECT last_insert_rowid()') };
  },
  query({ sql, params }) {
    return rows(sql, params);
  },
  batch({ sql, sets }) {
    let changes = 0;
    db.run('BEGIN');
    try {
      const stmt = db.prepare(sql);
      try {
        for (const set of sets) {
          stmt.run(set?.length ? set : undefined); // bind, step, reset
          changes += db.getRowsModified();
        }
      } finally {
        stmt.free();
      }
      db.run('COMMIT');
    } catch (e) {
      try {
        db.run('ROLLBACK');
      } catch {
        /* no transaction left to roll back */
      }
      throw e;
    }
    return { changes };
  },
  close() {
    db?.close();
    db = undefined;
    return true;
  },
};

serve(ops);
