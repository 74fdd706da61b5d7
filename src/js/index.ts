// resq-wasm: a real SQLite database for offline web apps.
//
//   import { open } from 'resq-wasm';
//   const db = await open('media.db');
//   await db.execute('CREATE TABLE IF NOT EXISTS photos(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
//   const rows = await db.query('SELECT id, name FROM photos');
//
// SQLite runs in a dedicated worker that `open()` starts; this module never
// loads the wasm. Calls are messages; rows come back as JSON bytes.

import { Client } from './client.js';
import { ResqError, badParam } from './errors.js';
import { StagedParam, Transfer, USED, isDetached, prepareParams, type Outgoing, type Params, type SqlValue } from './params.js';
import { FIX_BIGINT, FIX_BLOB_OWN, type Op, type QueryResult, type Requests, type Storage } from './protocol.js';

export { ResqError, Transfer };
export type { ResqErrorCode } from './errors.js';
export type { Params, SqlValue, Storage };

/**
 * Blob values at or above this many bytes cross between the page and the
 * worker as transferred buffers; smaller ones are copied by structured clone.
 * Measured: benches/experiments/001-blob-transfer-threshold.md.
 */
export const DEFAULT_BLOB_TRANSFER_THRESHOLD = 64 * 1024;

export interface OpenOptions {
  /** `'opfs'` (persistent) or `'memory'`. Default: memory for `':memory:'`, else OPFS. */
  storage?: Storage;
  /** Bytes; see {@link DEFAULT_BLOB_TRANSFER_THRESHOLD}. */
  blobTransferThreshold?: number;
}

export interface RunResult {
  /** Rows changed by the statement (for `executeBatch`, by all sets together). */
  changes: number;
  /** A number, or a bigint outside ±(2^53 − 1). */
  lastInsertRowid: number | bigint;
}

/** A result row: column name → value (BLOBs as `Uint8Array`, big integers as `bigint`). */
export type Row = Record<string, null | number | bigint | string | Uint8Array>;

/** A byte range of a stored value; both default to the whole value. */
export interface BlobRange {
  offset?: number;
  length?: number;
}

function identifier(what: string, name: unknown): string {
  if (typeof name !== 'string' || name === '') throw badParam(`${what} must be a non-empty name`);
  return name;
}

function checkRowid(rowid: unknown): number | bigint {
  if (typeof rowid === 'bigint' || Number.isSafeInteger(rowid)) return rowid as number | bigint;
  throw badParam(`rowid must be an integer (a number or a bigint), not ${String(rowid)}`);
}

/** A stored value's address, checked: table and column names, rowid. */
function cell(table: unknown, column: unknown, rowid: unknown): Requests['blobRange'] {
  return { table: identifier('table', table), column: identifier('column', column), rowid: checkRowid(rowid) };
}

/** The address of a stored BLOB and a range of it, type-checked (the worker checks the range). */
function blobFields(table: unknown, column: unknown, rowid: unknown, options: BlobRange | undefined): Requests['readBlob'] {
  const fields: Requests['readBlob'] = cell(table, column, rowid);
  const { offset, length } = options ?? {};
  if (offset !== undefined) fields.offset = byteCount('offset', offset);
  if (length !== undefined) fields.length = byteCount('length', length);
  return fields;
}

function byteCount(what: string, n: unknown): number {
  if (typeof n !== 'number' || !Number.isInteger(n)) throw badParam(`${what} must be a whole number of bytes`);
  return n;
}

