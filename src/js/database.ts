// An open database: the calls, in order, and the transaction gate.

import { exportStream, importInto } from './backup.js';
import { ResqError, badParam } from './errors.js';
import type { Link, Watcher } from './link.js';
import { encodeBatch } from './batch.js';
import { USED, prepareParams, type Outgoing, type Params } from './params.js';
import type { Cell, Op, QueryResult, Range, Replies, Requests, RunResult, Storage } from './protocol.js';
import { decodeRows, type Row } from './rows.js';
import { StagedBlob, type Send } from './staged.js';
import { iterable } from './iterable.js';
import { OWN_SESSION, subscribe, type Subscription, type WatchOptions } from './watch.js';

/** A byte range of a stored value; both default to the whole value. */
export type BlobRange = Range;

/** The transaction open in this `Database`, as its gate needs to know it. */
interface OpenTransaction {
  /** Its calls on their way. */
  busy: number;
  /** When it last made or finished a call (performance.now()). */
  active: number;
  /** Rolls it back: it kept calls waiting for longer than `transactionTimeout`. */
  expire(): void;
}

/** Reads of stored BLOBs, by table, column and rowid (SQLite's incremental blob I/O). */
export interface BlobReads {
  /**
   * The bytes `[offset, offset + length)` of one stored BLOB; the worker
   * never loads the whole value. An unknown table, column or rowid rejects
   * with RESQ_NOT_FOUND; a range outside the value with RESQ_RANGE.
   */
  readBlob(table: string, column: string, rowid: number | bigint, options?: BlobRange): Promise<Uint8Array>;
  /**
   * A stored BLOB as a `ReadableStream`, read chunk by chunk on demand
   * (`chunkSize`, default 1 MB): a slow reader makes the worker read no
   * further ahead than one chunk. It delivers the value it started on, whole,
   * or errors with `SQLITE_ABORT` if that row is changed (or a transaction
   * it began in is rolled back) before it ends: never a mix of two values.
   */
  blobStream(
    table: string,
    column: string,
    rowid: number | bigint,
    options?: BlobRange & { chunkSize?: number },
  ): ReadableStream<Uint8Array>;
  /**
   * A stored BLOB as a DOM `Blob` (for `URL.createObjectURL`), assembled in
   * the worker in one step from 4 MB reads: the page receives a handle, not
   * bytes to copy, and it is always one value.
   */
  blobFile(table: string, column: string, rowid: number | bigint, options?: { type?: string }): Promise<Blob>;
}

/** The calls a transaction callback gets. */
export interface Transaction extends BlobReads {
  execute(sql: string, params?: Params): Promise<RunResult>;
  query<R extends Row = Row>(sql: string, params?: Params): Promise<R[]>;
  queryBytes(sql: string, params?: Params): Promise<Uint8Array>;
  executeBatch(sql: string, paramSets: readonly Params[]): Promise<RunResult>;
}

/**
 * A stored value's address: the worker checks the names, the rowid and the
 * range (worker/ops.ts). A name that is not a string goes as `null`, which
 * the worker refuses by that rule (an object may not even be cloneable).
 */
function cell(table: unknown, column: unknown, rowid: unknown): Cell {
  const name = (v: unknown) => (typeof v === 'string' ? v : null);
  return { table: name(table), column: name(column), rowid } as Cell;
}

/** The address of a stored BLOB and a range of it (the worker checks the rowid and the range). */
function blobFields(table: unknown, column: unknown, rowid: unknown, options: BlobRange | undefined): Cell & Range {
  const { offset, length } = options ?? {};
  return { ...cell(table, column, rowid), offset, length };
}

/**
 * The blob reads over `send`, which sends in the caller's order (the
 * database's gate, or a transaction's). Arguments `send` refuses
 * fail in their turn, like every call.
 */
