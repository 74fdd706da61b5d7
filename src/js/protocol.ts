// The messages between the page and the worker, written down once: each
// request by op, the reply value each op resolves with, the error and fatal
// shapes, the staged-blob marker, and the `query()` result layout (which
// mirrors src/codec/wire.rs; change both together).
//
// Every request carries an id; the worker answers each one, in the order it
// received them, with a Reply of the same id. A worker that can no longer
// answer (a wasm trap) sends one Fatal and closes.

/** Where a database lives (`db.storage`). */
export type Storage = 'opfs' | 'idb' | 'memory';
/** What `open` asks for: a storage, or `'default'` for a file name (OPFS where it works, else IndexedDB). */
export type AskedStorage = Storage | 'default';

/**
 * A key as the page holds it between one lead and the next, with no byte
 * of it readable there: WebCrypto keys that script cannot extract (one to
 * prove the key with, one it is sealed under) and the key sealed. The
 * worker that opens the database gets all of it (CryptoKeys cross to
 * workers) and unseals the key (keyproof.ts: `holdKey`, `unholdKey`).
 */
export interface HeldKey {
  proof: CryptoKey;
  wrap: CryptoKey;
  iv: Uint8Array;
  sealed: ArrayBuffer;
}

/** A stored value's address. */
export interface Cell {
  table: string;
  column: string;
  rowid: number | bigint;
}

/** A range of a stored value; both default to the whole value. */
export interface Range {
  offset?: number;
  length?: number;
}

export interface Requests {
  /**
   * `lock`: a Web Lock the worker holds while it lives (the page learns of
   * its end). `tab`: the page's tab id (see {@link Numbered}); `timeout`:
   * its `transactionTimeout`.
   */
  /** `heldKey`: the key, held (keyproof.ts). */
  /** `encrypt`: finish a `rekey(key)` of a plain database (the reply 'moved'): encrypt it under `heldKey`. */
  open: {
    name: string;
    storage: AskedStorage;
    blobTransferThreshold: number;
    lock: string;
    tab: string;
    timeout: number;
    heldKey?: HeldKey;
    encrypt?: boolean;
  };
  /**
   * `staged`: the parameters hold staged blobs ({@link StagedRef}) to store.
   * `tx` (these four ops): a `transaction()` callback's call, whose SQL may
   * not begin or end the transaction.
   */
  execute: {
    sql: string;
    params?: unknown;
    staged?: true;
    tx?: true;
    /**
     * `transaction()`'s own statements: its BEGIN (with its
     * `transactionTimeout`, ms), COMMIT and ROLLBACK.
     */
    txn?: 'begin' | 'commit' | 'rollback';
    timeout?: number;
  };
  query: { sql: string; params?: unknown; tx?: true };
  queryBytes: { sql: string; params?: unknown; tx?: true };
  /** The sets as values, or `encoded` by `batch.ts` when they all can be. */
  executeBatch: { sql: string; sets?: unknown[]; encoded?: Uint8Array; tx?: true };
  readBlob: Cell & Range;
  blobFile: Cell & { type: string };
  blobStreamOpen: Cell & Range;
  blobStreamRead: { session: number; offset: number; length: number };
  blobStreamClose: { session: number };
  stageOpen: Record<string, never>;
  stageAppend: { stage: number; chunk: Uint8Array | Blob };
  stageDiscard: { stage: number };
  close: Record<string, never>;
  /** A new key in its one form (keyproof.ts `keyBytes`), or null to decrypt. */
  rekey: { key: Uint8Array | null };
  /**
   * A live query: the reply is its result now (`null` if its hash is
   * `previous`); later results come as {@link Push}es with the same
   * `watch` id, chosen by the caller.
   */
  /**
   * `own`: a live query of the React or Vue bindings or `resq-wasm/store`,
   * which reads through a session of its own (queue.ts): it is not in its
   * `Database`'s order, nor in its open transaction.
   */
  watch: { watch: number; sql: string; params?: unknown; bytes: boolean; previous: string; own?: true };
  unwatch: { watch: number };
  /**
   * `export()`: the reply gives the export's id and the file's size. Until
   * it ends (its last read, `exportClose`, its caller leaving, or a stall,
   * see worker.ts) the worker runs only its reads.
   */
  exportOpen: Record<string, never>;
  /** The export's next bytes (whole pages, up to 4 MB). */
  exportRead: { export: number };
  exportClose: { export: number };
  /** `importDatabase`: replaces the database with staged blob `stage`'s bytes, once checked; the stage is used up either way. */
  /** `key`: an encrypted file's, in its one form (keyproof.ts `keyBytes`); the database's own when absent. */
  importStaged: { stage: number; key?: Uint8Array };
  /**
   * A call the page already refused (a bad parameter): the worker only sends
   * `error` back, so the rejection comes in its turn, after the replies to
   * the calls made before it.
   */
  fail: { error: WireError };
}

