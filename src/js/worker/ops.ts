// What each request does, by op (the replies are typed by protocol.ts),
// and how one is answered: checked, looked up when it was sent before,
// run, recorded with its write when a following tab sent it, replied to.

import type { Op, Replies, Request, Requests, RunResult, WireError } from '../protocol.js';
import type { Caller } from './callers.js';
import { cipher, closeReader, connection, db, endsTransaction, limits, refusal, type Engine } from './engine.js';
import { batchRuns, discardStage, inlineSmall, ownStage, resolveStaged, writeStreams, writeTaken } from './feed.js';
import { unwatch, watch } from './live.js';
import { recorded, recording } from './record.js';
import { toWireError, transferResult } from './replies.js';
import { EXPORT_IDLE_MS, type Queue } from './queue.js';
import { Turns } from './turn.js';

/** Bytes per read when `blobFile` assembles a value, and per `Blob` it adds. */
const FILE_CHUNK = 4 << 20;
const FILE_BATCH = 32 << 20;
/** Bytes an export read returns at most (whole pages; one page at least). */
const EXPORT_CHUNK = 4 << 20;
/** Parameter sets an `executeBatch` runs per step (about a millisecond of small rows). */
const BATCH_STEP = 256;
/** Bytes of a stream's chunk read per step (see blobStreamRead). */
const READ_STEP = 256 << 10;

/** What the ops need besides the connection: the queue (exports), and what closing the database does. */
export interface Context {
  queue: Queue;
  /** The page closed the database: tells the following tabs. */
  closed(): void;
  /** A following tab closed its database: it leaves after this. */
  left(from: Caller): void;
  /** `from` changed the key: every other tab (this worker's page too) is told, and let go. */
  rekeyed(from: Caller): void;
}

/**
 * What one request runs with: the open connection (`handle` hands it on;
 * without one, nothing but `open` runs), its caller, and the buffers its
 * reply moves rather than copies.
 */
export interface Call {
  conn: Engine;
  from: Caller;
  transfer: Transferable[];
  /** Run beside the writer while another call holds it (queue.ts): only what needs nothing of it. */
  beside?: boolean;
}

type Run = { [K in Op]: (req: Requests[K], call: Call, cx: Context) => Promise<Replies[K]> | Replies[K] };

let nextExport = 1;

const exportEnded = (): WireError =>
  refusal(
    'SQLITE_ABORT',
    `this export has ended: it was not read for ${EXPORT_IDLE_MS / 1000} s while other calls waited for it (or it was cancelled); export again`,
    4,
  );

