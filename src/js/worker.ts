// The worker entry (`resq-wasm/worker`): loads the wasm, owns the one
// connection, and answers its callers' requests in the order they arrive.
// The page never loads the wasm; only this file does.
//
// Callers: the page that started this worker, and the tabs that follow it
// (each through a MessagePort the page hands over, see link.ts). While one
// caller has a transaction open, the others' requests wait, so transactions
// from different tabs never interleave. What a caller made here (staged
// blobs, blob streams, live queries, an open transaction, an export) is
// its own, and goes when it leaves: by closing, or when its tab ends (the
// Web Lock it held is freed).

import init, { Connection, sqlLimit, streamLimit } from './wasm/resq_wasm.js';
import type { Attach, Op, Push, Replies, Request, Requests, WatchResult, WireError } from './protocol.js';
import { isStagedRef, transfersOf } from './protocol.js';
import { StageSpace, StagedSource } from './stage.js';

/** The parts of DedicatedWorkerGlobalScope used here (the DOM lib lacks it). */
interface WorkerScope {
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
  close(): void;
  /** Set by the wasm's panic hook just before it traps. */
  __resqPanic?: string;
}

const scope = self as unknown as WorkerScope;

/** One caller: the page, or a following tab. */
interface Caller {
  post(message: unknown, transfer?: Transferable[]): void;
  /** The page that started this worker (its `close` closes the database). */
  page: boolean;
  /** Left: its requests still queued are dropped. */
  gone: boolean;
  stages: Set<number>;
  sessions: Set<number>;
  watches: Map<number, Shared>;
}

function caller(page: boolean, post: Caller['post']): Caller {
  return { post, page, gone: false, stages: new Set(), sessions: new Set(), watches: new Map() };
}

const pageCaller = caller(true, (m, t = []) => scope.postMessage(m, t));

let conn: Connection | null = null;
let stages: StageSpace | null = null;
// The wasm loads from the start, while the page's `open` is on its way and
// the worker takes its lock (benches/experiments/008-eager-wasm.md); `open`
// reports a failure.
const ready = init();
ready.catch(() => {});

scope.onmessage = (e: MessageEvent<unknown>) => {
  const msg = e.data;
  if (isAttach(msg) && e.ports[0]) return attach(e.ports[0], msg.attach);
  // Anything else was not sent by the page's client (anyone holding the
  // Worker can post to it): there is no id to answer and nothing to run.
  if (isRequest(msg)) enqueue(pageCaller, msg);
};

const isAttach = (v: unknown): v is Attach => typeof v === 'object' && v !== null && typeof (v as Attach).attach === 'string';

/** The following tabs' callers. */
const followers = new Set<Caller>();

/** A following tab's port: its requests join the queue; it leaves when `lock` is freed. */
function attach(port: MessagePort, lock: string): void {
  const c = caller(false, (m, t = []) => port.postMessage(m, t));
  followers.add(c);
  port.onmessage = (e: MessageEvent<unknown>) => {
    if (isRequest(e.data) && !c.gone) enqueue(c, e.data);
  };
  c.post(closedByPage ? { closing: true } : { hello: true });
  void navigator.locks.request(lock, () => leave(c));
}

// The queue. `owner` has a transaction open: only its requests run until it
// ends. While an export runs (`exporting`), only its reads run, and its
// caller's leaving: every other request, its caller's own included, waits,
// so the pages it reads are all of one state. `handle` answers every
// request; should the queue ever throw, the worker can no longer promise an
// answer to anything, so it ends (every tab then rejects its pending calls
// with RESQ_WORKER_DIED).

interface Entry {
  from: Caller;
  req: Request | { op: 'leave' };
  /** When it was queued (performance.now()). */
  at: number;
}
const entries: Entry[] = [];
let owner: Caller | null = null;
let pumping = false;

function enqueue(from: Caller, req: Entry['req']): void {
  entries.push({ from, req, at: performance.now() });
  if (!pumping) pump().catch(die);
  else if (exporting) watchStall();
}

