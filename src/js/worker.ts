// The worker entry (`resq-wasm/worker`): loads the wasm, owns the one
// connection, and answers the page's requests in the order they arrive.
// The page never loads the wasm; only this file does.

// @ts-ignore -- generated into pkg/wasm/ by wasm-bindgen during the build
import init, { Connection, wasmMemoryBytes } from './wasm/resq_wasm.js';
import type { QueryResult, Reply, Request, WireError } from './protocol.js';

interface Conn {
  execute(sql: string, params: unknown): unknown;
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
let conn: Conn | null = null;
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
    return null;
  }
  if (req.op === 'memory') return ready ? wasmMemoryBytes() : 0;
  if (!conn) throw { code: 'RESQ_CLOSED', message: 'the database is closed' };
  switch (req.op) {
    case 'execute':
      return conn.execute(req.sql, req.params);
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
      return null;
    }
  }
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