/** The calls a transaction callback gets. */
export interface Transaction {
  execute(sql: string, params?: Params): Promise<RunResult>;
  query<R extends Row = Row>(sql: string, params?: Params): Promise<R[]>;
  queryBytes(sql: string, params?: Params): Promise<Uint8Array>;
  executeBatch(sql: string, paramSets: readonly Params[]): Promise<RunResult>;
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

/** Names open in this page: a second open() of one would diverge from the first. */
const openNames = new Set<string>();

/** Opens (creating if needed) a database; see API.md. */
export async function open(name: string, options: OpenOptions = {}): Promise<Database> {
  if (typeof name !== 'string' || name === '') throw badParam('open() takes a database name such as "media.db"');
  const storage = options.storage ?? (name === ':memory:' ? 'memory' : 'opfs');
  if (storage !== 'opfs' && storage !== 'memory') throw badParam(`storage must be 'opfs' or 'memory', not ${String(storage)}`);
  const threshold = options.blobTransferThreshold ?? DEFAULT_BLOB_TRANSFER_THRESHOLD;
  if (typeof threshold !== 'number' || !(threshold >= 0)) throw badParam('blobTransferThreshold must be a number of bytes, 0 or more');
  if (typeof Worker === 'undefined') throw new ResqError('RESQ_UNSUPPORTED', 'resq-wasm needs Web Workers');
  if (storage === 'opfs' && !globalThis.navigator?.storage?.getDirectory) {
    throw new ResqError('RESQ_UNSUPPORTED', "this browser has no origin private file system (OPFS); use { storage: 'memory' }");
  }
  const key = name === ':memory:' ? null : `${storage}:${name}`;
  if (key !== null && openNames.has(key)) {
    throw new ResqError('RESQ_LOCKED', `${name} is already open in this page: share that Database instead of opening it twice`);
  }
  if (key !== null) openNames.add(key);
  const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: `resq-wasm: ${name}` });
  const client = new Client(worker);
  worker.addEventListener('error', (e) => client.die(e.message || 'the worker script failed to load or threw'));
  worker.addEventListener('messageerror', () => client.die('a reply could not be deserialized'));
  const forget = () => {
    worker.terminate();
    if (key !== null) openNames.delete(key);
  };
  try {
    await client.call('open', { name, storage, blobTransferThreshold: threshold === Infinity ? -1 : threshold });
  } catch (err) {
    forget();
    throw err;
  }
  return new Database(client, threshold, forget);
}

const decoder = new TextDecoder();

function decodeRows(r: QueryResult): Row[] {
  const rows = JSON.parse(decoder.decode(r.json)) as Row[];
  const f = r.fixups;
  if (!f) return rows;
  const columns = r.columns!;
  for (let i = 0; i < f.length; i += 5) {
    const row = rows[f[i]];
    const name = columns[f[i + 1]];
    const kind = f[i + 2];
    if (kind === FIX_BIGINT) row[name] = BigInt(row[name] as string);
    else if (kind === FIX_BLOB_OWN) row[name] = r.buffers![f[i + 3]];
    else row[name] = r.side!.slice(f[i + 3], f[i + 3] + f[i + 4]);
  }
  return rows;
}

/** An open database. Calls complete in the order they were made. */
export class Database implements Transaction {
  #client: Client;
  #threshold: number;
  #forget: () => void;
  #closed: Promise<void> | null = null;
  /** While a transaction runs, other calls wait here, in order. */
  #inTransaction = false;
  #waiting: Array<() => void> = [];

  /** @internal use `open()` */
  constructor(client: Client, threshold: number, forget: () => void) {
    this.#client = client;
    this.#threshold = threshold;
    this.#forget = forget;
  }

  // Each call checks and copies its parameters now, as it is made, even when
  // it then waits for a transaction to end: the caller may reuse its buffers
  // and arrays as soon as the call returns.

  execute(sql: string, params?: Params): Promise<RunResult> {
    return this.#gate(this.#request('execute', sql, params, this.#inTransaction)) as Promise<RunResult>;
  }

  query<R extends Row = Row>(sql: string, params?: Params): Promise<R[]> {
    return this.#gate(this.#request('query', sql, params, this.#inTransaction)) as Promise<R[]>;
  }

  queryBytes(sql: string, params?: Params): Promise<Uint8Array> {
    return this.#gate(this.#request('queryBytes', sql, params, this.#inTransaction)) as Promise<Uint8Array>;
  }

  executeBatch(sql: string, paramSets: readonly Params[]): Promise<RunResult> {
    return this.#gate(this.#request('executeBatch', sql, paramSets, this.#inTransaction)) as Promise<RunResult>;
  }

