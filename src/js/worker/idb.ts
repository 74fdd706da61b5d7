// A database's files in IndexedDB (issue 30): what they are made of there,
// loaded when the database opens and stored at each sync. The files' blocks
// and segments are the core's (src/worker/idb.rs, over codec::blocks); this
// module is their IndexedDB side, which is asynchronous where SQLite's VFS
// is not.
//
// One IndexedDB database per origin, `resq-wasm`, with three stores, each
// keyed first by the database's name and the SQLite file's path
// (`media.db`, `media.db-wal`): the name too, since a path of one database
// can be another's name (database `a`'s WAL is `a-wal`, a name too):
// - `files`: [name, path] → { size, block, next, frames? } (bytes, bytes a
//   block, the next segment's number; for a WAL laid out in frame groups,
//   `codec::frames`, its own size, `size` being its blocks'), and [name] →
//   { seq } for each database: how many syncs of its files are stored;
// - `chunks`: [name, path, n] → a map chunk, a Uint32Array (codec::blocks'
//   words);
// - `segments`: [name, path, seg] → a Blob of packed blocks, or its bytes (an
//   ArrayBuffer): a WAL's small segments, a small commit's, which are
//   stored faster so (src/worker/idb/segments.rs, `INLINE`), and every segment
//   where IndexedDB refuses Blobs: WebKit's ephemeral sessions (a private
//   window) keep IndexedDB in memory and cannot store a Blob there.
//
// Once a sync's transaction is complete, its segments' Blobs (made in the
// worker, held in the browser's memory) are swapped for the ones a read of
// them gives back, which the browser reads from IndexedDB's files: so the
// memory a database holds does not grow with what was written.
//
// A sync is one `readwrite` transaction with `durability: 'strict'`: the
// new segments, the changed chunks, the file's record, the deletion of
// what no block uses any more, and the database's `seq`, all or none. A
// large write's segments are stored ahead of it, 8 MiB at a time in
// transactions of their own (`ahead`; those still waiting at the sync go
// into its transaction), so the browser does not hold a
// large commit's bytes until its end; no stored map names them before the
// sync's transaction, and those a power loss leaves unnamed (numbered from
// a file's `next` on) are deleted by the next open's first transaction. The
// core starts it from SQLite's synchronous xSync, and it completes later;
// a call is answered once every transaction started so far is complete
// (`durable`, awaited in ops.ts). IndexedDB runs transactions on the same
// stores in the order they were made. Each one first reads `seq` and
// aborts unless every sync before it was stored: after one fails (a full
// store), none after it lands, so what is stored is always the files as of
// one sync, and the worker loads them again from there.

import type { WireError } from '../protocol.js';
import { readSync } from './read-sync.js';

/** The origin's IndexedDB database of every database stored there. */
export const IDB_NAME = 'resq-wasm';
const STORES = ['files', 'chunks', 'segments'];

/** A file as the core loads it. */
export interface LoadedFile {
  path: string;
  size: number;
  frames?: number;
  block: number;
  next: number;
  chunks: [number, Uint32Array][];
  segments: [number, Blob][];
}

/**
 * A segment as the core holds it: its `Blob`, which {@link IdbFiles.store}
 * swaps for IndexedDB's once the segment is stored (see the top), or for
 * a WAL's small segment, its bytes, stored as they are (`INLINE` in
 * src/worker/idb/segments.rs).
 */
export type Segment = { blob: Blob; bytes?: undefined } | { blob?: undefined; bytes: ArrayBuffer };

/** What one sync of a file stores, as the core gives it (src/worker/idb.rs). */
export interface Sync {
  path: string;
  size: number;
  frames: number | undefined;
  block: number;
  next: number;
  chunkCount: number;
  chunks: [number, Uint32Array][];
  segments: [number, Segment][];
  dead: number[];
  /** Segments made since the last sync that no block uses any more. */
  released: number[];
}

/**
 * Bytes of segments made before their sync that are stored together, in a
 * transaction of their own (see {@link IdbFiles.ahead}).
 */
