// This worker's queue: requests run one at a time, in the order they
// arrived, with two holds on it.
//
// - A transaction. While a caller has one open (it is the `owner`), only
//   its requests run. One that keeps others waiting and makes no call of
//   its own for its `transactionTimeout` is rolled back, and its caller is
//   told (`onExpire`): no tab waits forever on a frozen one, or on a
//   callback awaiting something that never comes.
// - An export. Under WAL it reads a snapshot (snapshots.rs): only what
//   would end it waits for it (another export, an import, a rekey, the
//   page's close). Without WAL (a database in memory) it `holds` the
//   writer: only its reads run, and its caller's leaving, so the pages it
//   reads are all of one state. One that is not read for EXPORT_IDLE_MS
//   while a request waits for it ends, and its next read fails with
//   SQLITE_ABORT: a forgotten stream cannot hold the database for good.
//
// - A checkpoint. The WAL is copied into the database file in slices of a
//   few milliseconds (backfill.rs), after the request whose commit took the
//   WAL past its bound, and when the worker has been quiet. Meanwhile the
//   writer is held: reads run beside it, writes wait for the copy's end, so
//   the commit after it writes the WAL over from its start and the WAL
//   stays bounded, as if SQLite had copied it all at once.
//
// Each caller is a session. While the writer is held (a request running
// that awaits, a `File` being streamed in, say; a checkpoint; or another
// caller's open transaction or export), a session's read (`READS`) that is next in its
// order runs beside it on a reader (`Work.read`): under WAL it sees the
// last commit, never a part of a transaction. A caller has one request in
// flight at a time, wherever it runs, so its calls still complete in the
// order it made them, and a read after its own write sees that write. A
// read the reader cannot run (a write, a transaction statement, a temp
// table of the writer's) goes back to the head of the queue, for the
// writer. Live queries re-run beside a request that holds the writer
// past its first turn, on the reader, so a commit's watchers hear of it
// while the next long write runs.
//
// Should running a request ever throw, the worker can no longer promise an
// answer to anything, so it ends (`die`): every tab then rejects its
// pending calls with RESQ_WORKER_DIED.
//
// The connection comes in as a function: the rules load without the wasm,
// and are unit tested so.

import type { Request } from '../protocol.js';
import type { Caller } from './callers.js';
import type { Engine } from './engine.js';
import { nextTurn } from './turn.js';

/** The part of the connection the queue uses. */
export type QueueEngine = Pick<Engine, 'transactionOpen' | 'transactionCallback' | 'execute' | 'exportEnd'>;

export interface Entry {
  from: Caller;
  req: Request | { op: 'leave' };
  /** When it was queued (performance.now()). */
  at: number;
}

/** The export in progress. */
export interface Exporting {
  from: Caller;
  id: number;
  size: number;
  read: number;
  /** When it began or was last read (performance.now()). */
  active: number;
  /** It reads on the writer, not a snapshot: nothing else may run until it ends. */
  holds: boolean;
}

/** What waits for an export on a snapshot (the rest runs beside it): each would end it. */
export const ENDS_EXPORT: ReadonlySet<string> = new Set(['exportOpen', 'importStaged', 'rekey', 'close']);

/** How long an export may go unread while a request waits for it. */
export const EXPORT_IDLE_MS = 10_000;

/** Requests run between live-query re-runs while the queue stays busy. */
export const RERUN_EVERY = 16;

/**
 * Ops that may run beside the writer, and where: `reader`, on the worker's
 * reader (reads in one call, a live query's first run and its end); or
 * `snapshot`, on the writer's connection, which reads them on a snapshot
 * (snapshots.rs): a `blobStream`'s, and `readBlob` (far into a value, on
 * one kept for it).
 */
export const READS: ReadonlyMap<string, 'reader' | 'snapshot'> = new Map([
  ['query', 'reader'],
  ['queryBytes', 'reader'],
  ['blobFile', 'reader'],
  ['watch', 'reader'],
  ['unwatch', 'reader'],
  ['readBlob', 'snapshot'],
  ['blobStreamOpen', 'snapshot'],
  ['blobStreamRead', 'snapshot'],
  ['blobStreamClose', 'snapshot'],
]);

/** What the queue runs, and whom it tells. */
export interface Work {
  run(from: Caller, req: Request): Promise<void>;
  /**
   * Runs a read on a reader beside the writer: `null` when there is none
   * (a database in memory, or not in WAL mode yet); else it resolves
   * `false`, having answered nothing, when the writer must run it.
   */
  read(from: Caller, req: Request): Promise<boolean> | null;
  leave(from: Caller): Promise<void>;
  /** Between requests, outside transactions and exports: live queries re-run. */
  idle(): void;
  /**
   * A request has held the writer past its first turn (it awaits: a `File`
   * streaming in, say): live queries re-run beside it, on a reader, where
   * there is one (they see the last commit, so an open transaction does
   * not matter to them).
   */
  rerunBeside(): void;
  /** `owner`'s transaction was rolled back by its timeout. */
  expired(owner: Caller): void;
  /** After a request: whether its commit took the WAL past its bound. */
  checkpointDue(): boolean;
  /** Copies a slice of the WAL into the database file: whether more is left. */
  checkpoint(): boolean;
  die(err: unknown): void;
}