  /**
   * Runs `fn` in a transaction: commits when it resolves, rolls back and
   * re-throws its own error when it throws. Calls on the database made
   * meanwhile wait until it ends.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T> | T): Promise<T> {
    if (typeof fn !== 'function') return this.#gate(() => this.#client.fail(badParam('transaction() takes a function')));
    return this.#gate(async () => {
      this.#inTransaction = true;
      let live = true;
      const guard = (send: () => Promise<unknown>): Promise<never> =>
        (live ? send() : Promise.reject(badParam('this transaction has ended; use the database instead'))) as Promise<never>;
      const tx: Transaction = {
        execute: (sql, params) => guard(this.#request('execute', sql, params, false)),
        query: (sql, params) => guard(this.#request('query', sql, params, false)),
        queryBytes: (sql, params) => guard(this.#request('queryBytes', sql, params, false)),
        executeBatch: (sql, sets) => guard(this.#request('executeBatch', sql, sets, false)),
      };
      const exec = (sql: string) => this.#request('execute', sql, undefined, false)();
      try {
        await exec('BEGIN IMMEDIATE');
        let result: T;
        try {
          result = await fn(tx);
        } catch (err) {
          live = false;
          await exec('ROLLBACK').catch(() => {});
          throw err;
        }
        live = false;
        try {
          await exec('COMMIT');
        } catch (err) {
          await exec('ROLLBACK').catch(() => {});
          throw err;
        }
        return result;
      } finally {
        live = false;
        this.#endTransaction();
      }
    });
  }

  /**
   * The bytes `[offset, offset + length)` of one stored BLOB, read by
   * SQLite's incremental blob I/O: the worker never loads the whole value.
   * An unknown table, column or rowid rejects with RESQ_NOT_FOUND; a range
   * outside the value with RESQ_RANGE.
   */
  readBlob(table: string, column: string, rowid: number | bigint, options: BlobRange = {}): Promise<Uint8Array> {
    return this.#checked('readBlob', () => blobFields(table, column, rowid, options)) as Promise<Uint8Array>;
  }

  /** Closes the database and stops its worker. Later calls reject with RESQ_CLOSED. */
  close(): Promise<void> {
    if (this.#closed) return this.#closed;
    const closing = this.#gate(() => this.#client.call('close', {}).then(() => undefined));
    this.#closed = closing.then(
      () => this.#forget(),
      (err) => {
        this.#forget();
        if (!(err instanceof ResqError && err.code === 'RESQ_WORKER_DIED')) throw err;
      },
    );
    return this.#closed;
  }

  /** @internal Makes the worker's wasm trap: the worker-death tests' hook. */
  [Symbol.for('resq-wasm.crashWorkerForTests')](): Promise<unknown> {
    return this.#client.call('crashForTests', {});
  }

  /** @internal Benchmark counters: the worker's wasm memory and the bytes it has written to OPFS. */
  stats(): Promise<{ wasmMemoryBytes: number; opfsBytesWritten: number }> {
    return this.#gate(() => this.#client.call('stats', {}) as Promise<{ wasmMemoryBytes: number; opfsBytesWritten: number }>);
  }

  /** The worker's wasm memory in bytes (`WebAssembly.Memory` never shrinks). */
  wasmMemoryBytes(): Promise<number> {
    return this.stats().then((s) => s.wasmMemoryBytes);
  }

  #gate<T>(run: () => Promise<T>): Promise<T> {
    if (this.#closed) {
      // In its turn: after close() itself has completed.
      const closed = () => Promise.reject(new ResqError('RESQ_CLOSED', 'the database is closed'));
      return this.#closed.then(closed, closed);
    }
    if (!this.#inTransaction) return run();
    return new Promise<T>((resolve, reject) => this.#waiting.push(() => run().then(resolve, reject)));
  }

  #endTransaction(): void {
    this.#inTransaction = false;
    // Start waiting calls in order, until one of them opens a transaction.
    while (!this.#inTransaction && this.#waiting.length > 0) this.#waiting.shift()!();
  }

  /**
   * Checks the SQL and prepares the parameters now; returns what sends the
   * call. A call that `waits` (for a transaction to end) copies even small
   * buffers now, which the structured clone would otherwise copy only when it
   * is sent. A call refused here still fails in its turn.
   */
  #request(
    op: 'execute' | 'query' | 'queryBytes' | 'executeBatch',
    sql: string,
    params: Params | readonly Params[] | undefined,
    waits: boolean,
  ): () => Promise<unknown> {
    const out: Outgoing = { transfer: new Set(), staged: [] };
    const threshold = waits ? 0 : this.#threshold;
    let fields: Requests['execute'] | Requests['executeBatch'];
    try {
      if (typeof sql !== 'string') throw badParam('sql must be a string');
      if (op === 'executeBatch') {
        if (!Array.isArray(params)) throw badParam('executeBatch takes an array of parameter sets');
        fields = { sql, sets: params.map((p) => prepareParams(p, threshold, out)) };
      } else {
        fields = { sql, params: prepareParams(params, threshold, out) };
      }
    } catch (err) {
      return () => this.#client.fail(err as ResqError);
    }
    // Only `execute` stores staged values (elsewhere the worker refuses them).
    const staged = op === 'execute' ? out.staged : [];
    if (staged.length > 0) (fields as Requests['execute']).staged = true;
    const send = () => this.#client.call(op, fields as Requests['execute'] & Requests['executeBatch'], [...out.transfer]);
    if (op === 'query') return async () => decodeRows((await send()) as QueryResult);
    if (staged.length === 0) return send;
    // A staged blob is consumed by the call that stores it (the worker has
    // discarded it); a failed call leaves it usable.
    return async () => {
      const r = await send();
      for (const b of staged) b[USED]();
      return r;
    };
  }