const AHEAD_BYTES = 8 << 20;

const sizeOf = (held: Segment): number => held.blob?.size ?? held.bytes?.byteLength ?? 0;

const done = <T>(req: IDBRequest<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });

/** Keys [name, path, n] and on. */
const from = (name: string, path: string, n: number) => IDBKeyRange.bound([name, path, n], [name, path, Infinity]);

/**
 * The version of {@link IDB_NAME}: the layout described at the top. A
 * change to it that this package would misread raises it, so this package
 * opening what a newer one stored is refused (IndexedDB's VersionError),
 * never read wrongly.
 */
const LAYOUT = 1;

async function openIdb(): Promise<IDBDatabase> {
  const req = indexedDB.open(IDB_NAME, LAYOUT);
  req.onupgradeneeded = () => {
    for (const s of STORES) if (!req.result.objectStoreNames.contains(s)) req.result.createObjectStore(s);
  };
  try {
    return await done(req);
  } catch (err) {
    if ((err as DOMException)?.name !== 'VersionError') throw err;
    const refused: WireError = {
      code: 'RESQ_UNSUPPORTED',
      message: `this origin's IndexedDB databases were stored by a newer resq-wasm, in a layout this one cannot read: open them with that version or a later one (${(err as DOMException).message})`,
    };
    throw refused;
  }
}

/** Whether this IndexedDB refuses to store a Blob (see the top): a probe put, never kept. */
function refusesBlobs(idb: IDBDatabase): Promise<boolean> {
  return new Promise((resolve) => {
    const tx = idb.transaction(['segments'], 'readwrite');
    tx.onabort = () => resolve(true);
    try {
      const req = tx.objectStore('segments').put(new Blob([new Uint8Array(1)]), ['', -1]);
      req.onsuccess = () => {
        resolve(false);
        tx.abort();
      };
    } catch {
      resolve(true);
    }
  });
}

/** One database's files in IndexedDB, and the syncs of them not yet complete. */
export class IdbFiles {
  readonly files: LoadedFile[];
  #idb: IDBDatabase;
  #name: string;
  /** Syncs started: the `seq` the next one expects stored before it. */
  #seq: number;
  /** Every sync started so far, complete (or the first failure). */
  #stored: Promise<void> = Promise.resolve();
  /** The first sync that failed: every call after it fails with it, until the database is loaded again. */
  #failed: unknown = null;
  /** IndexedDB refuses Blobs here: segments are stored as their bytes (see {@link placed}). */
  #bytes = false;
  #probed: Promise<void> | null = null;
  /** Closed: syncs still completing swap nothing (see {@link #swap}). */
  #closed = false;
  /** Segments made before their sync and not yet stored: path, number, segment. */
  #queued: [string, number, Segment][] = [];
  #queuedBytes = 0;
  /** By path, the segments stored (or being stored) ahead of the sync that names them. */
  #storedAhead = new Map<string, Set<number>>();
  /**
   * Segments no stored map names, from where each file's map ends
   * (`next`): stored ahead of a sync that never came. The first
   * transaction deletes them.
   */
  #orphans: [string, number][] | null;

  private constructor(idb: IDBDatabase, name: string, seq: number, files: LoadedFile[], orphans: [string, number][]) {
    this.#idb = idb;
    this.#name = name;
    this.#seq = seq;
    this.files = files;
    this.#orphans = orphans;
  }

