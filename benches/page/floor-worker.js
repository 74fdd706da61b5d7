// The physical floor of a durable BLOB write and read: one raw OPFS
// SyncAccessHandle, no database. `write` stores the received bytes and
// flushes; `read` reads `size` bytes into a fresh buffer and transfers it.
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
  } else if (data.op === 'close') {
    h.close();
    self.postMessage({ ok: true });
  }
};