  /**
   * Temp space for a value built piece by piece (recorded media, a download
   * arriving in parts): chunks go to the worker as they come (memory, then a
   * temporary OPFS file) and never into database pages; passing the staged
   * blob as a parameter to `execute` writes it into its row once.
   */
  stageBlob(): Promise<StagedBlob> {
    const send: Send = (op, fields, transfer) => this.#gate(() => this.#client.call(op, fields, transfer));
    return this.#gate(() => this.#client.call('stageOpen', {})).then((id) => new StagedBlob(id as number, send));
  }

  /**
   * A stored BLOB as a `ReadableStream`, read chunk by chunk on demand
   * (`chunkSize`, default 1 MB): a slow reader makes the worker read no
   * further ahead than one chunk. For playing or copying large media.
   */
  blobStream(table: string, column: string, rowid: number | bigint, options: BlobRange & { chunkSize?: number } = {}): ReadableStream<Uint8Array> {
    const chunkSize = options?.chunkSize ?? 1 << 20;
    let at = 0;
    let end = 0;
    return new ReadableStream<Uint8Array>(
      {
        start: async () => {
          if (!Number.isInteger(chunkSize) || chunkSize < 1) throw badParam('chunkSize must be a whole number of bytes, 1 or more');
          [at, end] = await this.#range(table, column, rowid, options);
        },
        pull: async (controller) => {
          if (at >= end) return controller.close();
          const length = Math.min(chunkSize, end - at);
          const bytes = await this.readBlob(table, column, rowid, { offset: at, length });
          at += length;
          controller.enqueue(bytes);
          if (at >= end) controller.close();
        },
      },
      { highWaterMark: 1 },
    );
  }

  /**
   * A stored BLOB as a DOM `Blob` (for `URL.createObjectURL`). The worker
   * reads it in 4 MB chunks and assembles the `Blob` itself, so the page
   * receives a handle, not bytes to copy.
   */
  blobFile(table: string, column: string, rowid: number | bigint, options: { type?: string } = {}): Promise<Blob> {
    return this.#checked('blobFile', () => {
      const type = options?.type ?? '';
      if (typeof type !== 'string') throw badParam('type must be a string (a MIME type such as "video/webm")');
      return { ...cell(table, column, rowid), type };
    }) as Promise<Blob>;
  }

  /** `[start, end)` of a stored BLOB for a range, checked in the worker as `readBlob` checks it. */
  async #range(table: string, column: string, rowid: number | bigint, options: BlobRange): Promise<[number, number]> {
    const [start, end] = (await this.#checked('blobRange', () => blobFields(table, column, rowid, options))) as Float64Array;
    return [start, end];
  }

  /**
   * Sends `op` with the fields `build` checks and makes. Arguments it
   * refuses fail in their turn, after the calls made before, like every call.
   */
  #checked<K extends Op>(op: K, build: () => Requests[K]): Promise<unknown> {
    let fields: Requests[K];
    try {
      fields = build();
    } catch (err) {
      return this.#gate(() => this.#client.fail(err as ResqError));
    }
    return this.#gate(() => this.#client.call(op, fields));
  }
}

/** Appends a staged blob's `writable` keeps in flight before it waits for one. */
const WRITABLE_IN_FLIGHT = 8;

