// React bindings (`resq-wasm/react`; react ≥ 18, an optional peer
// dependency): a provider for the database, live queries through the
// framework-free store (store.ts) and `useSyncExternalStore`, and object
// URLs of stored media that are revoked when they are no longer shown.
//
//   <DatabaseProvider database={open('media.db')}>
//     <Gallery />
//   </DatabaseProvider>
//
//   const { rows, error, loading } = useQuery('SELECT id, name FROM photos');
//   const src = useBlobUrl('photos', 'data', id, { type: 'image/jpeg' });

import { createContext, createElement, useContext, useEffect, useMemo, useState, useSyncExternalStore, type ReactNode } from 'react';
import type { Database } from './database.js';
import { ResqError } from './errors.js';
import type { Params } from './params.js';
import type { Row } from './rows.js';
import { queryKey } from './querykey.js';
import { storeFor, type QueryState, type QueryStore } from './store.js';

export type { QueryState } from './store.js';

/** The database, once a promise of it has resolved; its error if it rejected. */
interface Provided {
  database: Database | undefined;
  error: unknown;
}

const DatabaseContext = createContext<Provided | null>(null);

const PENDING: Provided = Object.freeze({ database: undefined, error: undefined });

/** Makes `database` (a `Database`, or a promise of one) the one that the hooks below it use. */
export function DatabaseProvider(props: { database: Database | Promise<Database>; children?: ReactNode }): ReactNode {
  const { database } = props;
  const [settled, setSettled] = useState<{ of: Promise<Database>; provided: Provided } | null>(null);
  useEffect(() => {
    if (isDatabase(database)) return;
    let live = true;
    database.then(
      (d) => live && setSettled({ of: database, provided: { database: d, error: undefined } }),
      (error: unknown) => live && setSettled({ of: database, provided: { database: undefined, error } }),
    );
    return () => {
      live = false;
    };
  }, [database]);
  const value = useMemo(
    () => (isDatabase(database) ? { database, error: undefined } : settled?.of === database ? settled.provided : PENDING),
    [database, settled],
  );
  return createElement(DatabaseContext.Provider, { value }, props.children);
}

const isDatabase = (d: Database | Promise<Database>): d is Database => typeof (d as Promise<Database>).then !== 'function';

function useProvided(): Provided {
  const p = useContext(DatabaseContext);
  if (!p)
    throw new ResqError('RESQ_BAD_PARAM', 'resq-wasm/react: useDatabase, useQuery and useBlobUrl need a <DatabaseProvider> above them');
  return p;
}

/** The provider's database; undefined while its promise is pending (or if it rejected). */
export function useDatabase(): Database | undefined {
  return useProvided().database;
}

const LOADING: QueryState<never> = Object.freeze({ rows: undefined, error: undefined, loading: true });
const idle: QueryStore<never> = { subscribe: () => () => {}, getSnapshot: () => LOADING };

/**
 * A live query: `{ rows, error, loading }`, rendered again after every
 * commit (in any tab) that changes its result. With `{ bytes: true }`,
 * `rows` is the result as `queryBytes` gives it. Identical queries share
 * one watch; a change of `sql` or `params` (compared by value) moves to
 * that query's result, and never shows the old one's after it.
 */
export function useQuery<R extends Row = Row>(sql: string, params?: Params, options?: { bytes?: false }): QueryState<R[]>;
export function useQuery(sql: string, params: Params | undefined, options: { bytes: true }): QueryState<Uint8Array>;
export function useQuery(sql: string, params?: Params, options: { bytes?: boolean } = {}): QueryState<unknown> {
  const { database, error } = useProvided();
  const bytes = options.bytes === true;
  const key = queryKey(sql, params, bytes);
  // The store for this query; `key` stands for sql, params and bytes.
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for sql, params and bytes
  const store = useMemo(() => (database ? storeFor(database, sql, params, bytes, key) : idle), [database, key]);
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
  return error === undefined ? state : { rows: undefined, error: error as QueryState<unknown>['error'], loading: false };
}

/**
 * An object URL for a stored value (through `blobFile`), for an `<img>`,
 * `<video>` or `<audio>`: undefined until it is read, and if it cannot
 * be. The URL is revoked when the component unmounts or the inputs change.
 */
export function useBlobUrl(table: string, column: string, rowid: number | bigint, options: { type?: string } = {}): string | undefined {
  const { database } = useProvided();
  const { type } = options;
  const [url, setUrl] = useState<string | undefined>(undefined);
  // biome-ignore lint/correctness/useExhaustiveDependencies: String(rowid) stands for rowid (1 and 1n are one row)
  useEffect(() => {
    if (!database) return;
    let live = true;
    let made: string | undefined;
    database.blobFile(table, column, rowid, type === undefined ? {} : { type }).then(
      (blob) => {
        if (!live) return;
        made = URL.createObjectURL(blob);
        setUrl(made);
      },
      () => live && setUrl(undefined),
    );
    return () => {
      live = false;
      if (made) URL.revokeObjectURL(made);
      setUrl(undefined);
    };
  }, [database, table, column, String(rowid), type]);
  return url;
}
