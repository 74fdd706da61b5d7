// The request loop every peer worker shares: requests `{id, op, ...}` are
// handled one at a time, in order; replies are `{id, value}` or `{id, error}`.

// Transfer the BLOB buffers of a reply (they are fresh copies, owned by nobody).
function transferables(value) {
  const out = [];
  if (Array.isArray(value)) {
    for (const row of value) {
      for (const k in row) {
        const v = row[k];
        if (v instanceof Uint8Array && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) out.push(v.buffer);
      }
    }
  }
  return out;
}

/** Answers requests with `ops[op](request)`. */
export function serve(ops) {
  let queue = Promise.resolve();
  self.onmessage = ({ data }) => {
    queue = queue.then(async () => {
      try {
        if (!Object.hasOwn(ops, data.op)) throw new Error(`unknown op ${data.op}`);
        const value = await ops[data.op](data);
        self.postMessage({ id: data.id, value }, transferables(value));
      } catch (e) {
        self.postMessage({ id: data.id, error: String(e?.message ?? e) });
      }
    });
  };
}
