// The worker entry (`resq-wasm/worker`): loads the wasm, owns the one
// connection, and answers its callers' requests in the order they arrive
// (worker/queue.ts). The page never loads the wasm; only this file does.
//
// Callers (worker/callers.ts): the page that started this worker, and the
// tabs that follow it, each through a MessagePort the page hands over (see
// link.ts). While one caller has a transaction open, the others' requests
// wait, so transactions from different tabs never interleave.

import init, { Sealer } from './wasm/resq_wasm.js';
import { keyProof, sameProof, unholdKey } from './keyproof.js';
import type { Attach, Expired, Hello, KeyProof, KeyVerdict, Replies, Requests, Storage } from './protocol.js';
import { caller, type Caller } from './worker/callers.js';
import { IdbFiles } from './worker/idb.js';
import { cipher, closeReader, db, openEngine, reader, refusal, type Engine } from './worker/engine.js';
import { discardStage } from './worker/feed.js';
import { rerunWatches, unwatchAll } from './worker/live.js';
import { handle, handleRead, isRequest, type Context } from './worker/ops.js';
import { Queue, READS } from './worker/queue.js';
import { StageSpace } from './worker/stage.js';

/** The parts of DedicatedWorkerGlobalScope used here (the DOM lib lacks it). */
interface WorkerScope {
  /** As the page named it (link.ts). */
  readonly name: string;
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
  close(): void;
  /** Set by the wasm's panic hook just before it traps. */
  __resqPanic?: string;
}

const scope = self as unknown as WorkerScope;

/** The page's caller; its tab id and timeout come with `open`. */
const pageCaller = caller(true, '', (m, t = []) => scope.postMessage(m, t));

/** The following tabs' callers. */
const followers = new Set<Caller>();

// The wasm loads from the start, while the page's `open` is on its way and
// the worker takes its lock (benches/experiments/008-eager-wasm.md); `open`
// reports a failure.
const ready = cipher ? init({ module_or_path: new URL('./wasm/resq_wasm_cipher_bg.wasm', import.meta.url) }) : init();
ready.catch(() => {});

const queue: Queue = new Queue(
  {
    run: (from, req) => handle(from, req, context, open),
    read: (from, req) => {
      if (READS.get(req.op) === 'snapshot') return db.conn && handleRead(from, req, db.conn);
      const r = reader();
      // Its read handle goes with the request: nothing it keeps holds a
      // snapshot, or a checkpoint, until the next.
      return r && handleRead(from, req, r).finally(() => r.endRead());
    },
    leave: cleanUp,
    rerunBeside: () => {
      const r = reader();
      if (r && db.conn) rerunWatches(db.conn, r);
    },
    idle: () => {
      if (db.conn) rerunWatches(db.conn);
      clearTimeout(idleCheckpoint);
      idleCheckpoint = setTimeout(() => {
        if (queue.quiet() && db.conn?.walPending()) queue.checkpoint();
      }, IDLE_CHECKPOINT_MS);
    },
    expired: (owner) => {
      try {
        owner.post({ expired: true } satisfies Expired);
      } catch {
        // A tab that is going away.
      }
    },
    die,
    checkpointDue: () => tried((conn) => conn.checkpointDue()),
    checkpoint: () => tried((conn) => conn.checkpoint()),
  },
  () => db.conn,
);

/**
 * Checkpoints: SQLite's automatic one is off (src/worker/hooks.rs). The
 * queue copies the WAL into the database file, in slices with reads beside
 * them, after the request whose commit took the WAL past its bound, and
 * once it has been quiet for IDLE_CHECKPOINT_MS: no call waits for a
 * checkpoint, and the WAL stays bounded. Best effort: one that fails is
 * tried again at the next turn.
 */
const IDLE_CHECKPOINT_MS = 250;
let idleCheckpoint: ReturnType<typeof setTimeout> | undefined;

function tried(step: (conn: Engine) => boolean): boolean {
  const conn = db.conn;
  try {
    return conn !== null && step(conn);
  } catch {
    return false;
  }
}

