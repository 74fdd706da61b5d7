// The worker entry (`resq-wasm/worker`): loads the wasm, owns the one
// connection, and answers the page's requests in the order they arrive.
// The page never loads the wasm; only this file does.

import init, { Connection, sqlLimit, streamLimit } from './wasm/resq_wasm.js';
import type { Op, Replies, Request, Requests, WireError } from './protocol.js';
import { isStagedRef } from './protocol.js';
import { StageSpace, StagedSource } from './stage.js';

/** The parts of DedicatedWorkerGlobalScope used here (the DOM lib lacks it). */
interface WorkerScope {
  onmessage: ((e: MessageEvent<Request>) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
  close(): void;
  /** Set by the wasm's panic hook just before it traps. */
  __resqPanic?: string;
}

const scope = self as unknown as WorkerScope;

let conn: Connection | null = null;
let stages: StageSpace | null = null;
let ready: Promise<unknown> | null = null;
let queue: Promise<void> = Promise.resolve();

scope.onmessage = (e: MessageEvent<unknown>) => {
  const req = e.data;
  // Anything else was not sent by the page's client (anyone holding the
  // Worker can post to it): there is no id to answer and nothing to run.
  if (!isRequest(req)) return;
  // `handle` answers every request; should it ever throw, the worker can no
  // longer promise an answer to anything, so it ends (the page then rejects
  // every pending call with RESQ_WORKER_DIED).
  queue = queue.then(() => handle(req)).catch(die);
};

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
};

async function handle(req: Request): Promise<void> {
  const transfer: Transferable[] = [];
  let value: unknown;
  try {
    value = await run(req, transfer);
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) return die(err);
    return post({ id: req.id, ok: false, error: toWireError(err) });
  }
  try {
    scope.postMessage({ id: req.id, ok: true, value }, transfer);
  } catch (err) {
    // The value could not be sent (not cloneable, say): this call fails
    // with the reason, and the queue goes on.
    post({ id: req.id, ok: false, error: { code: 'RESQ_UNSUPPORTED', message: `the reply could not be sent to the page: ${String(err)}` } });
  }
}

/** Posts an error reply; if even that fails, the worker ends. */
function post(reply: { id: number; ok: false; error: WireError }): void {
  try {
    scope.postMessage(reply);
  } catch (err) {
    die(err);
  }
}

type Run = { [K in Op]: (req: Requests[K], transfer: Transferable[]) => Promise<Replies[K]> | Replies[K] };

/** What each request does, by op: the replies are typed by protocol.ts. */
const ops: Omit<Run, 'open' | 'fail'> = {
  async execute(req) {
    const c = connection();
    const used: number[] = [];
    const params = await inlineSmall(req.staged ? resolveStaged(req.params, used) : req.params);
    const { changes, lastInsertRowid, streams } = c.execute(req.sql, params) as Replies['execute'] & { streams?: Blob[] };
    if (streams) await writeStreams(c, streams);
    for (const id of used) await stages!.discard(id);
    return { changes, lastInsertRowid };
  },
  async query(req, transfer) {
    const r = connection().query(req.sql, await inlineSmall(req.params)) as Replies['query'];
    transfer.push(r.json.buffer);
    if (r.fixups) transfer.push(r.fixups.buffer, r.side!.buffer, ...r.buffers!.map((b) => b.buffer));
    return r;
  },
  async queryBytes(req, transfer) {
    const bytes = connection().queryBytes(req.sql, await inlineSmall(req.params));
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
  blobStreamOpen(req) {
    return connection().blobStreamOpen(req.table, req.column, req.rowid, req.offset, req.length);
  },
  blobStreamRead(req, transfer) {
    const bytes = connection().blobStreamRead(req.session, req.offset, req.length);
    transfer.push(bytes.buffer);
    return bytes;
  },
  blobStreamClose(req) {
    connection().blobStreamClose(req.session);
    return null;
  },
  stageOpen() {
    connection();
    return stages!.create();
  },
  stageAppend(req) {
    connection();
    return stages!.append(req.stage, req.chunk);
  },
  async stageDiscard(req) {
    connection();
    await stages!.discard(req.stage);
    return null;
  },
  async close() {
    const c = connection();
    conn = null;
    c.close();
    await stages?.discardAll();
    return null;
  },
};

async function run(req: Request, transfer: Transferable[]): Promise<unknown> {
  const fields = req as unknown as Record<string, unknown>;
  for (const f of (STRING_FIELDS[req.op] ?? []) as string[]) {
    if (typeof fields[f] !== 'string') throw { code: 'RESQ_BAD_PARAM', message: `${req.op}: ${f} must be a string` } satisfies WireError;
  }
  if (req.op === 'open') {
    // One database per worker, opened once: a second open would replace
    // the connection under the page, or wait forever for a lock it holds.
    if (opened) throw { code: 'RESQ_BAD_PARAM', message: 'this worker has opened its database already' } satisfies WireError;
    opened = true;
    return open(req);
  }
  if (req.op === 'fail') throw req.error;
  if (conn) {
    if (typeof fields.sql === 'string') fields.sql = bounded(fields.sql);
    // Calls a transaction callback makes may not begin or end its transaction.
    conn.transactionCallback(fields.tx === true);
  }
  return (ops[req.op] as (r: Request, t: Transferable[]) => unknown)(req, transfer);
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
  ready ??= init();
  try {
    await ready;
  } catch (err) {
    throw { code: 'RESQ_UNSUPPORTED', message: `could not load the SQLite wasm: ${String(err)}` } satisfies WireError;
  }
  conn = await Connection.open(req.name, req.storage, req.blobTransferThreshold);
  // An OPFS database's stage directory is named after it (its pool makes
  // it this worker's alone). Memory databases of one name can be open in
  // several tabs at once, so each worker gets a directory of its own.
  const dir = req.storage === 'opfs' ? `opfs-${encodeURIComponent(req.name)}` : `memory-${crypto.randomUUID()}`;
  stages = new StageSpace(dir);
  await stages.claim();
  return null;
}

function connection(): Connection {
  if (!conn) throw { code: 'RESQ_CLOSED', message: 'the database is closed' } satisfies WireError;
  return conn;
}

/**
 * Swaps each staged-blob marker in a parameter set for a {@link StagedSource}
 * (which then streams like any `Blob` parameter); their ids go to `used`, to
 * be discarded once the call succeeded.
 */
function resolveStaged(params: unknown, used: number[]): unknown {
  if (!stages || params === null || typeof params !== 'object') return params;
  const sources = new Map<number, StagedSource>();
  const swap = (v: unknown) => {
    if (!isStagedRef(v)) return v;
    const id = v.__resqStaged;
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
 * Writes the `Blob` parameters of a streaming `execute` into the cells their
 * placeholders landed in, a chunk at a time, then commits; any failure (a
 * `Blob` that cannot be read, a write error) rolls the whole call back.
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
