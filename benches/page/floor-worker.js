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
  if (IDB_OPS[data.op]) return IDB_OPS[data.op](data);
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

// The floors of IndexedDB storage: `idbWrite` puts the received bytes as
// one value in a readwrite transaction with `durability: 'strict'` (what a
// durable commit must wait for) and answers when it completes; `idbRead`
// gets them back and transfers them. `idbWriteFile` streams a File into
// IndexedDB as 4 MiB values, one strict transaction per 64 MiB, and
// `idbStreamOut` reads them back, each value transferred to the page.
let idb;
const request = (r) =>
  new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
const done = (tx) =>
  new Promise((resolve, reject) => {
    tx.oncomplete = resolve;
    tx.onerror = tx.onabort = () => reject(tx.error);
  });
function store() {
  idb ??= (() => {
    const r = indexedDB.open('floor', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('bytes');
    return request(r);
  })();
  return idb;
}
const IDB_OPS = {
  async idbWrite({ bytes }) {
    const tx = (await store()).transaction('bytes', 'readwrite', { durability: 'strict' });
    tx.objectStore('bytes').put(bytes, 0);
    await done(tx);
    self.postMessage({ ok: true });
  },
  async idbRead() {
    const out = await request((await store()).transaction('bytes').objectStore('bytes').get(0));
    self.postMessage(out, [out.buffer]);
  },
  async idbWriteFile({ file }) {
    const db = await store();
    const CHUNK = 4 << 20;
    const PER_TX = 16;
    let pending = [];
    let key = 0;
    let at = 0;
    const commit = async () => {
      const tx = db.transaction('bytes', 'readwrite', { durability: 'strict' });
      for (const c of pending) tx.objectStore('bytes').put(c, key++);
      pending = [];
      await done(tx);
    };
    let chunk = new Uint8Array(CHUNK);
    let fill = 0;
    for await (const piece of file.stream()) {
      for (let from = 0; from < piece.length; ) {
        const n = Math.min(piece.length - from, CHUNK - fill);
        chunk.set(piece.subarray(from, from + n), fill);
        fill += n;
        from += n;
        at += n;
        if (fill === CHUNK) {
          pending.push(chunk);
          chunk = new Uint8Array(CHUNK);
          fill = 0;
          if (pending.length === PER_TX) await commit();
        }
      }
    }
    if (fill) pending.push(chunk.slice(0, fill));
    if (pending.length) await commit();
    self.postMessage({ written: at });
  },
  async idbStreamOut() {
    const db = await store();
    const count = await request(db.transaction('bytes').objectStore('bytes').count());
    let size = 0;
    for (let k = 0; k < count; k++) {
      const out = await request(db.transaction('bytes').objectStore('bytes').get(k));
      size += out.byteLength;
      self.postMessage({ chunk: out }, [out.buffer]);
    }
    self.postMessage({ done: size });
  },
  async idbDrop() {
    const db = await store();
    const tx = db.transaction('bytes', 'readwrite');
    tx.objectStore('bytes').clear();
    await done(tx);
    self.postMessage({ ok: true });
  },
};
