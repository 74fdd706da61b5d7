// A test worker: the package's own worker, imported unchanged, plus probes
// the tests drive over a BroadcastChannel. `start({ probe })` in harness.mjs
// installs it in the test app in place of `resq-wasm/pkg/worker.js` (moving
// the real one to worker-real.js), so the package carries no test hooks.
// The harness prepends `const PROBE_OPTIONS = {...}`:
//   noOpfs: this worker sees no origin private file system.
//   opfsFails: (a DOMException name) this worker's getDirectory() rejects
//           with it, as Safari's can once (UnknownError), transiently.
//   noSyncHandles: this worker's OPFS has files but no sync access handles,
//           as WebKitGTK's (createSyncAccessHandle rejects as it does there).
//   record: log every write, truncate and flush that reaches an OPFS sync
//           access handle, with its bytes (for the power-loss simulation).
//   recordIdb: log every readwrite IndexedDB transaction of the package's
//           store that completes, with its puts and deletes in the order
//           they were made (the power-loss simulation of IndexedDB storage).
//
// Probes, asked with { probe, worker: <the worker's name>, id }:
//   memory         the wasm instance's memory in bytes
//   written        bytes written to OPFS sync access handles by this worker
//   read           bytes read from OPFS sync access handles by this worker
//   readSync       bytes of Blobs read synchronously (FileReaderSync) by
//                  this worker: IndexedDB storage's segments
//   opfsCalls      reads, writes and flushes made on OPFS sync access
//                  handles by this worker, and the ms spent in each kind
//   trapNextQuery  the next db.query() makes the wasm trap for real (a call
//                  into the instance with a pointer outside its memory)
//   failNextReply  the next reply cannot be posted (postMessage throws)
//   mark           (with `value`) puts ['m', value] in the record
//   log            the record so far (see `log` below)
//   watchRuns      live-query runs so far (calls of Connection.watchQuery)
//   watches        watches registered and not unregistered, by any caller
//                  (watch requests not followed by their unwatch)
//   dieBeforeReply the next answer to a following tab (on a MessagePort) is
//                  never sent: the worker ends right there, after the call
//                  ran (and committed), as a leader tab that crashes between
//                  the two would
//   lockWaits      Web Lock requests of this worker still waiting (one per
//                  following tab it waits on to leave)
//   batchBytes     the most bytes of Blobs read (Blob.arrayBuffer) before a
//                  call of Connection.executeBatch, since the one before
//   recordCalls    (with `value`, a boolean) whether following tabs' calls
//                  reach the worker numbered, and so have their writes
//                  recorded (benches/follower-cost.mjs times both)
//   emptyTransactions IndexedDB transactions this worker started with no
//                  request in them (see `emptyTransactions` below)
//   heldPorts      ports of following tabs handed to this worker that it
//                  has not closed
//   freezeAt       (with `value`, a count n) the n-th write to an OPFS sync
//                  access handle from now is never made: the worker says
//                  { frozen: <its database's name> } on the channel, then
//                  stands still in a busy loop, so that a crash of its
//                  renderer lands at that write whatever the machine's load
//                  (or posted to the Worker first: see `probeFreezeAt` below)
//   freezeAfter    (with `value`, a byte count) as freezeAt, at the first
//                  write once this worker has written that many more bytes
//                  to OPFS sync access handles
//   trace          (with `value`, a boolean) starts (true) or ends (false)
//                  a trace of the tabs' calls, and answers the one so far:
//                  ['in', op, id] as a request reached the worker, ['out',
//                  id] as its reply left, in the order they did

/* global PROBE_OPTIONS */
// A static import: the real worker sets its onmessage before any message
// arrives (a top-level await here would let the first one be lost).
import './worker-real.js';

if (PROBE_OPTIONS.noOpfs) delete StorageManager.prototype.getDirectory;
if (PROBE_OPTIONS.opfsFails) {
  StorageManager.prototype.getDirectory = () =>
    Promise.reject(new DOMException('The operation failed for an unknown transient reason', PROBE_OPTIONS.opfsFails));
}
if (PROBE_OPTIONS.noSyncHandles) {
  FileSystemFileHandle.prototype.createSyncAccessHandle = () =>
    Promise.reject(new DOMException('Backend does not support this operation', 'NotSupportedError'));
}

