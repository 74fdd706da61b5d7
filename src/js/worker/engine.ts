// The wasm boundary, typed once. wasm-bindgen's generated `.d.ts` types
// every JsValue as `any`; `Engine` says what each call really takes and
// gives, and `engine()` assigns the generated `Connection` to it, so a Rust
// signature that changes (a method renamed, a parameter added or retyped)
// fails `tsc` here instead of misbehaving at run time. The one connection
// of this worker and its temp space live here too.

import { Connection, sqlLimit, streamLimit, transactionEnd } from '../wasm/resq_wasm.js';
import { ENCRYPTED_WORKER_NAME, type QueryResult, type RunResult, type Storage, type WatchResult, type WireError } from '../protocol.js';
import type { StageSpace } from './stage.js';

/** `execute`'s answer: with `streams` when Blob parameters are to be written into their cells. */
export type Executed = RunResult & { streams?: Blob[] };

/** What this worker calls on its connection. Properties, not methods: their parameters are checked strictly. */
export interface Engine {
  execute: (sql: string, params: unknown) => Executed;
  /** `more`: parts of this batch follow (one savepoint holds them all); the figures are those of the parts so far. */
  executeBatch: (sql: string, sets: unknown[], more: boolean) => RunResult;
  /** Ends a batch in parts between two parts: they are all undone. */
  batchAbort: () => void;
  executeBatchEncoded: (sql: string, encoded: Uint8Array) => RunResult;
  query: (sql: string, params: unknown) => QueryResult;
  queryBytes: (sql: string, params: unknown) => Uint8Array;
  watchQuery: (sql: string, params: unknown, bytes: boolean, previous: string) => WatchResult | null;
  queryTables: (sql: string) => string[];
  takeChanged: () => string[];
  transactionCallback: (on: boolean) => void;
  transactionOpen: () => boolean;
  /** After `query`/`queryBytes`: the Blobs a write with RETURNING left to write into their cells, or null. */
  takeStreams: () => Blob[] | null;
  streamWrite: (stream: number, offset: number, chunk: Uint8Array) => void;
  streamEnd: (ok: boolean) => void;
  blobRange: (table: string, column: string, rowid: number | bigint, offset?: number | null, length?: number | null) => Float64Array;
  readBlob: (table: string, column: string, rowid: number | bigint, offset?: number | null, length?: number | null) => Uint8Array;
  blobStreamOpen: (
    tab: string,
    table: string,
    column: string,
    rowid: number | bigint,
    offset?: number | null,
    length?: number | null,
  ) => Float64Array;
  blobStreamRead: (tab: string, session: number, offset: number, length: number) => Uint8Array;
  blobStreamClose: (tab: string, session: number) => void;
  blobStreamsClose: (tab: string) => void;
  exportBegin: () => number;
  exportRead: (max: number) => Uint8Array;
  exportEnd: () => void;
  importDatabase: (size: number, read: (at: number, length: number) => Uint8Array, key: unknown) => void;
  callBegin: (sql: string) => boolean;
  callWrote: () => boolean;
  callEnd: (tab: string, seq: number, below: number, result?: Uint8Array | null) => void;
  callAbort: () => void;
  callRecord: (tab: string, seq: number, below: number, result: Uint8Array) => void;
  callFind: (tab: string, seq: number) => Uint8Array | undefined;
  callsKeep: (live: string[]) => void;
  callsForget: (tab: string) => void;
  /** Throws RESQ_UNSUPPORTED when the pages are too small to be encrypted. */
  encryptable: () => void;
  /** A new key as `open` takes it, or null to decrypt. */
  rekey: (key: unknown) => void;
  close: () => void;
}

/** Opens a connection: `Connection.open` typed as an {@link Engine}. */
export async function openEngine(
  name: string,
  storage: Storage,
  blobTransferThreshold: number,
  key: unknown,
  encrypt: boolean,
): Promise<Engine> {
  const c: Engine = await Connection.open(name, storage, blobTransferThreshold, key, encrypt);
  return c;
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
  stages: StageSpace | null;
  closedByPage: boolean;
  /** An encrypted database's key as following tabs prove it (keyproof.ts); null when plain. */
  key: Uint8Array | null;
} = { conn: null, stages: null, closedByPage: false, key: null };

/**
 * This worker runs the wasm with ciphers: a worker for `open(name, { key })`
 * is named so (link.ts); every other loads the plain wasm.
 */
export const cipher = (globalThis as unknown as { name: string }).name.startsWith(ENCRYPTED_WORKER_NAME);

/** The connection, or RESQ_CLOSED. */
export function connection(): Engine {
  if (!db.conn) throw refusal('RESQ_CLOSED', 'the database is closed');
  return db.conn;
}

/** An error reply, thrown by the ops and sent to the caller as it is. */
export function refusal(code: string, message: string, errno?: number): WireError {
  return errno === undefined ? { code, message } : { code, message, errno };
}
