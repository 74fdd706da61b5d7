// The worker entry (`resq-wasm/worker`): loads the wasm, owns the one
// connection, and answers the page's requests in the order they arrive.
// The page never loads the wasm; only this file does.

// @ts-ignore -- generated into pkg/wasm/ by wasm-bindgen during the build
import init, { Connection, crashForTests, wasmMemoryBytes } from './wasm/resq_wasm.js';
import type { QueryResult, Reply, Request, WireError } from './protocol.js';
import { StageSpace, StagedSource, isStagedRef } from './stage.js';

interface Conn {
  execute(sql: string, params: unknown): { changes: number; lastInsertRowid: number | bigint; streams?: Blob[] };
  streamWrite(stream: number, offset: number, chunk: Uint8Array): void;
  streamEnd(ok: boolean): void;
  readBlob(table: string, column: string, rowid: number | bigint, offset?: number, length?: number): Uint8Array;
  /** `[start, end]` (wasm-bindgen returns a `Vec<f64>` as a `Float64Array`). */
  blobRange(table: string, column: string, rowid: number | bigint, offset?: number, length?: number): Float64Array;
  executeBatch(sql: string, sets: unknown): unknown;
  query(sql: string, params: unknown): QueryResult;
  queryBytes(sql: string, params: unknown): Uint8Array;
  close(): void;
}

/** The parts of DedicatedWorkerGlobalScope used here (the DOM lib lacks it). */
interface WorkerScope {
  onmessage: ((e: MessageEvent<Request>) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
  close(): void;
  /** Set by the wasm's panic hook just before it traps. */
  __resqPanic?: string;
}

const scope = self as unknown as WorkerScope;

/**
 * Bytes this worker has written to OPFS (every sync access handle: the
 * database, its journal, staged blobs): the VFS-level write counter the
 * benchmarks read. Counting costs one addition per write.
 */
let opfsBytesWritten = 0;
const SyncHandle = (globalThis as { FileSystemSyncAccessHandle?: { prototype: { write(b: ArrayBufferView, o?: unknown): number } } })
  .FileSystemSyncAccessHandle;
if (SyncHandle) {
  const write = SyncHandle.prototype.write;
  SyncHandle.prototype.write = function (buffer: ArrayBufferView, options?: unknown) {
    const n = write.call(this, buffer, options);
    opfsBytesWritten += n;
    return n;
  };
}
let conn: Conn | null = null;
let stages: StageSpace | null = null;
let ready: Promise<unknown> | null = null;
let queue: Promise<void> = Promise.resolve();

scope.onmessage = (e: MessageEvent<Request>) => {
  const req = e.data;
  queue = queue.then(() => handle(req));
};

async function handle(req: Request): Promise<void> {
  const transfer: Transferable[] = [];
  let reply: Reply;
  try {
    reply = { id: req.id, ok: true, value: await run(req, transfer) };
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) return die(err);
    reply = { id: req.id, ok: false, error: toWireError(err) };
  }
  scope.postMessage(reply, transfer);
}

async function run(req: Request, transfer: Transferable[]): Promise<unknown> {
  if (req.op === 'open') {
    ready ??= init();
    try {
      await ready;
    } catch (err) {
      throw { code: 'RESQ_UNSUPPORTED', message: `could not load the SQLite wasm: ${String(err)}` };
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
  if (req.op === 'stats') return { wasmMemoryBytes: ready ? wasmMemoryBytes() : 0, opfsBytesWritten };
  if (req.op === 'crashForTests') return crashForTests();
  if (req.op === 'fail') throw req.error;
  if (!conn) throw { code: 'RESQ_CLOSED', message: 'the database is closed' };
  switch (req.op) {
    case 'execute': {
      const used: number[] = [];
      const params = req.staged ? resolveStaged(req.params, used) : req.params;
      const { changes, lastInsertRowid, streams } = conn.execute(req.sql, params);
      if (streams) await writeStreams(conn, streams);
      for (const id of used) await stages!.discard(id);
      return { changes, lastInsertRowid };
    }
    case 'blobRange':
      return conn.blobRange(req.table, req.column, req.rowid, req.offset, req.length);
    case 'blobFile': {
      // Read in 4 MB chunks and assembled here, FILE_BATCH at a time (the
      // browser composes Blobs by reference), so the page gets a handle,
      // not bytes to copy, and this worker holds at most one batch.
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
    }
    case 'stageOpen':
      return stages!.create();
    case 'stageAppend':
      return stages!.append(req.stage, req.chunk);
    case 'stageDiscard':
      return stages!.discard(req.stage);
    case 'readBlob': {
      const bytes = conn.readBlob(req.table, req.column, req.rowid, req.offset, req.length);
      transfer.push(bytes.buffer);
      return bytes;
    }
    case 'executeBatch':
      return conn.executeBatch(req.sql, req.sets);
    case 'queryBytes': {
      const bytes = conn.queryBytes(req.sql, req.params);
      transfer.push(bytes.buffer);
      return bytes;
    }
    case 'query': {
      const r = conn.query(req.sql, req.params);
      transfer.push(r.json.buffer);
      if (r.fixups) transfer.push(r.fixups.buffer, r.side!.buffer, ...r.buffers!.map((b) => b.buffer));
      return r;
    }
    case 'close': {
      const c = conn;
      conn = null;
      c.close();
      await stages?.discardAll();
      return null;
    }
  }
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
async function writeStreams(c: Conn, streams: Blob[]): Promise<void> {
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
          throw { code: 'RESQ_BAD_PARAM', message: `a Blob parameter could not be read: ${String(err)}` };
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

/** The wasm instance trapped (a Rust panic): it cannot be trusted again. */
function die(err: unknown): void {
  scope.postMessage({ fatal: scope.__resqPanic ?? String(err) });
  scope.close();
}