let written = 0;
let read = 0;
/** `freezeAt`: writes left before the one the worker stops at (0: none). */
let freezeIn = 0;
/** `freezeAfter`: the bytes written (`written`) at which the worker stops at its next write (null: none). */
let freezeFrom = null;
/** Stops this worker where it is, after saying so: its renderer is about to be crashed. */
const freeze = () => {
  channel.postMessage({ frozen: database(self.name) });
  for (;;) {
    // Stands still: no more of this worker's code runs.
  }
};
/** `opfsCalls`: calls of each kind made on OPFS sync access handles, and the ms spent in them. */
const calls = { reads: 0, writes: 0, flushes: 0, readMs: 0, writeMs: 0, flushMs: 0 };
const timed = (count, ms, fn) => {
  const t0 = performance.now();
  try {
    return fn();
  } finally {
    calls[count]++;
    calls[ms] += performance.now() - t0;
  }
};
/**
 * With `record`: [op, handle, ...] in the order they reached OPFS —
 * ['w', h, at, bytes] a write, ['t', h, size] a truncate, ['f', h] a flush,
 * ['m', n] a mark the page set (see `mark` below). Handles are numbered as
 * first seen; offsets are physical (the pool's 4096-byte header included).
 */
const log = [];
const handles = new WeakMap();
let nextHandle = 0;
const SyncHandle = globalThis.FileSystemSyncAccessHandle;
if (SyncHandle) {
  const { write, truncate, flush, read: readAt } = SyncHandle.prototype;
  SyncHandle.prototype.read = function (buffer, options) {
    const n = timed('reads', 'readMs', () => readAt.call(this, buffer, options));
    read += n;
    return n;
  };
  const handle = (h) => {
    if (!handles.has(h)) handles.set(h, nextHandle++);
    return handles.get(h);
  };
  SyncHandle.prototype.write = function (buffer, options) {
    if ((freezeIn > 0 && --freezeIn === 0) || (freezeFrom !== null && written >= freezeFrom)) freeze();
    const n = timed('writes', 'writeMs', () => write.call(this, buffer, options));
    written += n;
    if (PROBE_OPTIONS.record) {
      const view = ArrayBuffer.isView(buffer) ? new Uint8Array(buffer.buffer, buffer.byteOffset, n) : new Uint8Array(buffer, 0, n);
      log.push(['w', handle(this), options?.at ?? 0, view.slice()]);
    }
    return n;
  };
  SyncHandle.prototype.truncate = function (size) {
    const r = truncate.call(this, size);
    if (PROBE_OPTIONS.record) log.push(['t', handle(this), size]);
    return r;
  };
  SyncHandle.prototype.flush = function () {
    const r = timed('flushes', 'flushMs', () => flush.call(this));
    if (PROBE_OPTIONS.record) log.push(['f', handle(this)]);
    return r;
  };
}

/**
 * With `recordIdb`: ['x', ops] for each readwrite transaction on the
 * package's IndexedDB database that completed, in the order they completed
 * (IndexedDB's order of commits), each op [store, 'put', key, value] or
 * [store, 'delete', key or { lower, upper }]. Values are copies (a Blob is
 * immutable: kept as it is). A transaction that aborts is not in the record:
 * none of it was stored.
 */
if (PROBE_OPTIONS.recordIdb) {
  const ops = new WeakMap();
  const { transaction } = IDBDatabase.prototype;
  IDBDatabase.prototype.transaction = function (stores, mode, options) {
    const tx = transaction.call(this, stores, mode, options);
    if (mode === 'readwrite' && this.name === 'resq-wasm') {
      const list = [];
      ops.set(tx, list);
      // Registered before the package's own oncomplete, so the record has
      // the transaction before the call it made durable is answered.
      tx.addEventListener('complete', () => log.push(['x', list]));
    }
    return tx;
  };
  const copy = (v) => (v instanceof Blob ? v : structuredClone(v));
  const { put, delete: remove } = IDBObjectStore.prototype;
  IDBObjectStore.prototype.put = function (value, key) {
    const r = put.call(this, value, key);
    ops.get(this.transaction)?.push([this.name, 'put', key, copy(value)]);
    return r;
  };
  IDBObjectStore.prototype.delete = function (key) {
    const r = remove.call(this, key);
    const k = key instanceof IDBKeyRange ? { lower: key.lower, upper: key.upper } : key;
    ops.get(this.transaction)?.push([this.name, 'delete', k]);
    return r;
  };
}