export const ops: Omit<Run, 'open' | 'fail'> = {
  async execute(req, { conn, from }) {
    const used: number[] = [];
    const params = await inlineSmall(req.staged ? resolveStaged(from, req.params, used) : req.params);
    const { changes, lastInsertRowid, streams } = conn.execute(req.sql, params);
    if (streams) await writeStreams(conn, streams);
    for (const id of used) await discardStage(from, id);
    return { changes, lastInsertRowid };
  },
  async query(req, { conn, transfer }) {
    const r = conn.query(req.sql, await inlineSmall(req.params));
    await writeTaken(conn);
    transferResult(r, transfer);
    return r;
  },
  async queryBytes(req, { conn, transfer }) {
    const bytes = conn.queryBytes(req.sql, await inlineSmall(req.params));
    await writeTaken(conn);
    transfer.push(bytes.buffer);
    return bytes;
  },
  async executeBatch(req, { conn }) {
    // In steps of BATCH_STEP sets, the thread given up between them after
    // a turn (turn.ts), so reads from other sessions answer beside a long
    // batch; the core keeps one savepoint from the first step to the last
    // (still all or nothing) and numbers the sets across the whole batch.
    const turns = new Turns();
    if (req.encoded !== undefined) {
      // A wrong type here would trap the instance (see STRING_FIELDS).
      if (!(req.encoded instanceof Uint8Array)) throw refusal('RESQ_BAD_PARAM', 'executeBatch: the encoded parameter sets are not bytes');
      let r = conn.executeBatchEncoded(req.sql, req.encoded, BATCH_STEP);
      while (conn.batchLeft() > 0) {
        await turns.pass();
        r = conn.executeBatchEncoded(req.sql, undefined, BATCH_STEP);
      }
      return r;
    }
    // Sets holding small Blobs are read a step at a time, within a budget (feed.ts).
    const sets = req.sets ?? [];
    let r!: RunResult;
    for (const [start, end] of batchRuns(sets, BATCH_STEP)) {
      if (start > 0) await turns.pass();
      let part: unknown[];
      try {
        part = await Promise.all(sets.slice(start, end).map(inlineSmall));
      } catch (err) {
        conn.batchAbort(); // a Blob that could not be read: the parts before it are undone
        throw err;
      }
      r = conn.executeBatch(req.sql, part, end < sets.length);
    }
    return r;
  },
  // Far into a value, on a snapshot kept for it (snapshots.rs): a player's
  // seeks between other calls do not walk the value from its start.
  readBlob(req, { conn, transfer, beside = false }) {
    const bytes = conn.readRange(req.table, req.column, req.rowid, req.offset, req.length, beside);
    transfer.push(bytes.buffer);
    return bytes;
  },
  blobFile(req, { conn }) {
    // Read in 4 MB chunks and assembled here, FILE_BATCH at a time (the
    // browser composes Blobs by reference), so the page gets a handle, not
    // bytes to copy, and this worker holds at most one batch. One request:
    // no other call runs in between, so it is always one value.
    const [, size] = conn.blobRange(req.table, req.column, req.rowid);
    let file = new Blob([], { type: req.type });
    let batch: BlobPart[] = [];
    for (let at = 0; at < size; at += FILE_CHUNK) {
      batch.push(conn.readBlob(req.table, req.column, req.rowid, at, Math.min(FILE_CHUNK, size - at)) as BlobPart);
      if (batch.length * FILE_CHUNK >= FILE_BATCH || at + FILE_CHUNK >= size) {
        file = new Blob([file, ...batch], { type: req.type });
        batch = [];
      }
    }
    return file;
  },
  // A blob stream's session is its caller's (its tab's id names it): the
  // core keeps the sessions, refuses another caller's, and bounds how many
  // it keeps (reads.rs), so this worker keeps no list of them to cap. It
  // reads on a snapshot of its own where it can (snapshots.rs), and then
  // beside the writer.
  blobStreamOpen(req, { conn, from, beside = false }) {
    return conn.blobStreamOpen(from.tab, req.table, req.column, req.rowid, req.offset, req.length, beside);
  },
  async blobStreamRead(req, { conn, from, transfer, beside = false }) {
    const read = (at: number, length: number) => conn.blobStreamRead(from.tab, req.session, req.offset + at, length, beside);
    // A chunk is read in steps, the thread given to other reads between
    // them (turn.ts): Firefox's OPFS took 130-140 ms for a 4 MiB one.
    // The engine checks each step's session and range before it makes its
    // buffer, so the whole chunk's buffer is made only once every step has
    // read (its length is the caller's word).
    let bytes: Uint8Array;
    if (req.length <= READ_STEP) bytes = read(0, req.length);
    else {
      const turns = new Turns();
      const steps: Uint8Array[] = [];
      for (let at = 0; at < req.length; at += READ_STEP) {
        if (at > 0) await turns.pass();
        steps.push(read(at, Math.min(READ_STEP, req.length - at)));
      }
      bytes = new Uint8Array(req.length);
      for (const [i, step] of steps.entries()) bytes.set(step, i * READ_STEP);
    }
    transfer.push(bytes.buffer);
    return bytes;
  },
  blobStreamClose(req, { conn, from }) {
    conn.blobStreamClose(from.tab, req.session);
    return null;
  },
  stageOpen(_, { from }) {
    const id = db.stages!.create();
    from.stages.add(id);
    return id;
  },
  stageAppend(req, { from }) {
    return db.stages!.append(ownStage(from, req.stage), req.chunk);
  },
  async stageDiscard(req, { from }) {
    await discardStage(from, req.stage);
    return null;
  },
  exportOpen(_, { conn, from }, { queue }) {
    const [size, snapshot] = conn.exportBegin();
    const id = nextExport++;
    queue.beginExport({ from, id, size, read: 0, active: performance.now(), holds: snapshot === 0 });
    return { export: id, size };
  },
  exportRead(req, { conn, from, transfer }, { queue }) {
    const x = queue.exporting;
    if (x?.id !== req.export || x.from !== from) throw exportEnded();
    let bytes: Uint8Array;
    try {
      bytes = conn.exportRead(EXPORT_CHUNK);
    } catch (err) {
      queue.endExport(); // a read that fails ends it (the core has let go already)
      throw err;
    }
    x.read += bytes.byteLength;
    x.active = performance.now();
    if (x.read >= x.size) queue.endExport();
    transfer.push(bytes.buffer);
    return bytes;
  },
  exportClose(req, { from }, { queue }) {
    if (queue.exporting?.id === req.export && queue.exporting.from === from) queue.endExport();
    return null;
  },
  async importStaged(req, { conn, from }) {
    const id = ownStage(from, req.stage);
    let into = new Uint8Array(0);
    try {
      const source = db.stages!.source(id);
      // SQLite reads a page at a time: one buffer, grown to the largest read.
      const key = req.key ?? db.key ?? undefined;
      closeReader();
      conn.importDatabase(
        source.size,
        (at: number, length: number) => {
          if (into.byteLength < length) into = new Uint8Array(length);
          return source.read(at, into.subarray(0, length));
        },
        key,
      );
    } finally {
      await discardStage(from, id);
    }
    return null;
  },
  watch(req, { conn, from, transfer }) {
    return watch(conn, from, req, transfer);
  },
  unwatch(req, { from }) {
    unwatch(from, req.watch);
    return null;
  },
  rekey(req, { conn, from }, cx) {
    // A plain database made plain is left as it is.
    if (req.key === null && !db.key) return null;
    if (req.key !== null && !db.key && !cipher) {
      // The tab that leads starts the next worker, and keeps the lead meanwhile.
      if (!from.page)
        throw refusal(
          'RESQ_UNSUPPORTED',
          'rekey(key) of a plain database runs in the tab that leads it (whose worker holds the file): call it there, or close the other tabs first',
        );
      return moveToCiphers(conn, from, cx);
    }
    closeReader();
    conn.rekey(req.key);
    db.key = req.key;
    cx.rekeyed(from);
    return null;
  },
  async close(_, { conn, from }, cx) {
    // A following tab's close is its own: it leaves, the database stays.
    if (!from.page) {
      cx.left(from);
      return null;
    }
    db.conn = null;
    closeReader();
    conn.close();
    // SQLite's checkpoint as it closes stores the WAL's pages in the
    // database file: that may not fit where the last commit just did. It
    // is an optional copy; what is stored stays as of the sync before it,
    // every commit in the WAL. So the close waits for it, and succeeds
    // either way.
    const idb = db.idb;
    db.idb = null;
    idb?.close();
    await idb?.durable().catch(() => {});
    await db.stages?.discardAll();
    db.closedByPage = true;
    cx.closed();
    return null;
  },
};