/** `{ changes, lastInsertRowid }` of `execute` and `executeBatch`. */
export interface RunResult {
  /** Rows changed by the statement (for `executeBatch`, by all sets together). */
  changes: number;
  /** A number, or a bigint outside ±(2^53 − 1). */
  lastInsertRowid: number | bigint;
}

/** What each op resolves with. */
export interface Replies {
  /** Where the database lives. */
  open: { storage: Storage };
  execute: RunResult;
  query: QueryResult;
  queryBytes: Uint8Array;
  executeBatch: RunResult;
  readBlob: Uint8Array;
  blobFile: Blob;
  /** session, start, end. */
  blobStreamOpen: Float64Array;
  blobStreamRead: Uint8Array;
  blobStreamClose: null;
  /** The staged blob's id. */
  stageOpen: number;
  /** Bytes staged so far. */
  stageAppend: number;
  stageDiscard: null;
  close: null;
  /**
   * 'moved': a plain database whose worker has no ciphers let go of it, for
   * the caller's next worker (with ciphers) to encrypt as it opens it.
   */
  rekey: null | 'moved';
  watch: WatchResult | null;
  unwatch: null;
  exportOpen: { export: number; size: number };
  exportRead: Uint8Array;
  exportClose: null;
  importStaged: null;
  fail: never;
}

/** A live query's result: `value` is what `query` (or `queryBytes`) gives. */
export interface WatchResult {
  /** 64-bit hash of the encoded result, as hex: equal results, equal hashes. */
  hash: string;
  value: QueryResult | Uint8Array;
}

/** A leader's worker to a following tab, first, on its new port. */
export interface Hello {
  hello: true;
  /** Where the database lives: a following tab that asked for another storage is refused. */
  storage: Storage;
  /** The database is encrypted: the tab answers `challenge` with a {@link KeyProof} (keyproof.ts). */
  encrypted: boolean;
  challenge?: Uint8Array;
}

/** A following tab's answer to the challenge of an encrypted database's worker. */
export interface KeyProof {
  proof: Uint8Array;
}

/** The worker's verdict on a {@link KeyProof}: wrong, and the port closes. */
export interface KeyVerdict {
  keyOk: boolean;
}

/**
 * The dedicated worker's name: this, then the database's. A worker named
 * with the second loads the wasm with ciphers (for `open(name, { key })`).
 */
export const WORKER_NAME = 'resq-wasm: ';
export const ENCRYPTED_WORKER_NAME = 'resq-wasm, encrypted: ';

/**
 * To a following tab: the tab that led closed the database. Replies to
 * its requests received before this came first; those after it are not
 * answered, and the tab sends them to the next leader.
 */
export interface Closing {
  closing: true;
}

/**
 * To the caller whose transaction `transactionTimeout` rolled back (it kept
 * other calls waiting): its `transaction()` rejects with RESQ_TIMEOUT.
 */
export interface Expired {
  expired: true;
}

/**
 * To every tab but the one that called `rekey`: the key changed, and this
 * worker lets that tab go; its link fails with RESQ_BAD_KEY.
 */
export interface Rekeyed {
  rekeyed: true;
}

