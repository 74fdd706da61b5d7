// Live queries for UI frameworks (`resq-wasm/store`), with no framework in
// it: `queryStore(db, sql, params)` is a store with the `subscribe` /
// `getSnapshot` pair that React's `useSyncExternalStore` takes as it is,
// and that Vue (resq-wasm/vue), Svelte or anything else wraps in a few
// lines. Identical queries on one database are one store, with one
// `db.watch` between them: a hundred components showing the same list
// cost one query per commit.
//
// A store watches while it has subscribers. When the last one leaves, the
// watch ends once the code running then is done (a microtask), unless one
// comes back first: React's StrictMode unmounts and mounts every component
// once more in one go, and that must not end and start the watch again. (A
// timer would wait for a second or more in a background tab.)
//
// "Identical" is querykey.ts's: bytes count by their contents as they are
// when the store is made. The store keeps a copy of its parameters' bytes
// and queries with it, for as long as it lives: were it to keep the
// caller's buffer, bytes changed after it was made would show the rows of
// the new contents under the old contents' key, to everyone sharing it,
// the next time its watch starts. A caller whose bytes changed asks again
// and gets the store of the new contents.

import type { Database } from './database.js';
import type { ResqError } from './errors.js';
import type { Params } from './params.js';
import { keptParams, queryKey } from './querykey.js';
import type { Row } from './rows.js';
import { OWN_SESSION, type Subscription } from './watch.js';

/** What a store holds: the newest result, or why there is none. */
export interface QueryState<T> {
  /** The newest result (rows, or with `bytes` the JSON bytes); undefined until the first, and after an error in the SQL. */
  rows: T | undefined;
  /** Why the query failed: its SQL, or a re-run after a commit (`rows` then keeps the last result). */
  error: ResqError | undefined;
  /** Until the first result or error. */
  loading: boolean;
}

export interface QueryStore<T> {
  /** Calls `onChange` after every change of the snapshot; returns the unsubscribe function. */
  subscribe(onChange: () => void): () => void;
  /** The current state: the same object until it changes. */
  getSnapshot(): QueryState<T>;
}

export interface QueryStoreOptions {
  /** Results as `queryBytes` gives them (UTF-8 JSON text) instead of rows. */
  bytes?: boolean;
}

interface Entry {
  state: QueryState<unknown>;
  listeners: Set<() => void>;
  watch: Subscription<unknown> | null;
  /** The end of the watch is on its way (a microtask), for a subscriber to come back first. */
  ending: boolean;
}

/** The stores of each database, by query (querykey.ts). */
const stores = new WeakMap<Database, Map<string, QueryStore<unknown>>>();

const LOADING: QueryState<never> = Object.freeze({ rows: undefined, error: undefined, loading: true });

/** The live store of `sql` with `params` on `db` (one per distinct query and database). */
export function queryStore<R extends Row = Row>(db: Database, sql: string, params?: Params, options?: { bytes?: false }): QueryStore<R[]>;
export function queryStore(db: Database, sql: string, params: Params | undefined, options: { bytes: true }): QueryStore<Uint8Array>;
export function queryStore(db: Database, sql: string, params?: Params, options: QueryStoreOptions = {}): QueryStore<unknown> {
  return storeFor(db, sql, params, options.bytes === true);
}

/** {@link queryStore}, with the form as a flag, and the query's key if the caller has it already (the bindings do). */
export function storeFor(
  db: Database,
  sql: string,
  params: Params | undefined,
  bytes: boolean,
  key = queryKey(sql, params, bytes),
): QueryStore<unknown> {
  let byQuery = stores.get(db);
  if (!byQuery) stores.set(db, (byQuery = new Map()));
  let store = byQuery.get(key);
  if (!store) byQuery.set(key, (store = makeStore(db, sql, keptParams(params), bytes, byQuery, key)));
  return store;
}

/**
 * A store, kept in `byQuery` under `key` while it watches (one that ended
 * and is subscribed again, by someone who kept it, watches again).
 */
function makeStore(
  db: Database,
  sql: string,
  params: Params | undefined,
  bytes: boolean,
  byQuery: Map<string, QueryStore<unknown>>,
  key: string,
): QueryStore<unknown> {
  const e: Entry = { state: LOADING, listeners: new Set(), watch: null, ending: false };
  const set = (state: QueryState<unknown>) => {
    e.state = state;
    for (const l of [...e.listeners]) l();
  };
  const start = () => {
    if (!byQuery.has(key)) byQuery.set(key, store);
    const deliver = (rows: unknown) => set({ rows, error: undefined, loading: false });
    const onError = (error: ResqError) => set({ rows: e.state.rows, error, loading: false });
    try {
      // Through a session of its own: a live query never waits behind the app's calls.
      const watch = db[OWN_SESSION](sql, params, bytes, deliver, { onError });
      e.watch = watch as Subscription<unknown>;
      watch.ready.catch((error: ResqError) => {
        if (e.watch === watch) set({ rows: undefined, error, loading: false });
      });
    } catch (error) {
      set({ rows: undefined, error: error as ResqError, loading: false });
    }
  };
  const end = () => {
    e.ending = false;
    if (e.listeners.size > 0) return;
    e.watch?.();
    e.watch = null;
    e.state = LOADING;
    if (byQuery.get(key) === store) byQuery.delete(key);
  };
  const store: QueryStore<unknown> = {
    subscribe(onChange) {
      e.listeners.add(onChange);
      if (!e.watch) start();
      let subscribed = true;
      return () => {
        if (!subscribed) return;
        subscribed = false;
        e.listeners.delete(onChange);
        if (e.listeners.size > 0 || e.ending) return;
        e.ending = true;
        queueMicrotask(end);
      };
    },
    getSnapshot: () => e.state,
  };
  return store;
}