/**
 * `rekey(key)` of a plain database in the worker without ciphers, called
 * by its own page: it lets go of the database (closed, nothing changed),
 * every other tab is told the key changed, and the page's next worker,
 * with ciphers, encrypts it as it opens it, within the same lead
 * (link.ts). Calls that reach this worker after are refused with
 * RESQ_CLOSED; the page's link sends its own again.
 */
async function moveToCiphers(conn: Engine, from: Caller, cx: Context): Promise<'moved'> {
  if (conn.transactionOpen())
    throw refusal(
      'RESQ_BAD_PARAM',
      'rekey() rewrites every page in a transaction of its own: end the open transaction (COMMIT or ROLLBACK) first',
    );
  conn.encryptable();
  db.conn = null;
  closeReader();
  conn.close();
  await db.stages?.discardAll();
  // As if its page had closed it: a tab that comes to follow (the caller
  // among them) hears so, and waits for this worker's end.
  db.closedByPage = true;
  cx.rekeyed(from);
  return 'moved';
}

/** A request's shape: an object with a numeric id and an op this worker has. */
export function isRequest(v: unknown): v is Request {
  if (typeof v !== 'object' || v === null) return false;
  const { id, op } = v as { id?: unknown; op?: unknown };
  return typeof id === 'number' && typeof op === 'string' && (op === 'open' || op === 'fail' || Object.hasOwn(ops, op));
}