function blobReads(send: Send, refuse: (err: ResqError) => Promise<never>, generation: () => number): BlobReads {
  const checked = <K extends Op>(op: K, build: () => Requests[K]): Promise<Replies[K]> => {
    let fields: Requests[K];
    try {
      fields = build();
    } catch (err) {
      return refuse(err as ResqError);
    }
    return send(op, fields);
  };
  return {
    readBlob: (table, column, rowid, options = {}) => checked('readBlob', () => blobFields(table, column, rowid, options)),
    blobFile: (table, column, rowid, options = {}) =>
      checked('blobFile', () => ({ ...cell(table, column, rowid), type: options?.type ?? '' })),
    blobStream: (table, column, rowid, options = {}) => {
      const chunkSize = options?.chunkSize ?? 1 << 20;
      let session = 0;
      let at = 0;
      let end = 0;
      // The session lives in one worker: after a failover, reads reject.
      let held = 0;
      const close = () => void send('blobStreamClose', { session }, [], held).catch(() => {});
      const stream = new ReadableStream<Uint8Array>(
        {
          start: async () => {
            if (!Number.isInteger(chunkSize) || chunkSize < 1) throw badParam('chunkSize must be a whole number of bytes, 1 or more');
            [session, at, end] = await checked('blobStreamOpen', () => blobFields(table, column, rowid, options));
            held = generation();
            if (at >= end) close();
          },
          pull: async (controller) => {
            if (at >= end) return controller.close();
            const length = Math.min(chunkSize, end - at);
            const bytes = await send('blobStreamRead', { session, offset: at, length }, [], held);
            at += length;
            controller.enqueue(bytes);
            if (at >= end) controller.close();
          },
          cancel: () => {
            if (at < end) close();
          },
        },
        { highWaterMark: 1 },
      );
      return iterable(stream);
    },
  };
}

/** An open database. Calls complete in the order they were made. */
export class Database implements Transaction {
  #link: Link;
  #threshold: number;
  #forget: () => void;
  #closed: Promise<void> | null = null;
  /** While a transaction runs, other calls wait here, in order. */
  #txOpen = false;
  #waiting: Array<{ at: number; run: () => void }> = [];
  #tx: OpenTransaction | null = null;
  #timeout: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #reads: BlobReads;
  /** Stoppers of the exports running, for `close()`. */
  #exports = new Set<(err: ResqError) => void>();

  /**
   * Where the database lives: `'opfs'`, `'idb'` (IndexedDB) or `'memory'`.
   * A file name opened without `storage` gets OPFS where the browser has
   * sync access handles in a worker, else IndexedDB (docs/API.md).
   */
  get storage(): Storage {
    return this.#link.storage;
  }

