// The page side of the peer workers: one small RPC client for the three peer
// engines the benchmarks put beside resq-wasm.
//
//   const db = await openPeer('wa-sqlite', 'bench');   // worker up, db open
//   await db.exec('CREATE TABLE t(x)');                 // { changes, lastInsertRowid }
//   await db.query('SELECT ? AS x', [1]);               // [{ x: 1 }]
//   await db.batch('INSERT INTO t VALUES (?)', [[1], [2]]); // { changes: 2 }
//   await db.close();                                   // worker terminated
//
// Protocol (the same for the three workers): request { id, op, ...args },
// reply { id, value } or { id, error: message }. Ops: open { name },
// exec { sql, params }, query { sql, params }, batch { sql, sets }, close.
// Params are positional arrays of null / number / string / Uint8Array, sent
// by structured clone. `settings` is what `open` reported: the effective
// journal_mode, synchronous (0-3), page_size, the VFS and SQLite's version.

const WORKERS = {
  'sqlite-wasm': 'sqlite-wasm-worker.js', // OPFS, opfs-sahpool VFS, oo1 API
  'wa-sqlite': 'wa-sqlite-worker.js', // OPFS, AccessHandlePoolVFS, sync build
  'wa-sqlite idb': 'wa-sqlite-worker.js?vfs=idb', // IndexedDB, IDBBatchAtomicVFS, Asyncify build
  'sql.js': 'sqljs-worker.js', // memory only
};

export const ENGINES = Object.keys(WORKERS);

export async function openPeer(engine, name) {
  const file = WORKERS[engine];
  if (!file) throw new Error(`unknown peer engine ${engine}: one of ${ENGINES.join(', ')}`);
  const worker = new Worker(new URL(file, import.meta.url), { type: 'module', name: engine });
  const pending = new Map();
  let nextId = 1;
  let dead = null;

  const fail = (error) => {
    dead ??= error;
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  };
  worker.onmessage = ({ data }) => {
    const call = pending.get(data.id);
    if (!call) return;
    pending.delete(data.id);
    if (data.error !== undefined) call.reject(new Error(`${engine}: ${data.error}`));
    else call.resolve(data.value);
  };
  worker.onerror = (e) => {
    e.preventDefault();
    fail(new Error(`${engine} worker failed: ${e.message || 'it did not load'}`));
    worker.terminate();
  };
  worker.onmessageerror = () => fail(new Error(`${engine}: a reply could not be deserialized`));

  const call = (op, args) =>
    dead
      ? Promise.reject(dead)
      : new Promise((resolve, reject) => {
          const id = nextId++;
          pending.set(id, { resolve, reject });
          worker.postMessage({ id, op, ...args });
        });

  let settings;
  try {
    settings = await call('open', { name });
  } catch (e) {
    worker.terminate();
    throw e;
  }
  return {
    engine,
    settings,
    exec: (sql, params) => call('exec', { sql, params }),
    query: (sql, params) => call('query', { sql, params }),
    batch: (sql, sets) => call('batch', { sql, sets }),
    /** Closes the database and ends the worker; `{ drop: true }` also deletes its files. */
    async close({ drop = false } = {}) {
      try {
        await call('close', { drop });
      } finally {
        worker.terminate();
        fail(new Error(`${engine}: closed`));
      }
    },
  };
}
