// Exactly once across a change of leader (the page side is in link.ts).
//
// A following tab numbers its calls (`seq`). When the tab that leads goes
// away, the follower sends every call it has no answer for to the next
// leader again, marked `again`: one that may have committed must not run a
// second time. So a following tab's write commits together with a record
// of its answer (src/worker/calls.rs keeps it, in the database file), and a
// call sent again is looked up first: found, its recorded answer is the
// reply; not found, it never committed, and it runs now.
//
// What is recorded: the answer of `execute`, `executeBatch`, and of a
// `query`/`queryBytes` that wrote (a write with RETURNING), each packed as
// below; and for a `transaction()`'s COMMIT a marker, written inside the
// transaction just before it commits. Reads are not recorded: they run again.

import type { Op, QueryResult, Replies, Request, RunResult } from '../protocol.js';
import type { Caller } from './callers.js';
import { refusal, type Engine } from './engine.js';

/** The ops whose writes are recorded. */
const RECORDED = new Set<Op>(['execute', 'executeBatch', 'query', 'queryBytes']);

type Numbered = Request & { seq?: number; below?: number; again?: true; tx?: true; txn?: string; sql?: string };

/** The answer recorded for `req`, sent again by `from`; `undefined` when it has to run. */
export function recorded(conn: Engine, from: Caller, req: Request): unknown {
  const r = req as Numbered;
  if (!r.again || r.seq === undefined) return undefined;
  const found = conn.callFind(from.tab, r.seq);
  if (found) return unpack(req.op, found);
  // A COMMIT that left no record did not commit: its transaction is gone,
  // rolled back with the worker that held it.
  if (r.txn === 'commit') {
    throw refusal('RESQ_WORKER_DIED', 'the transaction was rolled back: the tab that held the database went away before it committed');
  }
  return undefined;
}

/**
 * Runs `run` for `req` of `from`, recording its answer with its write when
 * `from` follows (its calls may be sent again to another leader).
 */
export async function recording<T>(conn: Engine, from: Caller, req: Request, run: () => Promise<T>): Promise<T> {
  const r = req as Numbered;
  if (from.page || r.seq === undefined || r.tx) return run();
  if (r.txn === 'commit') {
    if (conn.transactionOpen()) conn.callRecord(from.tab, r.seq, r.below ?? r.seq, pack('execute', { changes: 0, lastInsertRowid: 0 }));
    return run();
  }
  if (!RECORDED.has(req.op) || typeof r.sql !== 'string' || !conn.callBegin(r.sql)) return run();
  let value: T;
  try {
    value = await run();
  } catch (err) {
    conn.callAbort();
    throw err;
  }
  conn.callEnd(from.tab, r.seq, r.below ?? r.seq, conn.callWrote() ? pack(req.op, value) : undefined);
  return value;
}

// The packed form: a 4-byte length, a JSON header, then the byte parts the
// header lists, back to back.

function pack(op: Op, value: unknown): Uint8Array {
  if (op === 'queryBytes') return parts({ kind: 'bytes' }, [value as Uint8Array]);
  if (op === 'query') {
    const q = value as QueryResult;
    const list = [
      q.json,
      ...(q.fixups ? [new Uint8Array(q.fixups.buffer, q.fixups.byteOffset, q.fixups.byteLength), q.side!, ...q.buffers!] : []),
    ];
    return parts({ kind: 'rows', columns: q.columns, fixups: q.fixups !== undefined }, list);
  }
  const { changes, lastInsertRowid } = value as RunResult;
  return parts({ kind: 'run', changes, rowid: String(lastInsertRowid), big: typeof lastInsertRowid === 'bigint' }, []);
}

function parts(header: Record<string, unknown>, list: Uint8Array[]): Uint8Array {
  const head = new TextEncoder().encode(JSON.stringify({ ...header, sizes: list.map((p) => p.byteLength) }));
  const out = new Uint8Array(4 + head.byteLength + list.reduce((n, p) => n + p.byteLength, 0));
  new DataView(out.buffer).setUint32(0, head.byteLength, true);
  out.set(head, 4);
  let at = 4 + head.byteLength;
  for (const p of list) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function unpack<K extends Op>(op: K, bytes: Uint8Array): Replies[K] {
  const size = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
  const h = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + size)));
  const list: Uint8Array[] = [];
  let at = 4 + size;
  for (const n of h.sizes as number[]) {
    list.push(bytes.slice(at, at + n));
    at += n;
  }
  if (h.kind === 'bytes') return list[0] as Replies[K];
  if (h.kind === 'rows') {
    const q: QueryResult = { json: list[0] };
    if (h.columns) q.columns = h.columns;
    if (h.fixups) Object.assign(q, { fixups: new Float64Array(list[1].buffer), side: list[2], buffers: list.slice(3) });
    return q as Replies[K];
  }
  void op;
  return { changes: h.changes, lastInsertRowid: h.big ? BigInt(h.rowid) : Number(h.rowid) } as Replies[K];
}
