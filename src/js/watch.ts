// Live queries on the page side: `db.watch` and `db.watchBytes`. The
// worker re-runs a watched query after each commit that changed a table it
// reads, and sends the result only when it differs (see worker.ts); here
// each result reaches the callback, or the async iterator, of each
// subscription.

import type { ResqError } from './errors.js';
import type { Watcher } from './link.js';
import type { QueryResult, WatchResult } from './protocol.js';

/** What `watch` and `watchBytes` return: call it to unsubscribe. */
export interface Subscription<T> extends AsyncIterable<T> {
  /** Stops the subscription (safe inside its own callback, and more than once). */
  (): void;
  /**
   * Resolves once the first result is delivered; rejects (with the
   * ResqError) when the query cannot be watched: invalid SQL, more than
   * one statement, a statement that writes, a parameter that is not a value.
   */
  readonly ready: Promise<void>;
}

/**
 * The key of `Database`'s watch through a session of its own, for the React
 * and Vue bindings and `resq-wasm/store` (not public API): their live
 * queries neither wait for the app's calls on the same `Database` nor run
 * inside its transaction. `Symbol.for`, so every entry that imports it
 * names the one method.
 */
export const OWN_SESSION: unique symbol = Symbol.for('resq-wasm.ownSession') as never;

export interface WatchOptions {
  /**
   * Called when a re-run of the query fails (its table was dropped, say);
   * the subscription stays, and delivers again once the query works.
   * Without it, the error is reported to the console.
   */
  onError?(error: ResqError): void;
}

/**
 * A subscription: `start` registers the watcher (resolving with its id once
 * the first result is delivered), `stop` ends it. `decode` turns a result
 * into what the caller gets. Without `callback`, results wait for the async
 * iterator (only the newest is kept: a slow reader skips to the latest).
 */
export function subscribe<T>(
  start: (w: Watcher) => Promise<number>,
  stop: (id: number) => void,
  query: { sql: string; params: unknown; bytes: boolean; own?: boolean },
  decode: (value: QueryResult | Uint8Array) => T,
  callback: ((value: T) => void) | undefined,
  options: WatchOptions,
): Subscription<T> {
  let id = 0;
  let live = true;
  let latest: { value: T } | null = null;
  let failure: ResqError | null = null;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const report = (error: ResqError) => {
    if (options.onError) return guarded(() => options.onError!(error));
    console.error('resq-wasm: a watched query failed to re-run; it stays subscribed', error);
  };
  const watcher: Watcher = {
    ...query,
    hash: '',
    deliver(result: WatchResult) {
      if (!live) return;
      watcher.hash = result.hash;
      const value = decode(result.value);
      if (callback) guarded(() => callback(value));
      else {
        latest = { value };
        notify();
      }
    },
    fail(error: ResqError) {
      if (!live) return;
      report(error);
    },
  };
  const unsubscribe = () => {
    if (!live) return;
    live = false;
    if (id) stop(id);
    notify();
  };
  const ready = start(watcher).then(
    (started) => {
      id = started;
      if (!live) stop(id);
    },
    (err: ResqError) => {
      failure = err;
      live = false;
      notify();
      throw err;
    },
  );
  ready.catch(() => {}); // The caller may not look: the error also ends the iterator.
  const iterate = async function* (): AsyncGenerator<T> {
    try {
      for (;;) {
        if (latest) {
          const { value } = latest;
          latest = null;
          yield value;
          continue;
        }
        if (failure) throw failure;
        if (!live) return;
        await new Promise<void>((r) => (wake = r));
      }
    } finally {
      unsubscribe();
    }
  };
  return Object.assign(unsubscribe, { ready, [Symbol.asyncIterator]: iterate });
}

/** A subscriber's callback that throws is reported, and the subscription goes on. */
function guarded(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (typeof reportError === 'function') reportError(err);
    else console.error(err);
  }
}