/** Whether `e` may run now. */
function runnable(e: Entry): boolean {
  if (exporting) return e.from === exporting.from && (e.req.op === 'leave' || e.req.op === 'exportRead' || e.req.op === 'exportClose');
  return owner === null || e.from === owner;
}

async function pump(): Promise<void> {
  pumping = true;
  let sinceRerun = 0;
  for (;;) {
    const i = entries.findIndex(runnable);
    if (i < 0) break;
    const [{ from, req }] = entries.splice(i, 1);
    if (req.op === 'leave') await cleanUp(from);
    else await handle(from, req);
    owner = conn?.transactionOpen() ? from : null;
    // Live queries re-run outside transactions (never on uncommitted
    // data) and exports, when the queue is idle or every so often under load.
    if (owner === null && !exporting && (entries.length === 0 || ++sinceRerun >= RERUN_EVERY)) {
      sinceRerun = 0;
      rerunWatches();
    }
  }
  pumping = false;
  watchStall();
}

// The export in progress. It holds the queue while its stream is read; one
// that is not read (a stream nobody reads, a reader that awaits a call on
// the database it is exporting) must not hold everyone else forever: once
// a request has waited EXPORT_IDLE_MS for it and it has not been read in
// that time, it ends, and its next read fails with SQLITE_ABORT.

interface Exporting {
  from: Caller;
  id: number;
  size: number;
  read: number;
  /** When it began or was last read (performance.now()). */
  active: number;
}
let exporting: Exporting | null = null;
let nextExport = 1;
let stallTimer: ReturnType<typeof setTimeout> | undefined;

/** How long an export may go unread while a request waits for it. */
const EXPORT_IDLE_MS = 10_000;
/** Bytes an export read returns at most (whole pages; one page at least). */
const EXPORT_CHUNK = 4 << 20;

function endExport(): void {
  exporting = null;
  conn?.exportEnd();
  clearTimeout(stallTimer);
}

/** Ends the export if it has stalled; otherwise looks again when it could have. */
function watchStall(): void {
  clearTimeout(stallTimer);
  if (!exporting) return;
  const waiting = entries.find((e) => !runnable(e));
  if (!waiting) return;
  const since = Math.max(exporting.active, waiting.at);
  const due = since + EXPORT_IDLE_MS - performance.now();
  if (due > 0) {
    stallTimer = setTimeout(watchStall, due);
    return;
  }
  endExport();
  if (!pumping) pump().catch(die);
}

/** Requests run between live-query re-runs while the queue stays busy. */
const RERUN_EVERY = 16;

/** A caller leaves: its queued requests are dropped, what it made here goes. */
function leave(c: Caller): void {
  if (c.gone) return;
  c.gone = true;
  followers.delete(c);
  for (let i = entries.length - 1; i >= 0; i--) if (entries[i].from === c) entries.splice(i, 1);
  enqueue(c, { op: 'leave' });
}

async function cleanUp(c: Caller): Promise<void> {
  if (!conn) return;
  if (exporting?.from === c) endExport();
  // It left with its transaction open (its tab closed mid-transaction).
  if (owner === c && conn.transactionOpen()) {
    // Not as a transaction callback's call, which may not roll back.
    conn.transactionCallback(false);
    conn.execute('ROLLBACK', undefined);
  }
  for (const id of c.sessions) conn.blobStreamClose(id);
  for (const id of c.stages) await stages!.discard(id);
  for (const id of c.watches.keys()) unwatch(c, id);
  c.sessions.clear();
  c.stages.clear();
}

/** A request's shape: an object with a numeric id and an op this worker has. */
function isRequest(v: unknown): v is Request {
  if (typeof v !== 'object' || v === null) return false;
  const { id, op } = v as { id?: unknown; op?: unknown };
  return typeof id === 'number' && typeof op === 'string' && (op === 'open' || op === 'fail' || Object.hasOwn(ops, op));
}