export class Queue {
  /** The caller whose transaction is open: only its requests run. */
  owner: Caller | null = null;
  exporting: Exporting | null = null;
  #entries: Entry[] = [];
  /** Sessions with a request in flight, on the writer or a reader (see `#session`). */
  #busy = new Set<object>();
  /** The session of each caller's bindings' live queries (see `#session`). */
  #own = new WeakMap<Caller, object>();
  /** Entries a reader gave back: the writer runs them. */
  #forWriter = new WeakSet<Entry>();
  #work: Work;
  /** The connection (`null` before open and after close). */
  #conn: () => QueueEngine | null;
  #pumping = false;
  #running: Entry | null = null;
  /** A checkpoint is asked for (`checkpoint`), or copying (see the top). */
  #checkpointAsked = false;
  #copying = false;
  /** The owner's transactionTimeout, and when it last made a call. */
  #timeout = Infinity;
  /** The timeout of the transaction that opens next, when its BEGIN said. */
  #next: number | null = null;
  #active = 0;
  #stallTimer: ReturnType<typeof setTimeout> | undefined;
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(work: Work, conn: () => QueueEngine | null) {
    this.#work = work;
    this.#conn = conn;
  }

  enqueue(from: Caller, req: Entry['req']): void {
    this.#entries.push({ from, req, at: performance.now() });
    this.#kick();
  }

  /** Runs what can run now: on the writer, and on a reader beside it. */
  #kick(): void {
    if (!this.#pumping) this.#pump().catch((err) => this.#work.die(err));
    else {
      this.#overtake();
      this.#watch();
    }
  }

  /** Nothing runs, waits, or holds the writer: a time for housekeeping (a checkpoint). */
  quiet(): boolean {
    return !this.#pumping && this.#entries.length === 0 && this.#busy.size === 0 && !this.owner && !this.exporting;
  }

  /** Copies the WAL into the database file, in slices, in the queue's next turn outside a transaction. */
  checkpoint(): void {
    this.#checkpointAsked = true;
    this.#kick();
  }

  /** Drops the requests of `c` still queued (it left). */
  drop(c: Caller): void {
    this.#entries = this.#entries.filter((e) => e.from !== c);
  }

  /** The transaction that opens next times out after `timeout` ms of keeping others waiting. */
  timeoutNext(timeout: number): void {
    this.#next = timeout;
  }

  beginExport(e: Exporting): void {
    this.exporting = e;
  }

  endExport(): void {
    this.exporting = null;
    this.#conn()?.exportEnd();
    clearTimeout(this.#stallTimer);
  }

  /**
   * The session `e` is in: its caller, or, for a live query of the
   * bindings' (`own`), a session of their own beside the caller's, which
   * is neither in the caller's order nor in its transaction.
   */
  #session(e: Entry): object {
    if (e.req.op !== 'watch' || !e.req.own) return e.from;
    let s = this.#own.get(e.from);
    if (!s) this.#own.set(e.from, (s = {}));
    return s;
  }

