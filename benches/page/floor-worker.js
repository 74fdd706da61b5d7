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
  if (MEDIA_OPS[data.op]) return MEDIA_OPS[data.op](data);
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

// The floors of a media file: `writeFile` streams a File into its own OPFS
// file (chunks as the browser's reader gives them) and flushes;
// `streamOut` reads that file back in 1 MiB chunks, each in a fresh buffer
// transferred to the page, as a stream of a stored value would.
const files = new Map();
async function own(name) {
  if (!files.has(name)) {
    const dir = await navigator.storage.getDirectory();
    files.set(name, await (await dir.getFileHandle(name, { create: true })).createSyncAccessHandle());
  }
  return files.get(name);
}
const MEDIA_OPS = {
  async writeFile({ file }) {
    const h = await own('floor-file.bin');
    h.truncate(0);
    let at = 0;
    for await (const chunk of file.stream()) at += h.write(chunk, { at });
    h.flush();
    self.postMessage({ written: at });
  },
  async streamOut() {
    const h = await own('floor-file.bin');
    const size = h.getSize();
    for (let at = 0; at < size; at += 1 << 20) {
      const out = new Uint8Array(Math.min(1 << 20, size - at));
      h.read(out, { at });
      self.postMessage({ chunk: out }, [out.buffer]);
    }
    self.postMessage({ done: size });
  },
  async dropFile() {
    files.get('floor-file.bin')?.close();
    files.delete('floor-file.bin');
    await (await navigator.storage.getDirectory()).removeEntry('floor-file.bin').catch(() => {});
    self.postMessage({ ok: true });
  },
};
