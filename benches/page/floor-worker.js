// The physical floor of a durable BLOB write and read: one raw OPFS
// SyncAccessHandle, no database. `write` stores the received bytes and
// flushes; `read` reads `size` bytes into a fresh buffer and transfers it.
// For files too large for one buffer: `append` writes a chunk at `at`,
// `flush` flushes, `readAt` reads `size` bytes at `at` and transfers them.
const handle = navigator.storage
  .getDirectory()
  .then((dir) => dir.getFileHandle('floor.bin', { create: true }))
  .then((file) => file.createSyncAccessHandle());

self.onmessage = async ({ data }) => {
  const h = await handle;
  if (data.op === 'write') {
    h.write(data.bytes, { at: 0 });
    h.truncate(data.bytes.byteLength);
    h.flush();
    self.postMessage({ ok: true });
  } else if (data.op === 'append') {
    // A chunk written at `at`, no flush: what staging a chunk must do at least.
    h.write(data.bytes, { at: data.at });
    self.postMessage({ ok: true });
  } else if (data.op === 'read') {
    const out = new Uint8Array(data.size);
    h.read(out, { at: 0 });
    self.postMessage(out, [out.buffer]);
  } else if (data.op === 'flush') {
    h.flush();
    self.postMessage({ ok: true });
  } else if (data.op === 'readAt') {
    const out = new Uint8Array(data.size);
    h.read(out, { at: data.at });
    self.postMessage(out, [out.buffer]);
  } else if (data.op === 'close') {
    h.close();
    self.postMessage({ ok: true });
  }
};