  /** Loads database `name`'s files: each one's map and its segments' Blobs, never their bytes. */
  static async open(name: string): Promise<IdbFiles> {
    const idb = await openIdb();
    const tx = idb.transaction(STORES, 'readonly');
    const [files, chunks, segments] = STORES.map((s) => tx.objectStore(s));
    const seq = ((await done(files.get([name]))) as { seq: number } | undefined)?.seq ?? 0;
    const loaded: LoadedFile[] = [];
    const orphans: [string, number][] = [];
    for (const path of [name, `${name}-journal`, `${name}-wal`]) {
      const record = (await done(files.get([name, path]))) as Omit<LoadedFile, 'path' | 'chunks' | 'segments'> | undefined;
      orphans.push([path, record?.next ?? 0]);
      if (!record) continue;
      const [ck, cv, sk, sv] = await Promise.all([
        done(chunks.getAllKeys(from(name, path, 0))),
        done(chunks.getAll(from(name, path, 0))),
        done(segments.getAllKeys(from(name, path, 0))),
        done(segments.getAll(from(name, path, 0))),
      ]);
      const second = (k: IDBValidKey) => (k as [string, string, number])[2];
      const segs: [number, Blob][] = [];
      for (const [i, k] of sk.entries())
        if (second(k) < record.next) segs.push([second(k), sv[i] instanceof Blob ? sv[i] : new Blob([sv[i] as ArrayBuffer])]);
      loaded.push({ path, ...record, chunks: ck.map((k, i) => [second(k), cv[i] as Uint32Array]), segments: segs });
    }
    return new IdbFiles(idb, name, seq, loaded, orphans);
  }