/**
 * The fields each op passes to the wasm as strings. wasm-bindgen's string
 * conversion does not check its argument, and a number where it expects a
 * string traps the instance; the page sends strings, anything else is refused.
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

const exportEnded = (): WireError => ({
  code: 'SQLITE_ABORT',
  errno: 4,
  message: `this export has ended: it was not read for ${EXPORT_IDLE_MS / 1000} s while other calls waited for it (or it was cancelled); export again`,
});

async function handle(from: Caller, req: Request): Promise<void> {
  // The page closed the database: a following tab's request goes back to
  // it unrun, with its buffers, for the tab that leads next.
  if (closedByPage && !from.page) return from.post({ id: req.id, retry: req }, transfersOf(req));
  const transfer: Transferable[] = [];
  let value: unknown;
  try {
    value = await run(from, req, transfer);
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) return die(err);
    return post(from, { id: req.id, ok: false, error: toWireError(err) });
  }
  try {
    from.post({ id: req.id, ok: true, value }, transfer);
  } catch (err) {
    // The value could not be sent (not cloneable, say): this call fails
    // with the reason, and the queue goes on.
    post(from, { id: req.id, ok: false, error: { code: 'RESQ_UNSUPPORTED', message: `the reply could not be sent to the page: ${String(err)}` } });
  }
}

/** Posts an error reply; if even that fails to the page, the worker ends. */
function post(to: Caller, reply: { id: number; ok: false; error: WireError } | Push): void {
  try {
    to.post(reply);
  } catch (err) {
    if (to.page) die(err);
  }
}

type Run = { [K in Op]: (req: Requests[K], transfer: Transferable[], from: Caller) => Promise<Replies[K]> | Replies[K] };