  /** Whether `e` is a call of the open transaction's owner (in its transaction). */
  #owners(e: Entry): boolean {
    return e.from === this.owner && this.#session(e) === e.from;
  }

  /** Whether `e` may run now, on the writer. */
  #runnable(e: Entry): boolean {
    if (this.#busy.has(this.#session(e)) || this.#waitsForExport(e)) return false;
    return this.owner === null || this.#owners(e);
  }

  /** Whether the export in progress keeps `e` waiting. */
  #waitsForExport(e: Entry): boolean {
    const x = this.exporting;
    if (!x) return false;
    if (!x.holds) return e.from !== x.from && ENDS_EXPORT.has(e.req.op);
    return e.from !== x.from || !(e.req.op === 'leave' || e.req.op === 'exportRead' || e.req.op === 'exportClose');
  }

  /**
   * Starts on a reader each read that may overtake the writer: one that is
   * next in its caller's order, while the writer is held for it (a request
   * running, or another caller's transaction or export).
   */
  #overtake(): void {
    const writing = this.#running !== null || this.#copying;
    if (!writing && this.owner === null && !this.exporting?.holds) return;
    const before = new Set<object>();
    for (let i = 0; i < this.#entries.length; i++) {
      const e = this.#entries[i];
      const session = this.#session(e);
      const first = !before.has(session);
      before.add(session);
      if (!first || !this.#mayRead(e)) continue;
      if (!writing && this.#owners(e)) continue;
      const done = this.#work.read(e.from, e.req as Request);
      if (!done) return; // no reader: the writer runs them in turn
      this.#entries.splice(i--, 1);
      this.#busy.add(session);
      done.then(
        (answered) => {
          this.#busy.delete(session);
          if (!answered) {
            this.#forWriter.add(e);
            this.#entries.unshift(e);
          }
          this.#kick();
        },
        (err) => this.#work.die(err),
      );
    }
  }

  /** Whether a reader may run `e`: a read in one call, not of a transaction, not sent again, not given back. */
  #mayRead(e: Entry): boolean {
    if (!READS.has(e.req.op) || this.#forWriter.has(e) || this.#busy.has(this.#session(e)) || e.from.expired) return false;
    const r = e.req as Request & { tx?: boolean; again?: boolean };
    return !r.tx && !r.again;
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    let sinceRerun = 0;
    for (;;) {
      if (this.#checkpointAsked && this.owner === null && !this.exporting?.holds) await this.#copy();
      const i = this.#entries.findIndex((e) => this.#runnable(e));
      if (i < 0) break;
      const [entry] = this.#entries.splice(i, 1);
      this.#running = entry;
      const session = this.#session(entry);
      this.#busy.add(session);
      // What others queued meanwhile may run beside it.
      const ran = entry.req.op === 'leave' ? this.#work.leave(entry.from) : this.#work.run(entry.from, entry.req);
      this.#overtake();
      const beside = setTimeout(() => this.#work.rerunBeside(), 0);
      await ran;
      clearTimeout(beside);
      this.#busy.delete(session);
      this.#running = null;
      const owner = this.#conn()?.transactionOpen() ? entry.from : null;
      if (owner && owner !== this.owner) this.#timeout = this.#next ?? owner.timeout;
      this.#next = null;
      this.owner = owner;
      if (owner) this.#active = performance.now();
      if (this.#work.checkpointDue()) this.#checkpointAsked = true;
      // Live queries re-run outside transactions (never on uncommitted
      // data) and exports, when the queue is idle or every so often under load.
      const more = this.#entries.some((e) => this.#runnable(e));
      if (owner === null && !this.exporting?.holds && (!more || ++sinceRerun >= RERUN_EVERY)) {
        sinceRerun = 0;
        this.#work.idle();
      }
    }
    this.#pumping = false;
    this.#overtake();
    this.#watch();
  }

  /**
   * Copies the WAL in slices, each in a turn of its own: what arrives
   * meanwhile is queued, and reads run beside it on a reader.
   */
  async #copy(): Promise<void> {
    this.#checkpointAsked = false;
    this.#copying = true;
    try {
      while (this.#work.checkpoint()) {
        this.#overtake();
        await nextTurn();
      }
    } finally {
      this.#copying = false;
    }
  }

  /** Looks at what holds the queue up: a stalled export ends, an idle transaction that others wait on expires. */
  #watch(): void {
    this.#watchStall();
    this.#watchExpiry();
  }

  #watchStall(): void {
    clearTimeout(this.#stallTimer);
    const x = this.exporting;
    if (!x) return;
    const waiting = this.#entries.find((e) => this.#waitsForExport(e));
    if (!waiting) return;
    const due = Math.max(x.active, waiting.at) + EXPORT_IDLE_MS - performance.now();
    if (due > 0) {
      this.#stallTimer = setTimeout(() => this.#watch(), due);
      return;
    }
    this.endExport();
    if (!this.#pumping) this.#pump().catch((err) => this.#work.die(err));
  }

  #watchExpiry(): void {
    clearTimeout(this.#expiryTimer);
    const owner = this.owner;
    // A call of the owner's running or queued: it is not idle.
    if (!owner || (this.#running && this.#owners(this.#running)) || this.#entries.some((e) => this.#owners(e))) return;
    const waiting = this.#entries.find((e) => e.from !== owner);
    if (!waiting || !Number.isFinite(this.#timeout)) return;
    const due = Math.max(this.#active, waiting.at) + this.#timeout - performance.now();
    if (due > 0) {
      this.#expiryTimer = setTimeout(() => this.#watch(), due);
      return;
    }
    this.#expire(owner);
  }

  /**
   * Rolls back the open transaction, if any: its owner's time ran out, or it
   * left with it open (its tab closed mid-transaction).
   */
  rollBack(): void {
    const conn = this.#conn();
    if (!conn?.transactionOpen()) return;
    // Not as a transaction callback's call, which may not roll back.
    conn.transactionCallback(false);
    conn.execute('ROLLBACK', undefined);
  }

  /** Rolls back `owner`'s transaction: it kept others waiting for too long. */
  #expire(owner: Caller): void {
    this.rollBack();
    owner.expired = true;
    this.owner = null;
    this.#work.expired(owner);
    if (!this.#pumping) this.#pump().catch((err) => this.#work.die(err));
  }
}