  /** @internal use `open()` */
  constructor(link: Link, threshold: number, timeout: number, forget: () => void) {
    this.#link = link;
    this.#threshold = threshold;
    this.#timeout = timeout;
    this.#forget = forget;
    link.onExpired = () => this.#tx?.expire();
    this.#reads = blobReads(
      this.#send,
      (err) => this.#gate(() => this.#link.fail(err)),
      () => this.#link.generation,
    );
  }

  // Each call checks and copies its parameters now, as it is made, even when
  // it then waits for a transaction to end: the caller may reuse its buffers
  // and arrays as soon as the call returns.

  execute(sql: string, params?: Params): Promise<RunResult> {
    return this.#gate(this.#request('execute', sql, params, this.#txOpen));
  }

  query<R extends Row = Row>(sql: string, params?: Params): Promise<R[]> {
    return this.#gate(this.#request('query', sql, params, this.#txOpen)).then((r) => decodeRows(r) as R[]);
  }

  queryBytes(sql: string, params?: Params): Promise<Uint8Array> {
    return this.#gate(this.#request('queryBytes', sql, params, this.#txOpen));
  }

  executeBatch(sql: string, paramSets: readonly Params[]): Promise<RunResult> {
    return this.#gate(this.#request('executeBatch', sql, paramSets, this.#txOpen));
  }

  readBlob(table: string, column: string, rowid: number | bigint, options: BlobRange = {}): Promise<Uint8Array> {
    return this.#reads.readBlob(table, column, rowid, options);
  }

  blobStream(
    table: string,
    column: string,
    rowid: number | bigint,
    options: BlobRange & { chunkSize?: number } = {},
  ): ReadableStream<Uint8Array> {
    return this.#reads.blobStream(table, column, rowid, options);
  }

  blobFile(table: string, column: string, rowid: number | bigint, options: { type?: string } = {}): Promise<Blob> {
    return this.#reads.blobFile(table, column, rowid, options);
  }

  /**
   * Runs `fn` in a transaction (`BEGIN IMMEDIATE`): commits when it
   * resolves, rolls back and re-throws its own error when it throws.
   *
   * Inside `fn`, use `tx`, never `db`: calls on the database made meanwhile
   * wait until the transaction ends. A transaction that keeps calls waiting
   * (this page's own `db` calls, or another tab's) and makes no call of its
   * own for `transactionTimeout` (an `open` option, 5 s by default) is
   * rolled back: the promise rejects with RESQ_TIMEOUT, and so does the
   * callback's next `tx` call. So a `db` call awaited inside the callback
   * ends that way, not in a wait forever.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T> | T): Promise<T> {
    if (typeof fn !== 'function') return this.#gate(() => this.#link.fail(badParam('transaction() takes a function')));
    return this.#gate(() => {
      this.#txOpen = true;
      // Set when the callback may make no more calls: it ended, or timed out.
      let over: ResqError | null = null;
      // The worker that runs BEGIN holds the transaction: its every call,
      // COMMIT and ROLLBACK included, goes there or nowhere (link.ts).
      let held: number | undefined;
      let timedOut!: (err: ResqError) => void;
      const expired = new Promise<never>((_, reject) => (timedOut = reject));
      const state: OpenTransaction = {
        busy: 0,
        active: performance.now(),
        expire: () => {
          if (over) return;
          over = new ResqError(
            'RESQ_TIMEOUT',
            `this transaction was rolled back: it kept other calls waiting and made no call of its own for ${this.#timeout} ms (transactionTimeout)`,
          );
          // The worker's record of it ends with this ROLLBACK, which does
          // nothing there when the worker rolled it back already.
          void this.#link.call('execute', { sql: 'ROLLBACK', txn: 'rollback' }, [], held).catch(() => {});
          timedOut(over);
        },
      };
      const ended = () => badParam('this transaction has ended; use the database instead');
      // A call on its way keeps the transaction from expiring.
      const busy = <R>(send: () => Promise<R>): Promise<R> => {
        state.busy += 1;
        state.active = performance.now();
        return send().finally(() => {
          state.busy -= 1;
          state.active = performance.now();
          this.#armTimeout();
        });
      };
      const guard = <R>(send: () => Promise<R>): Promise<R> => (over ? Promise.reject(over) : busy(send));
      const send: Send = (op, fields, transfer) => guard(() => this.#link.call(op, fields, transfer, held));
      const tx: Transaction = {
        execute: (sql, params) => guard(this.#request('execute', sql, params, false, held)),
        query: (sql, params) => guard(this.#request('query', sql, params, false, held)).then((r) => decodeRows(r) as never),
        queryBytes: (sql, params) => guard(this.#request('queryBytes', sql, params, false, held)),
        executeBatch: (sql, sets) => guard(this.#request('executeBatch', sql, sets, false, held)),
        ...blobReads(
          send,
          (err) => guard(() => this.#link.fail(err)),
          () => held!,
        ),
      };
      const exec = (sql: string, txn: 'begin' | 'commit' | 'rollback') =>
        busy(() => this.#link.call('execute', { sql, txn, ...(txn === 'begin' ? { timeout: this.#timeout } : {}) }, [], held));
      const run = async (): Promise<T> => {
        await exec('BEGIN IMMEDIATE', 'begin');
        held = this.#link.generation;
        let result: T;
        try {
          result = await fn(tx);
        } catch (err) {
          if (!over) {
            over = ended();
            await exec('ROLLBACK', 'rollback').catch(() => {});
          }
          throw err;
        }
        if (over) throw over;
        over = ended();
        try {
          await exec('COMMIT', 'commit');
        } catch (err) {
          await exec('ROLLBACK', 'rollback').catch(() => {});
          throw err;
        }
        return result;
      };
      this.#tx = state;
      const body = run();
      body.catch(() => {});
      return Promise.race([body, expired]).finally(() => {
        over ??= ended();
        if (this.#tx === state) this.#tx = null;
        this.#endTransaction();
      });
    });
  }

  /**
   * Temp space for a value built piece by piece (recorded media, a download
   * arriving in parts): chunks go to the worker as they come (memory, then a
   * temporary OPFS file) and never into database pages; passing the staged
   * blob as a parameter to `execute` writes it into its row once.
   */
  stageBlob(): Promise<StagedBlob> {
    return this.#send('stageOpen', {}).then((id) => new StagedBlob(id, this.#send, this, this.#link.generation));
  }

  /**
   * A live query. `callback` gets the rows now, then again after every
   * committed change, made in any tab, to a table the query reads, but not
   * when the rows came out the same. Returns the subscription: call it to
   * stop. Without a callback, iterate it instead:
   * `for await (const rows of db.watch(sql, params)) …` (a slow loop skips
   * to the newest rows). `await sub.ready` rejects when the query cannot be
   * watched (invalid SQL, a statement that writes). A callback that throws
   * is reported (`reportError`) and keeps its subscription.
   */
  watch<R extends Row = Row>(sql: string, params?: Params, callback?: (rows: R[]) => void, options: WatchOptions = {}): Subscription<R[]> {
    return this.#watch(sql, params, false, (v) => decodeRows(v as QueryResult) as R[], callback, options);
  }

  /** {@link watch}, with each result as `queryBytes` gives it: UTF-8 JSON text. */
  watchBytes(sql: string, params?: Params, callback?: (json: Uint8Array) => void, options: WatchOptions = {}): Subscription<Uint8Array> {
    return this.#watch(sql, params, true, (v) => v as Uint8Array, callback, options);
  }

  /**
   * {@link watch} or {@link watchBytes} through a session of its own (the
   * bindings' and `resq-wasm/store`'s; see watch.ts): not in this
   * `Database`'s order, nor in its transaction.
   */
  [OWN_SESSION](
    sql: string,
    params: Params | undefined,
    bytes: boolean,
    callback: (value: unknown) => void,
    options: WatchOptions,
  ): Subscription<unknown> {
    const decode = bytes ? (v: QueryResult | Uint8Array) => v : (v: QueryResult | Uint8Array) => decodeRows(v as QueryResult);
    return this.#watch(sql, params, bytes, decode, callback, options, true);
  }

  #watch<T>(
    sql: string,
    params: Params | undefined,
    bytes: boolean,
    decode: (v: QueryResult | Uint8Array) => T,
    callback: ((value: T) => void) | undefined,
    options: WatchOptions,
    own = false,
  ): Subscription<T> {
    let refused: ResqError | null = null;
    let kept: unknown;
    try {
      if (callback !== undefined && typeof callback !== 'function') throw badParam('the watch callback must be a function');
      if (options === null || typeof options !== 'object') throw badParam('watch options must be an object');
      // Kept (copied) for as long as the watch lives: it is sent again to
      // each new leader tab, so nothing is transferred or staged.
      const out: Outgoing = { owner: this, transfer: new Set(), staged: [] };
      kept = prepareParams(params, 0, out);
      const values = kept && typeof kept === 'object' ? Object.values(kept) : [];
      if (out.staged.length > 0 || values.some((v) => v instanceof Blob)) {
        throw badParam('watch parameters are values (numbers, strings, bigints, bytes, null), not Blobs, Files or staged blobs');
      }
    } catch (err) {
      refused = err instanceof ResqError ? err : badParam(`the parameters could not be read: ${String(err)}`);
    }
    const register = (w: Watcher): Promise<number> => {
      if (refused) return this.#link.fail(refused);
      const { id, registered } = this.#link.watch(w);
      return registered.then(
        () => id,
        (err) => {
          this.#link.unwatch(id);
          throw err;
        },
      );
    };
    // A session of its own does not wait for this page's transaction.
    const start = own
      ? (w: Watcher) => (this.#closed ? this.#gate(() => register(w)) : register(w))
      : (w: Watcher) => this.#gate(() => register(w));
    return subscribe(start, (id) => this.#link.unwatch(id), { sql, params: kept, bytes, own }, decode, callback, options);
  }

  /**
   * The database file, as a stream of bytes: a consistent copy, read out
   * of the worker a chunk (whole pages, up to 4 MB) per pull, never whole.
   * Save it as a file, upload it, or pass it to `importDatabase`.
   *
   * On OPFS it reads a snapshot: calls from every tab, this `Database`'s
   * own included, run and commit while it is read; only another export, an
   * import, a rekey and `close()` wait for it. A memory database runs
   * nothing else until it ends (read to the end, cancelled, or `close()`).
   * An export that has gone unread for 10 s while a call waits for it
   * ends, and errors with SQLITE_ABORT, so an abandoned stream holds
   * nobody up for longer.
   */
  export(): ReadableStream<Uint8Array> {
    return exportStream(
      this.#send,
      (op, fields, transfer, generation) => this.#link.call(op, fields, transfer, generation),
      () => this.#link.generation,
      this.#exports,
    );
  }

  /** @internal `importDatabase(this, source, { key })` */
  importFrom(source: unknown, key?: unknown): Promise<void> {
    return importInto(this.#send, () => this.#link.generation, source, key);
  }

  /**
   * Changes the key of an encrypted database (a passphrase or 32 raw
   * bytes): every page is rewritten under it in one transaction, so a crash
   * midway leaves the old key working. Every other tab that has the
   * database open gets RESQ_BAD_KEY from then on, and opens it again with
   * the new key. `rekey(null)` decrypts it, and `rekey(key)` of a plain
   * database encrypts it, as safely.
   */
  rekey(key: string | Uint8Array | null): Promise<void> {
    return this.#gate(() => this.#link.rekey(key));
  }

  /**
   * Closes the database and stops its worker. Later calls reject with
   * RESQ_CLOSED; so do its exports still running. It resolves too when
   * there is nothing left to close (its worker died, another tab changed
   * the key: see Link.closeCall), and so does every later close().
   */
  close(): Promise<void> {
    if (this.#closed) return this.#closed.catch(() => {});
    const closed = new ResqError('RESQ_CLOSED', 'the database is closed');
    for (const stop of [...this.#exports]) stop(closed);
    this.#closed = this.#gate(() => this.#link.closeCall()).finally(() => this.#forget());
    return this.#closed;
  }

  /** Sends one request through the gate. */
  #send: Send = (op, fields, transfer, generation) => this.#gate(() => this.#link.call(op, fields, transfer, generation));

  #gate<T>(run: () => Promise<T>): Promise<T> {
    if (this.#closed) {
      // In its turn: after close() itself has completed.
      const closed = () => Promise.reject(new ResqError('RESQ_CLOSED', 'the database is closed'));
      return this.#closed.then(closed, closed);
    }
    if (!this.#txOpen) return run();
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ at: performance.now(), run: () => run().then(resolve, reject) });
      this.#armTimeout();
    });
  }

  /**
   * While calls wait for this page's transaction: it expires once it has
   * made no call of its own for `transactionTimeout` since they began to
   * wait (see {@link transaction}).
   */
  #armTimeout(): void {
    clearTimeout(this.#timer);
    const tx = this.#tx;
    const first = this.#waiting[0];
    if (!tx || !first || tx.busy > 0 || !Number.isFinite(this.#timeout)) return;
    const due = Math.max(tx.active, first.at) + this.#timeout - performance.now();
    if (due <= 0) return tx.expire();
    this.#timer = setTimeout(() => this.#armTimeout(), due);
  }

  #endTransaction(): void {
    this.#txOpen = false;
    clearTimeout(this.#timer);
    // Start waiting calls in order, until one of them opens a transaction.
    while (!this.#txOpen && this.#waiting.length > 0) this.#waiting.shift()!.run();
  }

  /**
   * Checks the SQL and prepares the parameters now; returns what sends the
   * call. A call that `waits` (for a transaction to end) copies even small
   * buffers now, which the structured clone would otherwise copy only when it
   * is sent. A call refused here still fails in its turn. A call of a
   * transaction callback is marked so, with the worker generation that
   * holds its transaction (`tx`): the worker refuses its SQL if it would
   * begin or end the transaction.
   */
  #request<K extends 'execute' | 'query' | 'queryBytes' | 'executeBatch'>(
    op: K,
    sql: string,
    params: Params | readonly Params[] | undefined,
    waits: boolean,
    tx?: number,
  ): () => Promise<Replies[K]> {
    const out: Outgoing = { owner: this, transfer: new Set(), staged: [] };
    const threshold = waits ? 0 : this.#threshold;
    let fields: Requests[K];
    try {
      // `sql` is checked by the worker, which must check it anyway.
      if (op === 'executeBatch') {
        if (!Array.isArray(params)) throw badParam('executeBatch takes an array of parameter sets');
        const encoded = encodeBatch(params);
        if (encoded) out.transfer.add(encoded.buffer);
        fields = (encoded ? { sql, encoded } : { sql, sets: params.map((p) => prepareParams(p, threshold, out)) }) as Requests[K];
      } else {
        fields = { sql, params: prepareParams(params, threshold, out) } as Requests[K];
      }
    } catch (err) {
      // Not only our own refusals: reading the parameters can throw too (a
      // getter, a Proxy), and the page then learns why.
      const refused = err instanceof ResqError ? err : badParam(`the parameters could not be read: ${String(err)}`);
      return () => this.#link.fail(refused);
    }
    if (tx !== undefined) fields.tx = true;
    // Only `execute` stores staged values (elsewhere the worker refuses them).
    const staged = op === 'execute' ? out.staged : [];
    if (staged.length > 0) (fields as Requests['execute']).staged = true;
    // Staged bytes live in one worker: the call goes there or nowhere.
    const generation = tx ?? staged[0]?.generation;
    if (staged.some((b) => b.generation !== generation)) {
      return () =>
        this.#link.fail(
          new ResqError('RESQ_WORKER_DIED', 'the worker that held a staged blob of this call is gone; stage the value again'),
        );
    }
    const send = () => this.#link.call(op, fields, [...out.transfer], generation);
    if (staged.length === 0) return send;
    // A staged blob is consumed by the call that stores it (the worker has
    // discarded it); a failed call leaves it usable.
    return async () => {
      const r = await send();
      for (const b of staged) b[USED]();
      return r;
    };
  }
}