/** What each request does, by op: the replies are typed by protocol.ts. */
const ops: Omit<Run, 'open' | 'fail'> = {
  async execute(req, _, from) {
    const c = connection();
    const used: number[] = [];
    const params = await inlineSmall(req.staged ? resolveStaged(from, req.params, used) : req.params);
    const { changes, lastInsertRowid, streams } = c.execute(req.sql, params) as Replies['execute'] & { streams?: Blob[] };
    if (streams) await writeStreams(c, streams);
    for (const id of used) await discardStage(from, id);
    return { changes, lastInsertRowid };
  },
  async query(req, transfer) {
    const c = connection();
    const r = c.query(req.sql, await inlineSmall(req.params)) as Replies['query'];
    await writeTaken(c);
    transferResult(r, transfer);
    return r;
  },
  async queryBytes(req, transfer) {
    const c = connection();
    const bytes = c.queryBytes(req.sql, await inlineSmall(req.params));
    await writeTaken(c);
    transfer.push(bytes.buffer);
    return bytes;
  },
  async executeBatch(req) {
    const sets = await Promise.all(req.sets.map(inlineSmall));
    return connection().executeBatch(req.sql, sets) as Replies['executeBatch'];
  },
  readBlob(req, transfer) {
    const bytes = connection().readBlob(req.table, req.column, req.rowid, req.offset, req.length);
    transfer.push(bytes.buffer);
    return bytes;
  },
  blobFile(req) {
    // Read in 4 MB chunks and assembled here, FILE_BATCH at a time (the
    // browser composes Blobs by reference), so the page gets a handle, not
    // bytes to copy, and this worker holds at most one batch. One request:
    // no other call runs in between, so it is always one value.
    const c = connection();
    const [, size] = c.blobRange(req.table, req.column, req.rowid);
    let file = new Blob([], { type: req.type });
    let batch: BlobPart[] = [];
    for (let at = 0; at < size; at += FILE_CHUNK) {
      batch.push(c.readBlob(req.table, req.column, req.rowid, at, Math.min(FILE_CHUNK, size - at)) as BlobPart);
      if (batch.length * FILE_CHUNK >= FILE_BATCH || at + FILE_CHUNK >= size) {
        file = new Blob([file, ...batch], { type: req.type });
        batch = [];
      }
    }
    return file;
  },
  blobStreamOpen(req, _, from) {
    const opened = connection().blobStreamOpen(req.table, req.column, req.rowid, req.offset, req.length);
    from.sessions.add(opened[0]);
    // The core forgets the oldest session past its cap (streams dropped
    // without being cancelled); so does this list.
    if (from.sessions.size > MAX_SESSIONS) from.sessions.delete(from.sessions.values().next().value!);
    return opened;
  },
  blobStreamRead(req, transfer, from) {
    // Another caller's session is as unknown to this one as an ended one.
    if (!from.sessions.has(req.session)) throw { code: 'RESQ_BAD_PARAM', message: 'this blob stream has ended (cancelled, finished, or one of too many left open)' } satisfies WireError;
    const bytes = connection().blobStreamRead(req.session, req.offset, req.length);
    transfer.push(bytes.buffer);
    return bytes;
  },
  blobStreamClose(req, _, from) {
    if (from.sessions.delete(req.session)) connection().blobStreamClose(req.session);
    return null;
  },
  stageOpen(_, __, from) {
    connection();
    const id = stages!.create();
    from.stages.add(id);
    return id;
  },
  stageAppend(req, _, from) {
    connection();
    return stages!.append(ownStage(from, req.stage), req.chunk);
  },
  async stageDiscard(req, _, from) {
    connection();
    await discardStage(from, req.stage);
    return null;
  },
  exportOpen(_, __, from) {
    const size = connection().exportBegin();
    exporting = { from, id: nextExport++, size, read: 0, active: performance.now() };
    return { export: exporting.id, size };
  },
  exportRead(req, transfer, from) {
    if (exporting?.id !== req.export || exporting.from !== from) throw exportEnded();
    let bytes: Uint8Array;
    try {
      bytes = connection().exportRead(EXPORT_CHUNK);
    } catch (err) {
      endExport(); // a read that fails ends it (the core has let go already)
      throw err;
    }
    exporting.read += bytes.byteLength;
    exporting.active = performance.now();
    if (exporting.read >= exporting.size) endExport();
    transfer.push(bytes.buffer);
    return bytes;
  },
  exportClose(req, _, from) {
    if (exporting?.id === req.export && exporting.from === from) endExport();
    return null;
  },
  async importStaged(req, _, from) {
    const c = connection();
    const id = ownStage(from, req.stage);
    let into = new Uint8Array(0);
    try {
      const source = stages!.source(id);
      // SQLite reads a page at a time: one buffer, grown to the largest read.
      c.importDatabase(source.size, (at: number, length: number) => {
        if (into.byteLength < length) into = new Uint8Array(length);
        return source.read(at, into.subarray(0, length));
      });
    } finally {
      await discardStage(from, id);
    }
    return null;
  },
  watch(req, transfer, from) {
    return watch(from, req, transfer);
  },
  unwatch(req, _, from) {
    unwatch(from, req.watch);
    return null;
  },
  async close(_, __, from) {
    // A following tab's close is its own: it leaves, the database stays.
    if (!from.page) {
      await cleanUp(from);
      from.gone = true;
      return null;
    }
    const c = connection();
    conn = null;
    c.close();
    await stages?.discardAll();
    closedByPage = true;
    for (const f of followers) f.post({ closing: true });
    return null;
  },
};
/** Blob stream sessions the core keeps (reads.rs): older ones are forgotten. */
const MAX_SESSIONS = 256;

/** The page closed the database: following tabs' calls go to the next tab that leads. */
let closedByPage = false;

/** `id` is a staged blob of `from`'s: a caller cannot touch another's. */
function ownStage(from: Caller, id: number): number {
  if (!from.stages.has(id)) throw { code: 'RESQ_BAD_PARAM', message: 'this staged blob was already used or discarded' } satisfies WireError;
  return id;
}

async function discardStage(from: Caller, id: number): Promise<void> {
  if (!from.stages.delete(id)) return;
  await stages!.discard(id);
}