type Send = <K extends Op>(op: K, fields: Requests[K], transfer?: Transferable[]) => Promise<unknown>;

/** See {@link Database.stageBlob}. */
export class StagedBlob extends StagedParam {
  #id: number;
  #send: Send;
  #size = 0;
  #state: 'open' | 'used' | 'discarded' | 'failed' = 'open';
  #writable: WritableStream<Uint8Array | ArrayBuffer | Blob> | null = null;

  /** @internal use `db.stageBlob()` */
  constructor(id: number, send: Send) {
    super();
    this.#id = id;
    this.#send = send;
  }

  /** Bytes appended so far (counting appends still on their way). */
  get size(): number {
    return this.#size;
  }

  /**
   * Adds bytes at the end. Bytes are copied (you keep your buffer); a `Blob`
   * is read in the worker. Appends complete in call order, so they need not
   * be awaited one by one. A failed append makes the staged blob unusable
   * (later appends would leave a gap): discard it and stage the value again.
   */
  append(chunk: ArrayBuffer | ArrayBufferView | Blob): Promise<void> {
    if (this.#state !== 'open') return Promise.reject(this.#refusal());
    let value: Uint8Array | Blob;
    const transfer: Transferable[] = [];
    if (chunk instanceof Blob) value = chunk;
    else if (chunk instanceof ArrayBuffer || ArrayBuffer.isView(chunk)) {
      const view = chunk instanceof ArrayBuffer ? new Uint8Array(chunk) : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if ((view.buffer as ArrayBuffer & { detached?: boolean }).detached) return this.#fail(badParam("the chunk's buffer is detached"));
      value = new Uint8Array(view);
      transfer.push(value.buffer);
    } else {
      return this.#fail(badParam('append() takes bytes (Uint8Array, ArrayBuffer) or a Blob'));
    }
    this.#size += value instanceof Blob ? value.size : value.byteLength;
    return this.#send('stageAppend', { stage: this.#id, chunk: value }, transfer).then(
      () => undefined,
      (err: ResqError) => this.#fail(err),
    );
  }

  /**
   * A `WritableStream` that appends each chunk: `readable.pipeTo(staged.writable)`.
   * It keeps up to 8 appends in flight, so a fast source does not wait a
   * round trip per chunk; `close()` resolves once all of them are staged.
   * Aborting it (a source that fails midway) makes the staged blob unusable,
   * as a failed append does.
   */
  get writable(): WritableStream<Uint8Array | ArrayBuffer | Blob> {
    this.#writable ??= this.#pipelined();
    return this.#writable;
  }

  #pipelined(): WritableStream<Uint8Array | ArrayBuffer | Blob> {
    const inFlight: Promise<void>[] = [];
    return new WritableStream({
      write: async (chunk) => {
        const appended = this.append(chunk);
        appended.catch(() => {}); // awaited below, or the stream already failed
        inFlight.push(appended);
        if (inFlight.length >= WRITABLE_IN_FLIGHT) await inFlight.shift();
      },
      close: async () => {
        await Promise.all(inFlight.splice(0));
      },
      // The source failed or was cancelled: what was staged is a fragment,
      // so it must not be stored by mistake.
      abort: () => {
        if (this.#state === 'open') this.#state = 'failed';
      },
    });
  }

  /** Frees the staged bytes (also after a failed append). A second call does nothing. */
  discard(): Promise<void> {
    if (this.#state !== 'open' && this.#state !== 'failed') return Promise.resolve();
    this.#state = 'discarded';
    return this.#send('stageDiscard', { stage: this.#id }).then(() => undefined);
  }

  /** Used when this staged blob is passed as a parameter (not for application code). */
  stagedId(label: string): number {
    if (this.#state !== 'open') throw this.#refusal(`${label}: `);
    return this.#id;
  }

  #refusal(prefix = ''): ResqError {
    return badParam(
      this.#state === 'failed'
        ? `${prefix}an earlier append to this staged blob failed (or its writable was aborted); discard it and stage the value again`
        : `${prefix}this staged blob was already ${this.#state}`,
    );
  }

  #fail(err: ResqError): Promise<never> {
    if (this.#state === 'open') this.#state = 'failed';
    return Promise.reject(err);
  }

  /** @internal the call that stored it succeeded */
  [USED](): void {
    this.#state = 'used';
  }
}
