// resq-wasm: a real SQLite database for offline web apps.
//
//   import { open } from 'resq-wasm';
//   const db = await open('media.db');
//   await db.execute('CREATE TABLE IF NOT EXISTS photos(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
//   const rows = await db.query('SELECT id, name FROM photos');
//
// SQLite runs in a dedicated worker that `open()` starts; this module never
// loads the wasm. Calls are messages; rows come back as JSON bytes.

import { checkSource, type ImportSource } from './backup.js';
import { Database } from './database.js';
import { keyBytes } from './keyproof.js';
import { Link } from './link.js';
import { ResqError, badParam } from './errors.js';
import { Transfer, isDetached } from './params.js';
import { canStartWorkers } from './spawn.js';
import type { AskedStorage, Storage } from './protocol.js';

export { Database, ResqError, Transfer };
export { StagedBlob } from './staged.js';
export type { ImportSource } from './backup.js';
export type { BlobRange, BlobReads, Transaction } from './database.js';
export type { ResqErrorCode } from './errors.js';
export type { Subscription, WatchOptions } from './watch.js';
export type { Params, SqlValue } from './params.js';
export type { RunResult, Storage } from './protocol.js';
export type { Row } from './rows.js';

/**
 * Blob values at or above this many bytes cross between the page and the
 * worker as transferred buffers; smaller ones are copied by structured clone.
 * Measured: benches/experiments/001-blob-transfer-threshold.md.
 */
export const DEFAULT_BLOB_TRANSFER_THRESHOLD = 64 * 1024;

export interface OpenOptions {
  /**
   * `'opfs'` (persistent), `'idb'` (persistent, in IndexedDB: for browsers
   * whose workers have no OPFS sync access handles) or `'memory'`.
   * Default: memory for `':memory:'`; for a file name, where its data is,
   * else OPFS where the browser has sync access handles in a worker, else
   * IndexedDB. `db.storage` says which it got.
   */
  storage?: Storage;
  /** Bytes; see {@link DEFAULT_BLOB_TRANSFER_THRESHOLD}. */
  blobTransferThreshold?: number;
  /**
   * Milliseconds a `transaction()` may keep other calls waiting (another
   * tab's, or this page's own `db`) without making a call of its own;
   * then it is rolled back, and its next `tx` call and the `transaction()`
   * promise reject with RESQ_TIMEOUT. Default 5,000. A transaction that
   * nobody waits on is never timed out.
   */
  transactionTimeout?: number;
  /**
   * Encryption at rest (ChaCha20-Poly1305, SQLite3 Multiple Ciphers): a
   * passphrase, or 32 raw bytes (used as the key, with no derivation). A
   * wrong or missing key, or a key for a plain database, rejects with
   * RESQ_BAD_KEY. OPFS only. See docs/API.md, "Encryption at rest".
   */
  key?: string | Uint8Array;
}

/** Default of {@link OpenOptions.transactionTimeout}, in ms. */
export const DEFAULT_TRANSACTION_TIMEOUT = 5000;

/** The options `open` knows: anything else is a mistake to report, not ignore. */
const OPTIONS = new Set(['storage', 'blobTransferThreshold', 'transactionTimeout', 'key']);

/** Checks `open`'s options; returns the timeout. */
function checkOptions(options: unknown): number {
  if (options === null || typeof options !== 'object') throw badParam('open() options must be an object, such as { storage: "memory" }');
  for (const k of Object.keys(options)) {
    if (!OPTIONS.has(k)) throw badParam(`open() has no option "${k}" (it takes ${[...OPTIONS].join(', ')})`);
  }
  const o = options as OpenOptions;
  const timeout = o.transactionTimeout ?? DEFAULT_TRANSACTION_TIMEOUT;
  if (typeof timeout !== 'number' || !(timeout > 0))
    throw badParam('transactionTimeout must be a number of milliseconds, more than 0 (Infinity: never)');
  return timeout;
}

/**
 * Hands bytes to the worker without a copy: the buffer behind `bytes` is
 * transferred and becomes detached (length 0) here. Only the view's bytes are
 * stored.
 */
