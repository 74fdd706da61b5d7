// The messages between the page and the worker. Mirrors src/codec/wire.rs
// (the `query()` result layout); change both together.
//
// Every request carries an id; the worker answers each one, in the order it
// received them, with a Reply of the same id. A worker that can no longer
// answer (a wasm trap) sends one Fatal and closes.

export type Storage = 'opfs' | 'memory';

export interface Requests {
  open: { name: string; storage: Storage; blobTransferThreshold: number };
  /** `staged`: the parameters hold staged blobs (`{ __resqStaged: id }`) to store. */
  execute: { sql: string; params?: unknown; staged?: true };
  query: { sql: string; params?: unknown };
  queryBytes: { sql: string; params?: unknown };
  executeBatch: { sql: string; sets: unknown[] };
  readBlob: { table: string; column: string; rowid: number | bigint; offset?: number; length?: number };
  blobRange: { table: string; column: string; rowid: number | bigint; offset?: number; length?: number };
  blobFile: { table: string; column: string; rowid: number | bigint; type: string };
  stageOpen: Record<string, never>;
  stageAppend: { stage: number; chunk: Uint8Array | Blob };
  stageDiscard: { stage: number };
  close: Record<string, never>;
  /** Counters for benchmarks: wasm memory, bytes written to OPFS. */
  stats: Record<string, never>;
  /** Makes the wasm panic (trap), for the worker-death tests. */
  crashForTests: Record<string, never>;
  /**
   * A call the page already refused (a bad parameter): the worker only sends
   * `error` back, so the rejection comes in its turn, after the replies to
   * the calls made before it.
   */
  fail: { error: WireError };
}

export type Op = keyof Requests;
export type Request = { [K in Op]: { id: number; op: K } & Requests[K] }[Op];

/** An error as it crosses the boundary: a plain, cloneable object. */
export interface WireError {
  code: string;
  message: string;
  errno?: number;
}

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };
export interface Fatal {
  fatal: string;
}

/** What `query` sends: JSON rows plus fix-ups for the cells JSON cannot carry. */
export interface QueryResult {
  json: Uint8Array;
  columns?: string[];
  /** Five numbers per fix-up: row, column, kind, a, b. */
  fixups?: Float64Array;
  /** Small BLOBs, back to back. */
  side?: Uint8Array;
  /** BLOBs at or above the transfer threshold, each in its own buffer. */
  buffers?: Uint8Array[];
}

/** `null` in the JSON; the bytes are side[a .. a + b]. */
export const FIX_BLOB_INLINE = 0;
/** `null` in the JSON; the bytes are buffers[a]. */
export const FIX_BLOB_OWN = 1;
/** A string of digits in the JSON; the value is BigInt(digits). */
export const FIX_BIGINT = 2;
