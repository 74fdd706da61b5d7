// The wasm boundary, and this worker's one connection and temp space.
//
// The boundary's type is the generated `Connection` (resq_wasm.d.ts): the
// Rust side names what each method takes and gives (src/worker/entry.rs),
// so a method whose signature changes there (renamed, a parameter added,
// removed or retyped, another result) fails `tsc` where this worker calls
// it. The ops get the connection from `handle` (ops.ts), which reads it
// with `connection()`.

import type { IdbFiles } from './idb.js';
import { Connection, sqlLimit, streamLimit, transactionEnd } from '../wasm/resq_wasm.js';
import { ENCRYPTED_WORKER_NAME, type AskedStorage, type WireError } from '../protocol.js';
import type { StageSpace } from './stage.js';

/** The connection, as the worker's modules name it. */
export type Engine = Connection;

/** Opens a connection (see `Connection.open` in src/worker/entry.rs). */
export function openEngine(
  name: string,
  storage: AskedStorage,
  blobTransferThreshold: number,
  key: Uint8Array | undefined,
  encrypt: boolean,
  idb?: IdbFiles,
): Promise<Engine> {
  return Connection.open(name, storage, blobTransferThreshold, key, encrypt, idb);
}

export const limits = {
  /** Bytes from which a Blob parameter streams (smaller ones are read and bound as bytes). */
  get stream(): number {
    return (streamLimitValue ??= streamLimit());
  },
  /** Longest SQL text the core takes. */
  get sql(): number {
    return (sqlLimitValue ??= sqlLimit());
  },
};
let streamLimitValue: number | undefined;

/** How one statement ends the open transaction, by the core's rule: 'commit', 'rollback' or ''. */
export const endsTransaction = (sql: string): string => transactionEnd(sql);
let sqlLimitValue: number | undefined;

/**
 * This worker's one database: its connection (`null` before open and after
 * close), its temp space, and whether its page closed it (following tabs'
 * calls then go to the next tab that leads).
 */
export const db: {
  conn: Engine | null;
  /** A reader beside `conn` (see `reader()`), once one was needed. */
  reader: Engine | null;
  stages: StageSpace | null;
  closedByPage: boolean;
  /** An encrypted database's key in its one form (keyproof.ts), as following tabs prove it; null when plain. */
  key: Uint8Array | null;
  /** A database in IndexedDB: its files there, whose syncs complete after their calls (idb.ts). */
  idb: IdbFiles | null;
  /** Opens the database again from what its storage holds (set at open: worker.ts). */
  reload: (() => Promise<void>) | null;
} = { conn: null, reader: null, stages: null, closedByPage: false, key: null, idb: null, reload: null };

/**
 * The reader that runs other sessions' reads while the writer is held
 * (queue.ts), opened when first needed; `null` where there is none: a
 * database in memory, or one not in WAL mode yet (the core says
 * RESQ_ON_WRITER; asked again next time).
 */
export function reader(): Engine | null {
  if (db.reader || !db.conn) return db.reader;
  try {
    db.reader = db.conn.reader();
  } catch {
    return null;
  }
  return db.reader;
}

/**
 * Closes the reader, if open: before the writer closes, and before it
 * leaves WAL for a rekey or an import, which an open reader would keep it
 * from (SQLITE_BUSY).
 */
export function closeReader(): void {
  const r = db.reader;
  db.reader = null;
  r?.close();
}

/**
 * This worker runs the wasm with ciphers: a worker for `open(name, { key })`
 * is named so (link.ts); every other loads the plain wasm.
 */
export const cipher = (globalThis as unknown as { name: string }).name.startsWith(ENCRYPTED_WORKER_NAME);

/** The connection, or RESQ_CLOSED: read here for the ops (`handle` in ops.ts hands it on) and live queries. */
export function connection(): Engine {
  if (!db.conn) throw refusal('RESQ_CLOSED', 'the database is closed');
  return db.conn;
}

/** An error reply, thrown by the ops and sent to the caller as it is. */
export function refusal(code: string, message: string, errno?: number): WireError {
  return errno === undefined ? { code, message } : { code, message, errno };
}
