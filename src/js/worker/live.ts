// Live queries. Identical ones (same SQL, parameters and form, as
// querykey.ts decides for the page's stores too), from any callers, share
// one `Shared` query: it re-runs once after a commit that changed a table
// it reads, and its result crosses to the subscribers only when its hash
// differs from the last one (an unchanged result never leaves wasm memory).

import type { Push, Requests, WatchResult } from '../protocol.js';
import { queryKey } from '../querykey.js';
import type { Caller } from './callers.js';
import { type Engine, refusal } from './engine.js';
import { toWireError, transferResult } from './replies.js';

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
/** Each caller's watches, by the id it chose. */
const byCaller = new WeakMap<Caller, Map<number, Shared>>();

function watchesOf(c: Caller): Map<number, Shared> {
  let m = byCaller.get(c);
  if (!m) byCaller.set(c, (m = new Map()));
  return m;
}

export function watch(c: Engine, from: Caller, req: Requests['watch'], transfer: Transferable[]): WatchResult | null {
  const mine = watchesOf(from);
  if (mine.has(req.watch)) throw refusal('RESQ_BAD_PARAM', 'this watch id is in use');
  const bytes = req.bytes === true;
  const key = queryKey(req.sql, req.params, bytes);
  let s = shared.get(key);
  // Checks the SQL (one read-only statement) and finds the tables it reads.
  const tables = s?.tables ?? c.queryTables(req.sql);
  const r = c.watchQuery(req.sql, req.params, bytes, req.previous);
  if (!s) {
    s = { key, sql: req.sql, params: req.params, bytes, tables, hash: r?.hash ?? req.previous, dirty: false, subscribers: new Set() };
    shared.set(key, s);
  }
  s.subscribers.add({ from, id: req.watch });
  mine.set(req.watch, s);
  if (r) addTransfers(r.value, transfer);
  return r;
}

export function unwatch(from: Caller, id: number): void {
  const mine = watchesOf(from);
  const s = mine.get(id);
  if (!s) return;
  mine.delete(id);
  for (const sub of s.subscribers) if (sub.from === from && sub.id === id) s.subscribers.delete(sub);
  if (s.subscribers.size === 0) shared.delete(s.key);
}

/** Ends every watch of `from` (it left). */
export function unwatchAll(from: Caller): void {
  for (const id of [...watchesOf(from).keys()]) unwatch(from, id);
}

/**
 * Re-runs the live queries that read a table committed transactions changed
 * since the last time. `on`: where they run, the writer `conn` or a reader
 * beside it (queue.ts); one the reader cannot run (RESQ_ON_WRITER: a temp
 * table of the writer's) stays due, for the writer's next turn.
 */
export function rerunWatches(conn: Engine, on: Engine = conn): void {
  // Without watches the changed tables are left to gather (a set of
  // names, bounded by the schema): a watch made later re-runs once for
  // them, and its hash keeps that from being delivered.
  if (shared.size === 0) return;
  const changed = new Set(conn.takeChanged());
  for (const s of shared.values()) if (s.tables.some((t) => changed.has(t)) || changed.has('sqlite_schema')) s.dirty = true;
  for (const s of shared.values()) {
    if (!s.dirty) continue;
    s.dirty = false;
    let push: (id: number) => Push;
    const transfer: Transferable[] = [];
    try {
      const r = on.watchQuery(s.sql, s.params, s.bytes, s.hash);
      if (!r) continue;
      s.hash = r.hash;
      push = (id) => ({ push: id, result: r });
      addTransfers(r.value, transfer);
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError) throw err;
      if ((err as { code?: unknown })?.code === 'RESQ_ON_WRITER') {
        s.dirty = true;
        continue;
      }
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
