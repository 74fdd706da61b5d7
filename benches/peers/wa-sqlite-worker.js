// Peer: @journeyapps/wa-sqlite (PowerSync's fork of wa-sqlite), used as its
// README shows: SQLiteESMFactory + SQLite.Factory, a VFS from
// src/examples registered as the default with sqlite3.vfs_register.
// Two VFSes, chosen by the worker URL's `vfs` parameter (client.js):
// - `opfs` (default): AccessHandlePoolVFS, a pool of OPFS sync access
//   handles (synchronous methods, so the synchronous build dist/wa-sqlite.mjs,
//   no Asyncify/JSPI);
// - `idb`: IDBBatchAtomicVFS, pages in IndexedDB, a commit one IndexedDB
//   transaction (asynchronous methods, so the Asyncify build
//   dist/wa-sqlite-async.mjs of the same package), PowerSync's default.
// Protocol: see client.js.
import { serve } from './rpc.js';
import * as SQLite from '/node_modules/@journeyapps/wa-sqlite/src/sqlite-api.js';
// Static imports, both kinds (only the chosen build's wasm is fetched): a
// top-level await here would let the first request arrive before serve().
import SyncFactory from '/node_modules/@journeyapps/wa-sqlite/dist/wa-sqlite.mjs';
import AsyncFactory from '/node_modules/@journeyapps/wa-sqlite/dist/wa-sqlite-async.mjs';
import { AccessHandlePoolVFS } from '/node_modules/@journeyapps/wa-sqlite/src/examples/AccessHandlePoolVFS.js';
import { IDBBatchAtomicVFS } from '/node_modules/@journeyapps/wa-sqlite/src/examples/IDBBatchAtomicVFS.js';

const IDB = new URL(import.meta.url).searchParams.get('vfs') === 'idb';
const SQLiteESMFactory = IDB ? AsyncFactory : SyncFactory;
const VFS = IDB ? IDBBatchAtomicVFS : AccessHandlePoolVFS;

// The VFS name is also its OPFS directory or IndexedDB database; one worker
// at a time may hold the OPFS pool.
const VFS_NAME = IDB ? 'wa-sqlite-idb' : 'wa-sqlite-ahp';

let module, sqlite3, vfs, db;

// sqlite3.last_insert_id() returns only the low 32 bits of the rowid (this
// build has no WASM_BIGINT, so an i64 result is split): add the high 32 bits
// from Module.getTempRet0(), as sqlite-api.js itself does for column().
function lastInsertRowid() {
  const lo = sqlite3.last_insert_id(db);
  const hi = module.getTempRet0();
  return hi * 0x100000000 + (lo >>> 0);
}

async function rows(sql, params) {
  const out = [];
  for await (const stmt of sqlite3.statements(db, sql)) {
    if (params?.length) sqlite3.bind_collection(stmt, params);
    let columns;
    while ((await sqlite3.step(stmt)) === SQLite.SQLITE_ROW) {
      columns ??= sqlite3.column_names(stmt);
      // row() copies BLOBs out of wasm memory (column_blob alone is a view).
      const row = sqlite3.row(stmt);
      const obj = {};
      for (let i = 0; i < columns.length; i++) obj[columns[i]] = row[i];
      out.push(obj);
    }
  }
  return out;
}

let dbName;

const ops = {
  async open({ name }) {
    dbName = name;
    module = await SQLiteESMFactory();
    sqlite3 = SQLite.Factory(module);
    vfs = await VFS.create(VFS_NAME, module);
    sqlite3.vfs_register(vfs, true);
    db = await sqlite3.open_v2(name);
    const one = async (sql) => Object.values((await rows(sql))[0])[0];
    // IDBBatchAtomicVFS refuses a page_size on a database that has pages.
    if (!IDB || (await one('PRAGMA page_count')) === 0) await sqlite3.exec(db, 'PRAGMA page_size=8192');
    // IDBBatchAtomicVFS writes a commit as one batch, without a journal
    // file, where the journal fits in the page cache (its README): its
    // default journal mode. FULL: each commit's transaction is 'strict'.
    if (!IDB) await sqlite3.exec(db, 'PRAGMA journal_mode=TRUNCATE');
    await sqlite3.exec(db, 'PRAGMA synchronous=FULL');
    return {
      journal_mode: await one('PRAGMA journal_mode'),
      synchronous: await one('PRAGMA synchronous'),
      page_size: await one('PRAGMA page_size'),
      vfs: vfs.name,
      version: sqlite3.libversion(),
    };
  },
  async exec({ sql, params }) {
    for await (const stmt of sqlite3.statements(db, sql)) {
      if (params?.length) sqlite3.bind_collection(stmt, params);
      while ((await sqlite3.step(stmt)) === SQLite.SQLITE_ROW);
    }
    return { changes: sqlite3.changes(db), lastInsertRowid: lastInsertRowid() };
  },
  query({ sql, params }) {
    return rows(sql, params);
  },
  async batch({ sql, sets }) {
    let changes = 0;
    await sqlite3.exec(db, 'BEGIN');
    try {
      for await (const stmt of sqlite3.statements(db, sql)) {
        for (const set of sets) {
          if (set?.length) sqlite3.bind_collection(stmt, set);
          await sqlite3.step(stmt);
          changes += sqlite3.changes(db);
          await sqlite3.reset(stmt);
        }
      }
      await sqlite3.exec(db, 'COMMIT');
    } catch (e) {
      if (!sqlite3.get_autocommit(db)) await sqlite3.exec(db, 'ROLLBACK');
      throw e;
    }
    return { changes };
  },
  async close({ drop }) {
    if (db !== undefined) await sqlite3.close(db);
    db = undefined;
    // Throwaway benchmark databases free their pool slots.
    if (drop) for (const f of [dbName, `${dbName}-journal`]) await vfs?.jDelete(f, 0);
    // Releases the pool's access handles so the next worker can take them.
    await vfs?.close();
    return true;
  },
};

serve(ops);