async function run(from: Caller, req: Request, transfer: Transferable[]): Promise<unknown> {
  const fields = req as unknown as Record<string, unknown>;
  for (const f of (STRING_FIELDS[req.op] ?? []) as string[]) {
    if (typeof fields[f] !== 'string') throw { code: 'RESQ_BAD_PARAM', message: `${req.op}: ${f} must be a string` } satisfies WireError;
  }
  if (req.op === 'fail') throw req.error;
  if (req.op === 'open') {
    // One database per worker, opened once, by its page: a second open
    // would replace the connection under its callers, or wait forever for
    // a lock it holds.
    if (opened || !from.page) throw { code: 'RESQ_BAD_PARAM', message: 'this worker has opened its database already' } satisfies WireError;
    opened = true;
    return open(req);
  }
  if (conn) {
    if (typeof fields.sql === 'string') fields.sql = bounded(fields.sql);
    // A transaction callback's call runs only inside its caller's open
    // transaction (not after a failover to a worker that never saw it)
    // and may not begin or end it.
    if (fields.tx === true && owner !== from) {
      throw { code: 'RESQ_WORKER_DIED', message: 'this transaction has ended: the worker that held it is gone' } satisfies WireError;
    }
    conn.transactionCallback(fields.tx === true);
  }
  return (ops[req.op] as (r: Request, t: Transferable[], f: Caller) => unknown)(req, transfer, from);
}
let opened = false;

/**
 * SQL text longer than the core takes is cut here, before it is copied into
 * wasm memory, where the core then refuses it (SQLITE_TOOBIG) with its own
 * message. A UTF-16 unit is at least one byte of UTF-8, so the cut text is
 * still too long: 100 MB of SQL never reaches the wasm.
 */
function bounded(sql: string): string {
  maxSql ??= sqlLimit();
  return sql.length > maxSql ? sql.slice(0, maxSql + 1) : sql;
}
let maxSql: number | undefined;

async function open(req: Requests['open']): Promise<null> {
  // Held until this worker ends: the page waits on it to learn of an end
  // nothing else reports.
  await new Promise<void>((held) => {
    const locks = (navigator as { locks?: LockManager }).locks;
    if (!locks) return held();
    locks.request(req.lock, () => {
      held();
      return new Promise(() => {});
    });
  });
  try {
    await ready;
  } catch (err) {
    throw { code: 'RESQ_UNSUPPORTED', message: `could not load the SQLite wasm: ${String(err)}` } satisfies WireError;
  }
  conn = await openPatiently(req);
  // An OPFS database's stage directory is named after it (its pool makes
  // it this worker's alone). Memory databases of one name can be open in
  // several tabs at once, so each worker gets a directory of its own.
  const dir = req.storage === 'opfs' ? `opfs-${encodeURIComponent(req.name)}` : `memory-${crypto.randomUUID()}`;
  stages = new StageSpace(dir);
  await stages.claim();
  return null;
}

/**
 * The file's access handles can still be held for a moment by the worker of
 * a page that just reloaded or closed, or of the tab that led before: that
 * is retried, with backoff, for up to OPEN_PATIENCE_MS; then RESQ_LOCKED
 * (a holder that does not cooperate).
 */