/**
 * The fields each op passes to the wasm as strings. wasm-bindgen's string
 * conversion does not check its argument, and a number where it expects a
 * string traps the instance: anything else is refused. These checks are
 * the only ones of these fields (the page sends what it is given).
 */
const STRING_FIELDS: { [K in Op]?: readonly (keyof Requests[K])[] } = {
  open: ['name', 'storage', 'lock'],
  execute: ['sql'],
  query: ['sql'],
  queryBytes: ['sql'],
  executeBatch: ['sql'],
  readBlob: ['table', 'column'],
  blobFile: ['table', 'column', 'type'],
  blobStreamOpen: ['table', 'column'],
  watch: ['sql', 'previous'],
};

/** Fields that name a table or a column: a non-empty string. */
const NAMES = new Set(['table', 'column']);

/**
 * Answers one request: every request gets exactly one reply. The page
 * closed the database: a following tab's request is left unanswered; that
 * tab sends it on to the next leader (link.ts), which looks it up first.
 */
export async function handle(
  from: Caller,
  req: Request,
  cx: Context,
  open: (req: Requests['open'], from: Caller) => Promise<Replies['open']>,
): Promise<void> {
  await reply(from, req, (transfer) => answer(from, req, transfer, cx, open));
}

/**
 * Answers a read (`READS` in queue.ts) beside the writer: on `reader`, or,
 * for a blob stream's and `readBlob`, on the writer's connection, which
 * reads them on a snapshot. Resolves `false`, having answered nothing, when it
 * cannot run there (RESQ_ON_WRITER: a write, a transaction statement, a
 * temp table of the writer's, a stream without a snapshot): the writer
 * runs it then, through `handle`.
 */
export async function handleRead(from: Caller, req: Request, reader: Engine): Promise<boolean> {
  const run = ops[req.op as Exclude<Op, 'open' | 'fail'>] as (r: Request, call: Call, cx?: Context) => unknown;
  const value = await reply(from, req, async (transfer) => {
    try {
      admit(req);
      return await run(req, { conn: reader, from, transfer, beside: true });
    } catch (err) {
      if ((err as { code?: unknown })?.code === 'RESQ_ON_WRITER') return GIVEN_BACK;
      throw err;
    }
  });
  return value !== GIVEN_BACK;
}

/** From a reader: the call is the writer's to run, and nothing was answered. */
const GIVEN_BACK = Symbol('given back');

/** Runs `answer` and posts its reply (or its error), unless it gave the call back; returns its value. */
async function reply(from: Caller, req: Request, answer: (transfer: Transferable[]) => Promise<unknown>): Promise<unknown> {
  if (db.closedByPage && !from.page) return undefined;
  const transfer: Transferable[] = [];
  let value: unknown;
  try {
    value = await answer(transfer);
    // On IndexedDB a commit is stored by a transaction that ends after
    // its call: no answer goes out before what it saw is durable.
    if (db.idb) await durable();
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) throw err;
    return post(from, { id: req.id, ok: false, error: toWireError(err) });
  }
  if (value === GIVEN_BACK) return value;
  try {
    from.post({ id: req.id, ok: true, value }, transfer);
  } catch (err) {
    // The value could not be sent (not cloneable, say): this call fails
    // with the reason, and the queue goes on.
    post(from, { id: req.id, ok: false, error: refusal('RESQ_UNSUPPORTED', `the reply could not be sent to the page: ${String(err)}`) });
  }
}

let reloading: Promise<void> | null = null;

/**
 * Waits for the IndexedDB transactions started so far (idb.ts). One that
 * failed left storage as of the sync before it, so the database is opened
 * again from there before this call fails: what the failed commit wrote
 * is gone, and the next call works on what is stored.
 */
async function durable(): Promise<void> {
  const idb = db.idb;
  if (!idb) return;
  try {
    await idb.durable();
  } catch (err) {
    // Once, for every call that waited on the failed sync.
    if (db.idb === idb) reloading ??= (db.reload?.() ?? Promise.resolve()).finally(() => (reloading = null));
    await reloading;
    const name = (err as DOMException)?.name;
    if (name === 'QuotaExceededError')
      throw refusal('RESQ_QUOTA', `IndexedDB has no quota left for this commit, which was undone (${String(err)})`);
    throw refusal('RESQ_UNSUPPORTED', `IndexedDB could not store this commit, which was undone (${String(err)})`);
  }
}