const context: Context = {
  queue,
  // A following tab's close is its leaving: once the close is answered,
  // what it made here goes, and so do its port and the wait on its lock.
  left: leaveAfter,
  closed() {
    for (const f of followers) f.post({ closing: true });
  },
  // They proved the old key, if any: each is told (its link fails with
  // RESQ_BAD_KEY) and let go; the tab that changed it carries on.
  rekeyed(from) {
    for (const f of [...followers]) {
      if (f === from) continue;
      f.post({ rekeyed: true });
      depart(f);
    }
    if (from !== pageCaller) pageCaller.post({ rekeyed: true });
  },
};

scope.onmessage = (e: MessageEvent<unknown>) => {
  const msg = e.data;
  if (isAttach(msg) && e.ports[0]) return attach(e.ports[0], msg.attach);
  // Anything else was not sent by the page's client (anyone holding the
  // Worker can post to it): there is no id to answer and nothing to run.
  if (isRequest(msg)) queue.enqueue(pageCaller, msg);
};

const isAttach = (v: unknown): v is Attach => typeof v === 'object' && v !== null && typeof (v as Attach).attach === 'string';

/** A following tab's port: its requests join the queue; it leaves when `lock` (its tab's) is freed, or by closing. */
function attach(port: MessagePort, lock: string): void {
  const stop = new AbortController();
  const c = caller(
    false,
    lock,
    (m, t = []) => port.postMessage(m, t),
    () => {
      stop.abort();
      port.onmessage = null;
      port.close();
    },
  );
  followers.add(c);
  const take = (e: MessageEvent<unknown>) => {
    if (isRequest(e.data) && !c.gone) queue.enqueue(c, e.data);
  };
  navigator.locks.request(lock, { signal: stop.signal }, () => depart(c)).catch(() => {});
  if (db.closedByPage) return c.post({ closing: true });
  const key = db.key;
  if (!key) {
    port.onmessage = take;
    return c.post({ hello: true, encrypted: false, storage: storageOf() } satisfies Hello);
  }
  // Encrypted: nothing from this tab runs until it proves the key.
  const challenge = crypto.getRandomValues(new Uint8Array(32));
  port.onmessage = async (e: MessageEvent<unknown>) => {
    port.onmessage = null;
    const proof = (e.data as KeyProof | null)?.proof;
    const ok = proof instanceof Uint8Array && sameProof(proof, await keyProof(key, challenge));
    if (c.gone) return;
    c.post({ keyOk: ok } satisfies KeyVerdict);
    if (!ok) return depart(c);
    port.onmessage = take;
  };
  c.post({ hello: true, encrypted: true, challenge, storage: storageOf() } satisfies Hello);
}

/** A following tab's tab is gone: its queued requests are dropped, and what it made here goes. */
function depart(c: Caller): void {
  if (c.gone) return;
  queue.drop(c);
  leaveAfter(c);
}

/** `c` leaves once its queued requests have run: later ones are not taken. */
function leaveAfter(c: Caller): void {
  c.gone = true;
  followers.delete(c);
  queue.enqueue(c, { op: 'leave' });
}

/** Runs in the queue's turn for a caller that left. */
async function cleanUp(c: Caller): Promise<void> {
  c.detach();
  const conn = db.conn;
  if (!conn) return;
  if (queue.exporting?.from === c) queue.endExport();
  if (queue.owner === c) queue.rollBack();
  conn.blobStreamsClose(c.tab);
  for (const id of [...c.stages]) await discardStage(c, id);
  unwatchAll(c);
  // Its calls will not be sent again: their record goes.
  conn.callsForget(c.tab);
}

// One database per worker, opened once, by its page: a second open would
// replace the connection under its callers, or wait forever for a lock it
// holds.
let opened = false;

/** Where the open database lives. */
const storageOf = (): Storage => (db.conn?.storage() ?? 'memory') as Storage;