/**
 * `emptyTransactions`: IndexedDB transactions this worker started on the
 * package's database that ended with no request made in them. In
 * WebKitGTK, one the worker starts just before it ends can stay open for
 * good, and every other tab's transaction on its stores waits behind it.
 */
let emptyTransactions = 0;
{
  const used = new WeakSet();
  const { transaction } = IDBDatabase.prototype;
  IDBDatabase.prototype.transaction = function (...args) {
    const tx = transaction.apply(this, args);
    if (this.name === 'resq-wasm') {
      const ended = () => {
        if (!used.has(tx)) emptyTransactions++;
      };
      tx.addEventListener('complete', ended);
      tx.addEventListener('abort', ended);
    }
    return tx;
  };
  const requests = ['get', 'getAll', 'getAllKeys', 'getKey', 'put', 'add', 'delete', 'clear', 'count', 'openCursor', 'openKeyCursor'];
  for (const method of requests) {
    const made = IDBObjectStore.prototype[method];
    IDBObjectStore.prototype[method] = function (...args) {
      used.add(this.transaction);
      return made.apply(this, args);
    };
  }
}

/** `trace`: the tabs' requests and replies, while one is asked for. */
let trace = null;
const traceIn = (data) => {
  if (trace && typeof data?.op === 'string') trace.push(['in', data.op, data.id]);
};
const traceOut = (message) => {
  if (trace && message && 'ok' in message) trace.push(['out', message.id]);
};

// dieBeforeReply: the worker ends instead of answering, and says nothing after.
let dieBeforeReply = false;
let ended = false;
const portPost = MessagePort.prototype.postMessage;
MessagePort.prototype.postMessage = function (message, transfer) {
  if (ended) return;
  if (dieBeforeReply && message && 'ok' in message) {
    ended = true;
    self.close();
    return;
  }
  traceOut(message);
  return portPost.call(this, message, transfer);
};

// heldPorts: the ports that came with `attach` messages, until closed.
const ports = new Set();
const close = MessagePort.prototype.close;
MessagePort.prototype.close = function () {
  ports.delete(this);
  return close.call(this);
};
let recordCalls = true;
/** `watches`: each caller's watch requests ("<caller>:<watch id>") not followed by their unwatch yet. */
const liveWatches = new Set();
let nextCaller = 1;
const countWatch = (caller, data) => {
  if (data?.op === 'watch') liveWatches.add(`${caller}:${data.watch}`);
  else if (data?.op === 'unwatch') liveWatches.delete(`${caller}:${data.watch}`);
};
const onmessage = self.onmessage;
self.onmessage = (e) => {
  // `freezeAt` for a worker that starts work the moment it opens (the one
  // with ciphers that a plain database's rekey(key) moves to): the page
  // posts { probeFreezeAt: n } as it makes the Worker, ahead of any
  // message of the package's, and it counts from the worker's first write.
  if (typeof e.data?.probeFreezeAt === 'number') {
    freezeIn = e.data.probeFreezeAt;
    return;
  }
  traceIn(e.data);
  const port = e.data && typeof e.data.attach === 'string' ? e.ports[0] : null;
  if (port) ports.add(port);
  else countWatch(0, e.data);
  const r = onmessage(e);
  // The worker set the port's handler just now: without `recordCalls`,
  // requests lose their numbers before it sees them.
  const real = port?.onmessage;
  const caller = nextCaller++;
  if (real)
    port.onmessage = (m) => {
      traceIn(m.data);
      countWatch(caller, m.data);
      return real(
        recordCalls || !m.data || typeof m.data !== 'object'
          ? m
          : { data: { ...m.data, seq: undefined, below: undefined }, ports: m.ports },
      );
    };
  return r;
};

// lockWaits: requests made with a callback that has not run yet.
let lockWaits = 0;
const request = LockManager.prototype.request;
LockManager.prototype.request = function (name, ...rest) {
  const callback = rest.at(-1);
  lockWaits += 1;
  let counted = true;
  const uncount = () => {
    if (counted) lockWaits -= 1;
    counted = false;
  };
  const wrapped = (lock) => {
    uncount();
    return callback(lock);
  };
  const p = request.call(this, name, ...rest.slice(0, -1), wrapped);
  p.catch(() => {}).finally(uncount);
  return p;
};

