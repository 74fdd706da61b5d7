// Peer: @sqlite.org/sqlite-wasm (the SQLite project's own build), used as its
// README and the oo1 docs show: sqlite3InitModule() in a dedicated worker,
// the "opfs-sahpool" VFS (installOpfsSAHPoolVfs, default options) and an
// oo1 OpfsSAHPoolDb. Protocol: see client.js.
//
// Note: with SharedArrayBuffer (a cross-origin isolated page), the default
// sqlite3InitModule() also installs the "opfs" and "opfs-wl" VFSes, each
// starting a sqlite3-opfs-async-proxy.js worker this peer never uses; that
// is part of its documented cold start and is left as is.
import { serve } from './rpc.js';
import sqlite3InitModule from '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs';

let sqlite3, pool, db;

const settings = () => ({
  journal_mode: db.selectValue('PRAGMA journal_mode'),
  synchronous: db.selectValue('PRAGMA synchronous'),
  page_size: db.selectValue('PRAGMA page_size'),
  vfs: pool.vfsName,
  version: sqlite3.version.libVersion,
});
const bind = (params) => (params?.length ? params : undefined);
const num = (v) => (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v);

const ops = {
  async open({ name }) {
    sqlite3 = await sqlite3InitModule();
    pool = await sqlite3.installOpfsSAHPoolVfs();
    db = new pool.OpfsSAHPoolDb(`/${name}`);
    db.exec('PRAGMA page_size=8192');
    db.exec('PRAGMA journal_mode=TRUNCATE');
    db.exec('PRAGMA synchronous=FULL');
    return settings();
  },
  exec({ sql, params }) {
    db.exec({ sql, bind: bind(params) });
    return { changes: db.changes(), lastInsertRowid: num(sqlite3.capi.sqlite3_last_insert_rowid(db)) };
  },
  query({ sql, params }) {
    // oo1 copies BLOB cells out of wasm memory into fresh Uint8Arrays.
    return db.selectObjects(sql, bind(params));
  },
  batch({ sql, sets }) {
    let changes = 0;
    // db.transaction: BEGIN, callback, COMMIT; ROLLBACK if the callback throws.
    db.transaction(() => {
      const stmt = db.prepare(sql);
      try {
        for (const set of sets) {
          if (set?.length) stmt.bind(set);
          stmt.stepReset();
          changes += db.changes();
        }
      } finally {
        stmt.finalize();
      }
    });
    return { changes };
  },
  close({ drop }) {
    const file = drop ? db?.filename : undefined;
    db?.close();
    db = undefined;
    // Throwaway benchmark databases free their pool slots (the pool holds
    // six by default, and a TRUNCATE journal keeps a slot of its own).
    if (file) for (const f of [file, `${file}-journal`]) pool.unlink(f);
    // Releases the pool's access handles so the next worker can take them.
    pool?.pauseVfs();
    return true;
  },
};

serve(ops);
