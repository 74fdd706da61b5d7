// Vue bindings (`resq-wasm/vue`; vue ≥ 3.4, an optional peer dependency):
// the database provided to a component tree, and live queries and media
// URLs as refs. The live queries are the framework-free store's
// (store.ts): identical ones share one watch.
//
//   provideDatabase(open('media.db'));                  // in the root's setup()
//   const { rows, error, loading } = useQuery('SELECT id, name FROM photos');
//   const src = useBlobUrl('photos', 'data', () => props.id, { type: 'image/jpeg' });
//
// Arguments may be plain values, refs or getters: a change of one (the
// parameters compared by value) moves to that query's result.

import {
  inject,
  onScopeDispose,
  provide,
  shallowRef,
  toValue,
  watch,
  type InjectionKey,
  type MaybeRefOrGetter,
  type Ref,
  type ShallowRef,
} from 'vue';
import type { Database } from './database.js';
import { ResqError } from './errors.js';
import type { Params } from './params.js';
import type { Row } from './rows.js';
import { queryKey } from './querykey.js';
import { storeFor } from './store.js';

const DATABASE: InjectionKey<ShallowRef<Database | undefined>> = Symbol('resq-wasm database');
/** Why the promise given to provideDatabase() rejected, if it did. */
const FAILED: InjectionKey<ShallowRef<ResqError | undefined>> = Symbol('resq-wasm database failed');

/** Provides `database` (a `Database`, or a promise of one) to this component's descendants; returns it as a ref. */
export function provideDatabase(database: Database | Promise<Database>): ShallowRef<Database | undefined> {
  const ref = shallowRef<Database | undefined>(undefined);
  const failed = shallowRef<ResqError | undefined>(undefined);
  if (typeof (database as Promise<Database>).then === 'function') {
    (database as Promise<Database>).then(
      (d) => (ref.value = d),
      (error: unknown) =>
        (failed.value =
          error instanceof ResqError
            ? error
            : new ResqError('RESQ_BAD_PARAM', `the database given to provideDatabase() did not open: ${String(error)}`)),
    );
  } else {
    ref.value = database as Database;
  }
  provide(DATABASE, ref);
  provide(FAILED, failed);
  return ref;
}

/** The provided database, as a ref: undefined while its promise is pending. */
export function useDatabase(): ShallowRef<Database | undefined> {
  const ref = inject(DATABASE, null);
  if (!ref)
    throw new ResqError('RESQ_BAD_PARAM', 'resq-wasm/vue: useDatabase, useQuery and useBlobUrl need provideDatabase() in an ancestor');
  return ref;
}

export interface QueryRefs<T> {
  rows: Ref<T | undefined>;
  error: Ref<ResqError | undefined>;
  loading: Ref<boolean>;
}

/**
 * A live query: `{ rows, error, loading }` as refs, updated after every
 * commit (in any tab) that changes its result. With `{ bytes: true }`,
 * `rows` holds the result as `queryBytes` gives it.
 */
export function useQuery<R extends Row = Row>(
  sql: MaybeRefOrGetter<string>,
  params?: MaybeRefOrGetter<Params | undefined>,
  options?: { bytes?: false },
): QueryRefs<R[]>;
export function useQuery(
  sql: MaybeRefOrGetter<string>,
  params: MaybeRefOrGetter<Params | undefined>,
  options: { bytes: true },
): QueryRefs<Uint8Array>;
export function useQuery(
  sql: MaybeRefOrGetter<string>,
  params?: MaybeRefOrGetter<Params | undefined>,
  options: { bytes?: boolean } = {},
): QueryRefs<unknown> {
  const database = useDatabase();
  const failed = inject(FAILED, shallowRef(undefined));
  const bytes = options.bytes === true;
  const rows = shallowRef<unknown>(undefined);
  const error = shallowRef<ResqError | undefined>(undefined);
  const loading = shallowRef(true);
  let leave: (() => void) | null = null;
  watch(
    // The key stands for the query: a new array of the same parameters is the same query.
    [database, () => queryKey(toValue(sql), toValue(params), bytes), failed],
    ([db, key, failure]) => {
      leave?.();
      leave = null;
      rows.value = undefined;
      error.value = failure;
      loading.value = failure === undefined;
      if (!db) return;
      const store = storeFor(db, toValue(sql), toValue(params), bytes, key);
      const show = () => {
        const s = store.getSnapshot();
        rows.value = s.rows;
        error.value = s.error;
        loading.value = s.loading;
      };
      leave = store.subscribe(show);
      show();
    },
    { immediate: true },
  );
  onScopeDispose(() => leave?.());
  return { rows, error, loading };
}

/**
 * An object URL for a stored value (through `blobFile`), as a ref:
 * undefined until it is read, and if it cannot be. The URL is revoked
 * when the component unmounts or the inputs change.
 */
export function useBlobUrl(
  table: MaybeRefOrGetter<string>,
  column: MaybeRefOrGetter<string>,
  rowid: MaybeRefOrGetter<number | bigint>,
  options: { type?: MaybeRefOrGetter<string | undefined> } = {},
): Ref<string | undefined> {
  const database = useDatabase();
  const url = shallowRef<string | undefined>(undefined);
  let made: string | undefined;
  let turn = 0;
  const revoke = () => {
    if (made) URL.revokeObjectURL(made);
    made = undefined;
    url.value = undefined;
  };
  watch(
    [database, () => toValue(table), () => toValue(column), () => String(toValue(rowid)), () => toValue(options.type)],
    ([db, t, c, , type]) => {
      revoke();
      const mine = ++turn;
      if (!db) return;
      db.blobFile(t, c, toValue(rowid), type === undefined ? {} : { type }).then(
        (blob) => {
          if (mine !== turn) return;
          made = URL.createObjectURL(blob);
          url.value = made;
        },
        () => {},
      );
    },
    { immediate: true },
  );
  onScopeDispose(() => {
    turn += 1;
    revoke();
  });
  return url;
}