let failNextReply = false;
const post = self.postMessage.bind(self);
self.postMessage = (message, transfer) => {
  if (ended) return;
  if (failNextReply && message && 'ok' in message && message.ok) {
    failNextReply = false;
    throw new DOMException('the probe refused to post this reply', 'DataCloneError');
  }
  traceOut(message);
  return post(message, transfer);
};

// The wasm instance, taken as the worker's glue instantiates it: the glue
// fetches the wasm first, and that fetch resolves only after this module
// has run, so the hooks below are in place by then (whether the glue is a
// module of its own or bundled into the worker). Two exports are wrapped:
// the glue's `wasm` object is the copy made here.
let exports = null;
let trapNextQuery = false;
let readSince = 0;
let batchBytes = 0;
let readSync = 0;
if (globalThis.FileReaderSync) {
  const { readAsArrayBuffer } = FileReaderSync.prototype;
  FileReaderSync.prototype.readAsArrayBuffer = function (blob) {
    readSync += blob.size;
    return readAsArrayBuffer.call(this, blob);
  };
}
const arrayBuffer = Blob.prototype.arrayBuffer;
Blob.prototype.arrayBuffer = function () {
  readSince += this.size;
  return arrayBuffer.call(this);
};
let watchRuns = 0;
const hooked = (real) => ({
  ...real,
  connection_query(...args) {
    if (trapNextQuery) {
      trapNextQuery = false;
      // `this` pointer far outside the instance's memory: a real
      // "memory access out of bounds" trap inside the wasm.
      real.connection_query(0xfffffff0, 0, 0, undefined);
    }
    return real.connection_query(...args);
  },
  connection_executeBatch(...args) {
    batchBytes = Math.max(batchBytes, readSince);
    readSince = 0;
    return real.connection_executeBatch(...args);
  },
  connection_watchQuery(...args) {
    watchRuns += 1;
    return real.connection_watchQuery(...args);
  },
});
const take = ({ instance, module }) => {
  if (exports) throw new Error('the probe worker saw a second wasm instance');
  exports = hooked(instance.exports);
  return { instance: { exports }, module };
};
const { instantiate, instantiateStreaming } = WebAssembly;
WebAssembly.instantiateStreaming = async (...args) => take(await instantiateStreaming(...args));
WebAssembly.instantiate = async (...args) => {
  const made = await instantiate(...args);
  return made instanceof WebAssembly.Instance ? made : take(made);
};

const channel = new BroadcastChannel('resq-wasm-probe');
// Asked by the database's name: the worker of an encrypted one is named
// 'resq-wasm, encrypted: <name>' (protocol.ts), a plain one's 'resq-wasm: <name>'.
const database = (worker) => String(worker).replace(/^resq-wasm(, encrypted)?: /, '');
channel.onmessage = ({ data }) => {
  if (database(data.worker) !== database(self.name)) return;
  // Asked only once the database is open, so the instance exists: without
  // one, the probe answers null, which no test takes for a figure.
  if (!exports) return channel.postMessage({ id: data.id, value: null });
  const answers = {
    memory: () => exports.memory.buffer.byteLength,
    written: () => written,
    read: () => read,
    readSync: () => readSync,
    opfsCalls: () => ({ ...calls }),
    trapNextQuery: () => (trapNextQuery = true),
    failNextReply: () => (failNextReply = true),
    mark: () => log.push(['m', data.value]),
    log: () => log,
    watchRuns: () => watchRuns,
    watches: () => liveWatches.size,
    dieBeforeReply: () => (dieBeforeReply = true),
    lockWaits: () => lockWaits,
    heldPorts: () => ports.size,
    recordCalls: () => (recordCalls = data.value),
    batchBytes: () => batchBytes,
    emptyTransactions: () => emptyTransactions,
    freezeAt: () => (freezeIn = data.value),
    freezeAfter: () => (freezeFrom = written + data.value),
    trace: () => {
      const so = trace ?? [];
      trace = data.value ? [] : null;
      return so;
    },
  };
  channel.postMessage({ id: data.id, value: answers[data.probe]() });
};