async function openPatiently(req: Requests['open']): Promise<Connection> {
  const start = performance.now();
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    try {
      return await Connection.open(req.name, req.storage, req.blobTransferThreshold);
    } catch (err) {
      const locked = (err as WireError)?.code === 'RESQ_LOCKED';
      if (!locked || performance.now() - start + wait > OPEN_PATIENCE_MS) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
const OPEN_PATIENCE_MS = 5000;

function connection(): Connection {
  if (!conn) throw { code: 'RESQ_CLOSED', message: 'the database is closed' } satisfies WireError;
  return conn;
}

/**
 * Swaps each staged-blob marker in a parameter set for a {@link StagedSource}
 * (which then streams like any `Blob` parameter); their ids go to `used`, to
 * be discarded once the call succeeded.
 */
function resolveStaged(from: Caller, params: unknown, used: number[]): unknown {
  if (!stages || params === null || typeof params !== 'object') return params;
  const sources = new Map<number, StagedSource>();
  const swap = (v: unknown) => {
    if (!isStagedRef(v)) return v;
    const id = ownStage(from, v.__resqStaged);
    if (!sources.has(id)) {
      used.push(id);
      sources.set(id, stages!.source(id));
    }
    return sources.get(id);
  };
  return Array.isArray(params) ? params.map(swap) : Object.fromEntries(Object.entries(params).map(([k, v]) => [k, swap(v)]));
}

/**
 * A `Blob` parameter below the stream limit (a `File`, a staged value) is
 * read now and passed as its bytes, so SQL sees exactly the file; larger
 * ones stay `Blob`s and stream (see src/codec/stream.rs).
 */
async function inlineSmall(params: unknown): Promise<unknown> {
  if (params === null || typeof params !== 'object') return params;
  const entries = Array.isArray(params) ? params.map((v, i) => [i, v] as const) : Object.entries(params);
  if (!entries.some(([, v]) => v instanceof Blob)) return params;
  limit ??= streamLimit();
  const read = async (key: number | string, v: unknown) => {
    if (!(v instanceof Blob) || v.size >= limit!) return v;
    if (v instanceof StagedSource) return v.read(0, new Uint8Array(v.size));
    try {
      return new Uint8Array(await v.arrayBuffer());
    } catch (err) {
      const label = typeof key === 'number' ? `parameter ${key + 1}` : `:${key}`;
      throw { code: 'RESQ_BAD_PARAM', message: `${label}: the Blob or File could not be read: ${String(err)}` } satisfies WireError;
    }
  };
  const values = await Promise.all(entries.map(([k, v]) => read(k, v)));
  return Array.isArray(params) ? values : Object.fromEntries(entries.map(([k], i) => [k, values[i]]));
}
let limit: number | undefined;

/** Bytes per read when `blobFile` assembles a value, and per `Blob` it adds. */
const FILE_CHUNK = 4 << 20;
const FILE_BATCH = 32 << 20;

/** Bytes of a `Blob` parameter read and written per step: wasm memory holds one. */
const STREAM_CHUNK = 1 << 20;
/** Where staged bytes are read into on their way to wasm memory; made once. */
let scratch: Uint8Array | undefined;

/**
 * Writes the `Blob` parameters of a streaming `execute` (or of a write
 * through `query`) into the cells their placeholders landed in, a chunk at
 * a time, then commits; any failure (a `Blob` that cannot be read, a write
 * error) rolls the whole call back.
 */
async function writeStreams(c: Connection, streams: Blob[]): Promise<void> {
  try {
    for (const [i, blob] of streams.entries()) {
      if (blob instanceof StagedSource) {
        scratch ??= new Uint8Array(STREAM_CHUNK);
        for (let at = 0; at < blob.size; at += STREAM_CHUNK) c.streamWrite(i, at, blob.read(at, scratch));
        continue;
      }
      for (let at = 0; at < blob.size; at += STREAM_CHUNK) {
        let chunk: ArrayBuffer;
        try {
          chunk = await blob.slice(at, at + STREAM_CHUNK).arrayBuffer();
        } catch (err) {
          throw { code: 'RESQ_BAD_PARAM', message: `a Blob parameter could not be read: ${String(err)}` } satisfies WireError;
        }
        c.streamWrite(i, at, new Uint8Array(chunk));
      }
    }
  } catch (err) {
    c.streamEnd(false);
    throw err;
  }
  c.streamEnd(true);
}

/**
 * A write with `RETURNING` run by `query`/`queryBytes` takes streamed
 * values as `execute` does: its rows are ready, its cells still to fill.
 */
async function writeTaken(c: Connection): Promise<void> {
  const streams = c.takeStreams() as Blob[] | null;
  if (streams) await writeStreams(c, streams);
}

/** Moves a `query` result's buffers instead of copying them. */
function transferResult(r: Replies['query'], transfer: Transferable[]): void {
  transfer.push(r.json.buffer);
  if (r.fixups) transfer.push(r.fixups.buffer, r.side!.buffer, ...r.buffers!.map((b) => b.buffer));
}

// Live queries. Identical ones (same SQL, parameters and form), from any
// callers, share one `Shared` query: it re-runs once after a commit that
// changed a table it reads, and its result crosses to the subscribers only
// when its hash differs from the last one (an unchanged result never
// leaves wasm memory).

interface Shared {
  key: string;
  sql: string;
  params: unknown;
  bytes: boolean;
  tables: string[];
  hash: string;
  dirty: boolean;
  subscribers: Set<{ from: Caller; id: number }>;
}
const shared = new Map<string, Shared>();

function watch(from: Caller, req: Requests['watch'], transfer: Transferable[]): WatchResult | null {
  const c = connection();
  if (from.watches.has(req.watch)) throw { code: 'RESQ_BAD_PARAM', message: 'this watch id is in use' } satisfies WireError;
  const bytes = req.bytes === true;
  const key = JSON.stringify([bytes, req.sql, req.params ?? null], exactly);
  let s = shared.get(key);
  // Checks the SQL (one read-only statement) and finds the tables it reads.
  const tables = s?.tables ?? (c.queryTables(req.sql) as string[]);
  const r = c.watchQuery(req.sql, req.params, bytes, req.previous) as WatchResult | null;
  if (!s) {
    s = { key, sql: req.sql, params: req.params, bytes, tables, hash: r?.hash ?? req.previous, dirty: false, subscribers: new Set() };
    shared.set(key, s);
  }
  s.subscribers.add({ from, id: req.watch });
  from.watches.set(req.watch, s);
  if (r) addTransfers(r.value, transfer);
  return r;
}

/** JSON that keeps apart what binds differently: bigints, -0, NaN and infinities. */
function exactly(_: string, v: unknown): unknown {
  if (typeof v === 'bigint') return { bigint: String(v) };
  if (typeof v === 'number' && (Object.is(v, -0) || !Number.isFinite(v))) return { number: Object.is(v, -0) ? '-0' : String(v) };
  return v;
}

function unwatch(from: Caller, id: number): void {
  const s = from.watches.get(id);
  if (!s) return;
  from.watches.delete(id);
  for (const sub of s.subscribers) if (sub.from === from && sub.id === id) s.subscribers.delete(sub);
  if (s.subscribers.size === 0) shared.delete(s.key);
}

/** Re-runs the live queries that read a table committed transactions changed since the last time. */
function rerunWatches(): void {
  // Without watches the changed tables are left to gather (a set of
  // names, bounded by the schema): a watch made later re-runs once for
  // them, and its hash keeps that from being delivered.
  if (!conn || shared.size === 0) return;
  const changed = new Set(conn.takeChanged() as string[]);
  for (const s of shared.values()) if (s.tables.some((t) => changed.has(t)) || changed.has('sqlite_schema')) s.dirty = true;
  for (const s of shared.values()) {
    if (!s.dirty) continue;
    s.dirty = false;
    let push: (id: number) => Push;
    const transfer: Transferable[] = [];
    try {
      const r = conn.watchQuery(s.sql, s.params, s.bytes, s.hash) as WatchResult | null;
      if (!r) continue;
      s.hash = r.hash;
      push = (id) => ({ push: id, result: r });
      addTransfers(r.value, transfer);
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError) throw err;
      const error = toWireError(err);
      push = (id) => ({ push: id, error });
    }
    // Each subscriber gets its own copy; the last one gets the buffers.
    const subs = [...s.subscribers];
    subs.forEach((sub, i) => {
      try {
        sub.from.post(push(sub.id), i === subs.length - 1 ? transfer : []);
      } catch {
        // A tab that is going away: its lock's release cleans up after it.
      }
    });
  }
}

function addTransfers(value: WatchResult['value'], transfer: Transferable[]): void {
  if (value instanceof Uint8Array) transfer.push(value.buffer);
  else transferResult(value, transfer);
}

function toWireError(err: unknown): WireError {
  if (err && typeof err === 'object' && typeof (err as WireError).code === 'string') return err as WireError;
  // Anything else came from JS glue handed a value it cannot take.
  return { code: 'RESQ_BAD_PARAM', message: err instanceof Error ? err.message : String(err) };
}

/** The wasm instance trapped (a Rust panic), or the worker cannot answer: it cannot be trusted again. */
function die(err: unknown): void {
  try {
    scope.postMessage({ fatal: scope.__resqPanic ?? String(err) });
  } finally {
    scope.close();
  }
}