/** Posts an error reply; if even that fails to the page, the worker cannot answer (it ends). */
function post(to: Caller, reply: { id: number; ok: false; error: WireError }): void {
  try {
    to.post(reply);
  } catch (err) {
    if (to.page) throw new WebAssembly.RuntimeError(`the worker cannot answer its page: ${String(err)}`);
  }
}

async function answer(
  from: Caller,
  req: Request,
  transfer: Transferable[],
  cx: Context,
  open: (req: Requests['open'], from: Caller) => Promise<Replies['open']>,
): Promise<unknown> {
  const fields = admit(req);
  if (req.op === 'fail') throw req.error;
  if (req.op === 'open') return open(req, from);
  // Every other op runs on the open connection, handed to it from here.
  const conn = connection();
  const found = recorded(conn, from, req);
  if (found !== undefined) return found;
  if (expiry(from, req) === ENDED) return null;
  // A transaction callback's call runs only inside its caller's open
  // transaction (not after a failover to a worker that never saw it)
  // and may not begin or end it.
  if (fields.tx === true && cx.queue.owner !== from) {
    throw refusal('RESQ_WORKER_DIED', 'this transaction has ended: the worker that held it is gone');
  }
  if (req.op === 'execute' && req.txn === 'begin' && typeof req.timeout === 'number') cx.queue.timeoutNext(req.timeout);
  conn.transactionCallback(fields.tx === true);
  const run = ops[req.op as Exclude<Op, 'open' | 'fail'>] as (r: Request, call: Call, cx: Context) => unknown;
  return recording(conn, from, req, async () => run(req, { conn, from, transfer }, cx));
}

/**
 * Checks the string fields a request passes to the wasm, and cuts SQL text
 * too long for the core (see `bounded`); returns the request's fields.
 */
function admit(req: Request): Record<string, unknown> {
  const fields = req as unknown as Record<string, unknown>;
  for (const f of (STRING_FIELDS[req.op] ?? []) as string[]) {
    const v = fields[f];
    if (NAMES.has(f) && (typeof v !== 'string' || v === '')) throw refusal('RESQ_BAD_PARAM', `${req.op}: ${f} must be a non-empty name`);
    if (typeof v !== 'string')
      throw refusal('RESQ_BAD_PARAM', `${req.op}: ${f} must be a string${f === 'type' ? ' (a MIME type such as "video/webm")' : ''}`);
  }
  if (typeof fields.sql === 'string' && fields.sql.length > limits.sql) fields.sql = bounded(fields.sql);
  return fields;
}

/**
 * A caller whose transaction `transactionTimeout` rolled back: its calls
 * reject with RESQ_TIMEOUT until it ends that transaction (a ROLLBACK
 * then does nothing; a COMMIT is refused), so none runs outside the
 * transaction its caller believes it is in.
 */
function expiry(from: Caller, req: Request): typeof ENDED | undefined {
  if (!from.expired) return undefined;
  const r = req as Request & { txn?: string; sql?: string };
  const end = r.txn ? (r.txn === 'begin' ? '' : r.txn) : typeof r.sql === 'string' ? endsTransaction(r.sql) : '';
  if (end === 'commit' || end === 'rollback') from.expired = false;
  if (end === 'rollback') return ENDED;
  throw refusal(
    'RESQ_TIMEOUT',
    'this transaction was rolled back: it kept other calls waiting without making a call of its own for longer than transactionTimeout',
  );
}
/** From `expiry`: a ROLLBACK of the expired transaction, which is over already (answered null, nothing runs). */
const ENDED = Symbol('ended');

/**
 * SQL text longer than the core takes is cut here, before it is copied into
 * wasm memory, where the core then refuses it (SQLITE_TOOBIG) with its own
 * message. A UTF-16 unit is at least one byte of UTF-8, so the cut text is
 * still too long: 100 MB of SQL never reaches the wasm.
 */
function bounded(sql: string): string {
  return sql.slice(0, limits.sql + 1);
}