/** The buffers in a request's fields (to move them again when it is sent again). */
export function transfersOf(v: unknown, out = new Set<ArrayBuffer>(), depth = 0): ArrayBuffer[] {
  if (ArrayBuffer.isView(v)) {
    if (v.buffer instanceof ArrayBuffer) out.add(v.buffer);
  } else if (depth < 3 && v !== null && typeof v === 'object' && !(v instanceof Blob)) {
    for (const x of Object.values(v)) transfersOf(x, out, depth + 1);
  }
  return [...out];
}

/** A live query's new result (or the error its re-run hit), sent unasked. */
export type Push = { push: number } & ({ result: WatchResult } | { error: WireError });

/**
 * The page hands its worker a port from a tab that follows it (the port in
 * the message's `ports`); `lock` is held by that tab while it lives.
 */
export interface Attach {
  attach: string;
}

/**
 * Messages to the port broker (broker.ts). `lock` is the leader worker's
 * lifetime lock (`lead`, `resign`) or the following tab's (`connect`, whose
 * MessagePort goes to the leader).
 */
export type BrokerRequest =
  | { kind: 'lead'; name: string; lock: string }
  | { kind: 'resign'; name: string; lock: string }
  | { kind: 'connect'; name: string; lock: string }
  | { kind: 'ping' };

/**
 * From the broker: to a leader, that it is registered (`led`), and a
 * follower's port (`follower`, the port in `ports`); to a follower, that
 * its request waits for a leader (`queued`), and whose worker its port went
 * to (`leader`). A request that gets no `led` or `queued` may have reached
 * a broker that was ending (election.ts asks again).
 */
export type BrokerReply =
  | { kind: 'led'; name: string; lock: string }
  | { kind: 'follower'; name: string; lock: string }
  | { kind: 'queued'; name: string; lock: string }
  | { kind: 'leader'; name: string; lock: string }
  | { kind: 'pong' };

/**
 * The BroadcastChannel on which a broker that starts says so
 * (`{ kind: 'started' }`): a broker that started again knows no leader, and
 * some tabs' ports to the one before may never be answered (WebKitGTK
 * starts a SharedWorker again when the tab that started it closes, and a
 * message sent meanwhile can reach the one that is ending). Tabs that lead
 * register again; tabs waiting to follow ask again.
 */
export const BROKER_CHANNEL = 'resq-wasm-broker';

/**
 * What a shared database's calls carry besides their fields, so that a call
 * sent again to the next leader runs exactly once (link.ts,
 * worker/record.ts): `seq` numbers the calls of one tab (the tab is the
 * caller: a following tab's port, or the page whose `open` named it), and
 * `below` is the oldest of them still waiting for an answer (the worker may
 * forget the records of those before it); `again` marks a call sent before,
 * to a worker that went away.
 */
export interface Numbered {
  seq?: number;
  below?: number;
  again?: true;
}

export type Op = keyof Requests;
export type Request = { [K in Op]: { id: number; op: K } & Requests[K] & Numbered }[Op];

/** An error as it crosses the boundary: a plain, cloneable object. */
export interface WireError {
  code: string;
  message: string;
  errno?: number;
}

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };
export interface Fatal {
  fatal: string;
}

/** A staged blob inside a parameter set on its way to the worker. */
export interface StagedRef {
  __resqStaged: number;
}

export const isStagedRef = (v: unknown): v is StagedRef =>
  typeof v === 'object' && v !== null && typeof (v as StagedRef).__resqStaged === 'number' && Object.keys(v).length === 1;

/** What `query` sends: JSON rows plus fix-ups for the cells JSON cannot carry. */
export interface QueryResult {
  json: Uint8Array;
  columns?: string[];
  /** Five numbers per fix-up: row, column, kind, a, b. */
  fixups?: Float64Array;
  /** Small BLOBs, back to back. */
  side?: Uint8Array;
  /** BLOBs at or above the transfer threshold, each in its own buffer. */
  buffers?: Uint8Array[];
}

/** `null` in the JSON; the bytes are side[a .. a + b]. */
export const FIX_BLOB_INLINE = 0;
/** `null` in the JSON; the bytes are buffers[a]. */
export const FIX_BLOB_OWN = 1;
/** A string of digits in the JSON; the value is BigInt(digits). */
export const FIX_BIGINT = 2;
