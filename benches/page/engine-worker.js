// The engine without the transport: the same wasm and SQLite settings as the
// package, driven from inside a worker, so a benchmark can put "copy into
// the worker + one SQLite write on the same storage" beside the end-to-end
// figure. Times are measured here, in the worker, per call.
import init, { Connection } from '/pkg/wasm/resq_wasm.js';

let conn;
const time = (fn, n) => {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    out.push(performance.now() - t0);
  }
  return out;
};

self.onmessage = async ({ data }) => {
  if (data.op === 'open') {
    await init();
    conn = await Connection.open(data.name, 'opfs', 0);
    conn.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)', undefined);
    self.postMessage(true);
  } else if (data.op === 'insert') {
    self.postMessage(time(() => conn.execute('INSERT OR REPLACE INTO t(id, data) VALUES (1, ?)', [data.bytes]), data.n));
  } else if (data.op === 'select') {
    // `query` copies the value out of wasm memory into its own buffer.
    self.postMessage(time(() => conn.query('SELECT data FROM t WHERE id = 1', undefined), data.n));
  } else if (data.op === 'close') {
    conn.close();
    self.postMessage(true);
  }
};