  /**
   * The database lives here (not in OPFS): learns, once, whether this
   * IndexedDB stores Blobs, before its first sync. A probe transaction,
   * spared to databases that open in OPFS.
   */
  placed(): Promise<void> {
    this.#probed ??= refusesBlobs(this.#idb).then((bytes) => {
      this.#bytes = bytes;
    });
    return this.#probed;
  }

  /** Starts a sync's transaction; `stored` runs once it is complete. */
  #begin(stored?: () => void): IDBTransaction {
    const tx = this.#idb.transaction(STORES, 'readwrite', { durability: 'strict' });
    const expect = this.#seq++;
    const files = tx.objectStore('files');
    const check = files.get([this.#name]);
    check.onsuccess = () => {
      const stored = (check.result as { seq: number } | undefined)?.seq ?? 0;
      if (stored !== expect) tx.abort();
    };
    files.put({ seq: expect + 1 }, [this.#name]);
    if (this.#orphans) {
      for (const [path, next] of this.#orphans) tx.objectStore('segments').delete(from(this.#name, path, next));
      this.#orphans = null;
    }
    const ended = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => {
        resolve();
        stored?.();
      };
      tx.onabort = () => reject(tx.error ?? new DOMException('a sync before this one was not stored', 'AbortError'));
    });
    // Seen, even when an earlier one failed first (no unhandled rejection).
    ended.catch(() => {});
    this.#stored = this.#stored.then(() => ended);
    return tx;
  }

  /**
   * Takes a segment a file made before its sync (a large write's), and
   * stores it ahead of that sync, with others up to {@link AHEAD_BYTES},
   * in a transaction of their own (those still waiting when the file
   * syncs go into the sync's transaction): once stored, its Blob is swapped for
   * IndexedDB's, so the browser no longer holds what the worker made. No
   * stored map names it until the sync's transaction, which leaves it out;
   * so a power loss before then leaves it unnamed, and the next open's
   * first transaction deletes it (see {@link #orphans}).
   */
  ahead([path, seg, held]: [string, number, Segment]): void {
    this.#queued.push([path, seg, held]);
    this.#queuedBytes += sizeOf(held);
    if (this.#queuedBytes >= AHEAD_BYTES) this.#storeAhead();
  }

  #storeAhead(): void {
    if (this.#queued.length === 0) return;
    const queued = this.#queued;
    this.#queued = [];
    this.#queuedBytes = 0;
    const byPath = new Map<string, [number, Segment][]>();
    for (const [path, seg, held] of queued) byPath.set(path, [...(byPath.get(path) ?? []), [seg, held]]);
    const tx = this.#begin(() => {
      for (const [path, stored] of byPath) this.#swap(path, stored);
    });
    const segments = tx.objectStore('segments');
    for (const [path, seg, held] of queued) {
      this.#putSegment(segments, held, [this.#name, path, seg]);
      const set = this.#storedAhead.get(path) ?? new Set<number>();
      this.#storedAhead.set(path, set.add(seg));
    }
  }

  /** Starts the transaction that stores a sync (the core calls it from xSync). */
  store(s: Sync): void {
    // This file's segments still waiting to be stored ahead go into this
    // transaction, with the rest of the sync's.
    this.#dequeue(s.path);
    const ahead = this.#storedAhead.get(s.path) ?? new Set<number>();
    this.#storedAhead.delete(s.path);
    const made = s.segments.filter(([seg]) => !ahead.has(seg));
    const tx = this.#begin(() => this.#swap(s.path, made));
    const segments = tx.objectStore('segments');
    const name = this.#name;
    for (const [seg, held] of made) this.#putSegment(segments, held, [name, s.path, seg]);
    for (const seg of s.dead) segments.delete([name, s.path, seg]);
    for (const seg of s.released) if (ahead.has(seg)) segments.delete([name, s.path, seg]);
    const chunks = tx.objectStore('chunks');
    for (const [n, words] of s.chunks) chunks.put(words, [name, s.path, n]);
    chunks.delete(from(name, s.path, s.chunkCount));
    const frames = s.frames === undefined ? {} : { frames: s.frames };
    tx.objectStore('files').put({ size: s.size, block: s.block, next: s.next, ...frames }, [name, s.path]);
  }

  /**
   * Swaps the Blobs of a stored sync's segments, made in this worker (and
   * so held in the browser's memory), for IndexedDB's own, which it reads
   * from its files. Where IndexedDB keeps bytes, not Blobs, they stay.
   * Never a transaction with nothing in it: in WebKitGTK, one started
   * just before the worker ends (a leader tab closed right after a commit)
   * can stay open for good, and every other tab's write waits behind it.
   */
  #swap(path: string, stored: [number, Segment][]): void {
    if (this.#bytes || this.#closed) return;
    const blobs = stored.filter(([, held]) => held.blob);
    if (blobs.length === 0) return;
    let segments: IDBObjectStore;
    try {
      segments = this.#idb.transaction(['segments'], 'readonly').objectStore('segments');
    } catch {
      return; // the connection is closing: nothing reads these segments any more
    }
    for (const [seg, held] of blobs) {
      const made = held.blob as Blob;
      const req = segments.get([this.#name, path, seg]);
      req.onsuccess = () => {
        if (req.result instanceof Blob && req.result.size === made.size) held.blob = req.result;
      };
    }
  }

  /** Puts a segment's Blob, or its bytes: those it is kept as, or where IndexedDB refuses Blobs (see the top). */
  #putSegment(segments: IDBObjectStore, held: Segment, key: IDBValidKey): void {
    if (held.bytes) segments.put(held.bytes, key);
    else segments.put(this.#bytes ? readSync(held.blob) : held.blob, key);
  }

  /** Starts the transaction that deletes the file at `path` (the core calls it from xDelete). */
  /** Forgets the segments of the file at `path` waiting to be stored ahead. */
  #dequeue(path: string): void {
    this.#queued = this.#queued.filter(([p]) => p !== path);
    this.#queuedBytes = this.#queued.reduce((n, [, , held]) => n + sizeOf(held), 0);
  }

  delete(path: string): void {
    this.#dequeue(path);
    this.#storedAhead.delete(path);
    const tx = this.#begin();
    tx.objectStore('files').delete([this.#name, path]);
    tx.objectStore('chunks').delete(from(this.#name, path, 0));
    tx.objectStore('segments').delete(from(this.#name, path, 0));
  }

  /**
   * Resolves once every sync started so far is stored; rejects with the
   * first that failed (a QuotaExceededError for a full store), and so does
   * every call after it.
   */
  async durable(): Promise<void> {
    if (this.#failed !== null) throw this.#failed;
    try {
      await this.#stored;
    } catch (err) {
      this.#failed ??= err;
      throw this.#failed;
    }
  }

  close(): void {
    this.#closed = true;
    this.#idb.close();
  }
}
