// What the inspector lists: a database's tables, views and indexes with
// their rows and bytes, its storage's figures, and the origin's databases.
// Every query here reads; none loads a BLOB (length() and octet_length()
// of a BLOB read its size from the record, not its pages).

import type { Database } from '../database.js';
import { ident } from './dom.js';

export interface Column {
  name: string;
  /** The declared type, '' if none. */
  type: string;
}

export interface Item {
  type: 'table' | 'view' | 'index';
  name: string;
  /** The table an index is on. */
  table: string;
  /** Rows: of a table or view (counted), of an index (its table's). */
  rows: number | null;
  /** The bytes of a table's values (`octet_length` of each), or null. */
  bytes: number | null;
  /** A virtual table (FTS5, R*Tree): its bytes are its module's, not counted. */
  virtual: boolean;
  /** A table's columns, or a view's. */
  columns: Column[];
  /**
   * How to select a row's rowid, so its BLOBs can be read in ranges: a
   * table's (not WITHOUT ROWID, not virtual) first of `rowid`, `oid` and
   * `_rowid_` that no column shadows; else null.
   */
  rowid: string | null;
  sql: string;
}

/** Where the database is and how big: from PRAGMAs, db.storage and the browser's estimate. */
export interface Figures {
  storage: string;
  file: string;
  pageSize: number;
  pages: number;
  freePages: number;
  journal: string;
  /** The origin's, from navigator.storage.estimate(); null where there is none. */
  usage: number | null;
  quota: number | null;
  persisted: boolean | null;
}

type Q = Database['query'];

const one = async (query: Q, sql: string) => Object.values((await query(sql))[0] ?? {})[0];

/** The schema's tables, views and indexes (SQLite's own left out), each with rows and bytes. */
export async function items(db: Database): Promise<Item[]> {
  const query: Q = db.query.bind(db);
  const rows = await query(
    "SELECT type, name, tbl_name AS \"table\", coalesce(sql, '') AS sql FROM sqlite_schema WHERE type IN ('table', 'view', 'index') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type = 'index', type, name",
  );
  // A virtual table's own tables (FTS5's _data, _idx, …) are its storage, not the app's.
  const shadow = new Set((await query("SELECT name FROM pragma_table_list WHERE type = 'shadow'")).map((r) => String(r.name)));
  const out: Item[] = [];
  for (const r of rows.filter((r) => !shadow.has(String(r.name)))) {
    const type = r.type as Item['type'];
    const name = String(r.name);
    const columns =
      type === 'index'
        ? []
        : (await query(`SELECT name, type FROM pragma_table_xinfo(?)`, [name])).map((c) => ({
            name: String(c.name),
            type: String(c.type),
          }));
    const virtual = /^\s*CREATE\s+VIRTUAL\s/i.test(String(r.sql));
    // Table options follow the last ')': WITHOUT ROWID, STRICT, in any order.
    const withoutRowid = /\)[^)]*\bWITHOUT\s+ROWID\b[^)]*$/i.test(String(r.sql));
    const rowid =
      type === 'table' && !virtual && !withoutRowid
        ? (['rowid', 'oid', '_rowid_'].find((a) => !columns.some((c) => c.name.toLowerCase() === a)) ?? null)
        : null;
    out.push({ type, name, table: String(r.table), rows: null, bytes: null, virtual, columns, rowid, sql: String(r.sql) });
  }
  for (const it of out) {
    if (it.type === 'index') continue;
    try {
      it.rows = Number(await one(query, `SELECT count(*) FROM ${ident(it.name)}`));
      if (it.type === 'table' && !it.virtual && it.columns.length > 0)
        it.bytes = Number(
          (await one(
            query,
            `SELECT total(${it.columns.map((c) => `octet_length(${ident(c.name)})`).join(' + ')}) FROM ${ident(it.name)}`,
          )) ?? 0,
        );
    } catch {
      // A virtual table whose module is not here, or a view over one: listed, not counted.
    }
  }
  for (const it of out) if (it.type === 'index') it.rows = out.find((t) => t.name === it.table)?.rows ?? null;
  return out;
}

/** The database's figures and the origin's storage estimate. */
export async function figures(db: Database): Promise<Figures> {
  const query: Q = db.query.bind(db);
  const storage = globalThis.navigator?.storage;
  const estimate = storage?.estimate ? await storage.estimate().catch(() => null) : null;
  const persisted = storage?.persisted ? await storage.persisted().catch(() => null) : null;
  return {
    storage: db.storage,
    file: String((await query("SELECT file FROM pragma_database_list WHERE name = 'main'"))[0]?.file ?? ''),
    pageSize: Number(await one(query, 'PRAGMA page_size')),
    pages: Number(await one(query, 'PRAGMA page_count')),
    freePages: Number(await one(query, 'PRAGMA freelist_count')),
    journal: String(await one(query, 'PRAGMA journal_mode')),
    usage: estimate?.usage ?? null,
    quota: estimate?.quota ?? null,
    persisted,
  };
}

/** Each storage as the inspector names it. */
export const STORAGES: Record<string, string> = { opfs: 'OPFS', idb: 'IndexedDB', memory: 'memory' };

/** A database of the origin, as the inspector offers it to open. */
export interface Stored {
  name: string;
  storage: 'opfs' | 'idb';
}

/**
 * The origin's databases in OPFS and in IndexedDB, by name, read where
 * the package keeps them without creating anything (memory databases are a
 * tab's own and are not listed). OPFS: a folder each in `.resq-wasm/`,
 * named by src/worker/storage.rs's `escape` (`%XX` for each byte outside
 * `[A-Za-z0-9._-]`), undone here; IndexedDB: a `[name]` record each in the
 * `files` store of the origin's `resq-wasm` database (worker/idb.ts).
 */
export async function stored(): Promise<Stored[]> {
  const [opfs, idb] = await Promise.all([opfsNames().catch(() => []), idbNames().catch(() => [])]);
  // A name with files in IndexedDB lives there (codec/placement.rs), even
  // with a folder in OPFS: the worker makes one where it looked at OPFS
  // and found no sync access handles (WebKitGTK).
  const inIdb = new Set(idb);
  const all: Stored[] = [
    ...opfs.filter((name) => !inIdb.has(name)).map((name) => ({ name, storage: 'opfs' as const })),
    ...idb.map((name) => ({ name, storage: 'idb' as const })),
  ];
  return all.sort((a, b) => a.name.localeCompare(b.name));
}

async function opfsNames(): Promise<string[]> {
  const root = await navigator.storage.getDirectory();
  const top = await root.getDirectoryHandle('.resq-wasm').catch(() => null);
  if (!top) return [];
  const names: string[] = [];
  // keys() is in every engine's OPFS, but not yet in TypeScript's DOM types.
  for await (const key of (top as unknown as { keys(): AsyncIterable<string> }).keys()) {
    // The escape is a percent-encoding of the name's UTF-8: a URI component's.
    names.push(decodeURIComponent(key));
  }
  return names;
}

async function idbNames(): Promise<string[]> {
  // Opening would create the database: look first.
  if (!(await indexedDB.databases()).some((d) => d.name === 'resq-wasm')) return [];
  const idb = await request(indexedDB.open('resq-wasm'));
  try {
    if (!idb.objectStoreNames.contains('files')) return [];
    const keys = await request(idb.transaction('files').objectStore('files').getAllKeys());
    return keys.filter((k): k is [string] => Array.isArray(k) && k.length === 1).map((k) => String(k[0]));
  } finally {
    idb.close();
  }
}

const request = <T>(req: IDBRequest<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