export function transfer(bytes: ArrayBuffer | ArrayBufferView): Transfer {
  const buffer = bytes instanceof ArrayBuffer ? bytes : ArrayBuffer.isView(bytes) ? bytes.buffer : null;
  if (buffer === null) throw badParam('transfer() takes an ArrayBuffer or an ArrayBufferView such as Uint8Array');
  // No view can be made over a detached buffer (a TypeError): mark it, and
  // the call it is passed to refuses it, naming the parameter.
  if (isDetached(buffer)) return new Transfer(new Uint8Array(0), true);
  if (bytes instanceof ArrayBuffer) return new Transfer(new Uint8Array(bytes));
  const view = bytes as ArrayBufferView;
  return new Transfer(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
}

/**
 * Opens (creating if needed) a database. Names SQLite would make a memory
 * database of (`':memory:'` with `storage: 'opfs'`, a `file:` URI) are
 * refused with RESQ_BAD_PARAM: never a silent memory database.
 *
 * An OPFS database may be open in any number of tabs (and several times in
 * one): one tab's worker holds it and the others' calls go there (see
 * link.ts). A memory database is private to its `open()`.
 */
export async function open(name: string, options: OpenOptions = {}): Promise<Database> {
  if (typeof name !== 'string') throw badParam('open() takes a database name such as "media.db"');
  const timeout = checkOptions(options);
  // A file name's default is decided in the worker: OPFS where it has sync
  // access handles, else IndexedDB, and where the name's data already is.
  const storage: AskedStorage = options.storage ?? (name === ':memory:' ? 'memory' : 'default');
  if ((storage as string) === 'default' && options.storage !== undefined)
    throw badParam("unknown storage 'default'; use 'opfs', 'idb' or 'memory', or leave it out");
  const threshold = options.blobTransferThreshold ?? DEFAULT_BLOB_TRANSFER_THRESHOLD;
  if (typeof threshold !== 'number' || !(threshold >= 0)) throw badParam('blobTransferThreshold must be a number of bytes, 0 or more');
  if (!canStartWorkers()) throw new ResqError('RESQ_UNSUPPORTED', 'resq-wasm needs Web Workers');
  if (storage === 'opfs' && !globalThis.navigator?.storage?.getDirectory) {
    throw new ResqError(
      'RESQ_UNSUPPORTED',
      "this browser has no origin private file system (OPFS); use { storage: 'idb' } or { storage: 'memory' }",
    );
  }
  if (storage === 'idb' && !globalThis.indexedDB) {
    throw new ResqError('RESQ_UNSUPPORTED', "this browser has no IndexedDB here; use { storage: 'memory' }");
  }
  // The key's one check, into its one form (keyproof.ts); the worker checks
  // that a memory database takes none.
  const key = options.key === undefined ? undefined : keyBytes(options.key);
  const link = new Link({ name, storage, blobTransferThreshold: threshold === Infinity ? -1 : threshold, timeout, key });
  await link.ready;
  return new Database(link, threshold, timeout, () => link.close());
}

/**
 * Replaces a database with the database file `source` (a `Blob`, a `File`
 * or a `ReadableStream` of bytes, such as another database's `export()`),
 * only once SQLite has checked all of it: a file that is not an SQLite
 * database is refused with SQLITE_NOTADB, a truncated or damaged one with
 * SQLITE_CORRUPT, and the database is then unchanged. The file streams
 * into the worker's temp space and is copied over the database page by
 * page, in one transaction: never whole in memory.
 *
 * `target` is an OPFS database's name (opened for the call, and shared
 * with the tabs that have it open, whose watches see the new contents),
 * or an open `Database` of any storage.
 */
export async function importDatabase(
  target: string | Database,
  source: ImportSource,
  options: { key?: string | Uint8Array; storage?: Storage } = {},
): Promise<void> {
  if (options === null || typeof options !== 'object') throw badParam('importDatabase() options must be an object');
  for (const k of Object.keys(options))
    if (k !== 'key' && k !== 'storage') throw badParam(`importDatabase() has no option "${k}" (it takes key and storage)`);
  checkSource(source);
  if (options.storage !== undefined && (target instanceof Database || options.storage === 'memory'))
    throw badParam(
      "importDatabase()'s storage is where a database name lives ('opfs' or 'idb'): a memory database is imported into as its open Database",
    );
  // The key's one check (as a name's is open()'s, below).
  if (target instanceof Database) return target.importFrom(source, options.key === undefined ? undefined : keyBytes(options.key));
  if (typeof target !== 'string') throw badParam('importDatabase() takes a database name such as "media.db", or an open Database');
  if (target === ':memory:')
    throw badParam("a ':memory:' database is private to the open() that made it: pass that Database to importDatabase()");
  // A key opens the database as well as the file: an encrypted file imports only into an encrypted database.
  const db = await open(target, {
    ...(options.storage === undefined ? {} : { storage: options.storage }),
    ...(options.key === undefined ? {} : { key: options.key }),
  });
  try {
    await db.importFrom(source);
  } finally {
    await db.close().catch(() => {});
  }
}