async function open(req: Requests['open'], from: Caller): Promise<Replies['open']> {
  if (opened || !from.page) throw refusal('RESQ_BAD_PARAM', 'this worker has opened its database already');
  opened = true;
  pageCaller.tab = typeof req.tab === 'string' ? req.tab : '';
  if (typeof req.timeout === 'number') pageCaller.timeout = req.timeout;
  // Held until this worker ends: the page waits on it to learn of an end
  // nothing else reports.
  await new Promise<void>((held) => {
    const locks = (navigator as { locks?: LockManager }).locks;
    if (!locks) return held();
    locks.request(req.lock, () => {
      held();
      return new Promise(() => {});
    });
  });
  // Whether the name has files in IndexedDB, read while the wasm loads
  // (every file name: it decides where the name lives, worker/idb.ts).
  let files = req.storage === 'memory' ? null : loadIdb(req.name);
  try {
    await ready;
  } catch (err) {
    throw refusal('RESQ_UNSUPPORTED', `could not load the SQLite wasm: ${String(err)}`);
  }
  // The key in its one form (keyproof.ts), as the core opens it and
  // following tabs prove it.
  const key = req.heldKey ? await unholdKey(req.heldKey) : undefined;
  db.conn = await openPatiently(req, key, () => {
    const loaded = files;
    files = null;
    return loaded ?? (req.storage === 'memory' ? Promise.resolve(null) : loadIdb(req.name));
  });
  db.key = key ?? null;
  db.reload = async () => {
    closeReader();
    db.conn?.close();
    db.idb?.close();
    db.idb = null;
    db.conn = await openPatiently(req, key, () => loadIdb(req.name));
  };
  // A persistent database's stage directory is named after it (one worker
  // holds it). Memory databases of one name can be open in several tabs at
  // once, so each worker gets a directory of its own.
  const storage = storageOf();
  const dir = storage === 'memory' ? `memory-${crypto.randomUUID()}` : `${storage}-${encodeURIComponent(req.name)}`;
  // The wasm with ciphers seals what spills, each staged value under a key of its own.
  db.stages = new StageSpace(dir, cipher ? () => new Sealer(crypto.getRandomValues(new Uint8Array(32))) : null);
  await db.stages.claim();
  await forgetGoneTabs();
  return { storage };
}

/** The recorded calls of tabs that are gone (no one holds their lock) will never be sent again. */
async function forgetGoneTabs(): Promise<void> {
  const locks = (navigator as { locks?: LockManager }).locks;
  if (!locks?.query || !db.conn) return;
  const { held = [] } = await locks.query();
  db.conn.callsKeep(held.map((l) => l.name ?? '').filter((n) => n.startsWith('resq-wasm-tab:')));
}

/**
 * The file's access handles can still be held for a moment by the worker of
 * a page that just reloaded or closed, or of the tab that led before: that
 * is retried, with backoff, for up to OPEN_PATIENCE_MS; then RESQ_LOCKED
 * (a holder that does not cooperate). With `encrypt` (a `rekey(key)` of a
 * plain database that the worker without ciphers handed on: see
 * worker/ops.ts), the core encrypts the file under `key` as it opens it,
 * or opens it with `key` if it finds it encrypted already.
 */
async function openPatiently(req: Requests['open'], key: Uint8Array | undefined, load: () => Promise<IdbFiles | null>) {
  const start = performance.now();
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    try {
      // The name's files in IndexedDB, loaded again each try (idb.ts): the
      // core places the name (OPFS or IndexedDB) and opens it there.
      const idb = await load();
      // A name with files here opens here, and may write as it opens (a
      // journal mode set): know how to store before that.
      if (idb && idb.files.length > 0) await idb.placed();
      try {
        const conn = await openEngine(req.name, req.storage, req.blobTransferThreshold, key, req.encrypt === true, idb ?? undefined);
        if (conn.storage() === 'idb' && idb) {
          // A new database: nothing was stored as it opened.
          await idb.placed();
          db.idb = idb;
        } else idb?.close();
        return conn;
      } catch (err) {
        idb?.close();
        throw err;
      }
    } catch (err) {
      const locked = (err as { code?: string })?.code === 'RESQ_LOCKED';
      if (!locked || performance.now() - start + wait > OPEN_PATIENCE_MS) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
const OPEN_PATIENCE_MS = 5000;

/** The name's files in IndexedDB, or null where this browser has no IndexedDB in a worker. */
function loadIdb(name: string): Promise<IdbFiles | null> {
  if (typeof indexedDB === 'undefined') return Promise.resolve(null);
  return IdbFiles.open(name);
}

/** The wasm instance trapped (a Rust panic), or the worker cannot answer: it cannot be trusted again. */
function die(err: unknown): void {
  try {
    scope.postMessage({ fatal: scope.__resqPanic ?? String(err) });
  } finally {
    scope.close();
  }
}
