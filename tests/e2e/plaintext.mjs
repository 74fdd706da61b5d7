// What the encryption tests look for on disk: a plaintext marker, counted in
// the raw OPFS files.

// A marker the tests store as TEXT and as BLOB bytes, and then look for in
// the raw files. Long and odd enough that no ciphertext holds it by chance.
export const MARKER = 'resq-plaintext-marker-7f3c9e21';

/**
 * Runs in the page: how many times the marker's bytes appear in every file
 * of database `name`'s pool (`.resq-wasm/<name>/`), or under the OPFS
 * directory `name` when it is an array of names from the root (such as
 * `['.resq-wasm-stage']`), with the files' sizes. Pass it to the page as
 * `rawScan.toString()`.
 */
export const rawScan = async (name, marker) => {
  const needle = new TextEncoder().encode(marker);
  const count = (b) => {
    let n = 0;
    for (let i = b.indexOf(needle[0]); i >= 0 && i <= b.length - needle.length; i = b.indexOf(needle[0], i + 1)) {
      let j = 1;
      while (j < needle.length && b[i + j] === needle[j]) j++;
      if (j === needle.length) n++;
    }
    return n;
  };
  let hits = 0;
  let bytes = 0;
  const walk = async (dir) => {
    for await (const [, entry] of dir.entries()) {
      if (entry.kind === 'directory') {
        await walk(entry);
        continue;
      }
      // A file the worker writes to between getFile() and the read (a
      // checkpoint, say) is NotReadableError: read it again as it is now.
      let b;
      for (let tries = 1; !b; tries++) {
        try {
          b = new Uint8Array(await (await entry.getFile()).arrayBuffer());
        } catch (e) {
          if (e.name !== 'NotReadableError' || tries === 5) throw e;
        }
      }
      bytes += b.length;
      hits += count(b);
    }
  };
  let dir = await navigator.storage.getDirectory();
  for (const part of Array.isArray(name) ? name : ['.resq-wasm', name]) dir = await dir.getDirectoryHandle(part);
  await walk(dir);
  return { hits, bytes };
};

/**
 * Runs in the page: as {@link rawScan}, but each file is read in a
 * dedicated worker of the test's own (not the package's) with a plain
 * `FileSystemSyncAccessHandle`, the way the package's own storage reads
 * OPFS. Only files no other handle holds can be opened so: call it after
 * `close()`. Pass it to the page as `workerScan.toString()`.
 */
export const workerScan = async (name, marker) => {
  const body = `
    onmessage = async ({ data: { name, marker } }) => {
      try {
        const needle = new TextEncoder().encode(marker);
        let hits = 0, bytes = 0, files = 0;
        const walk = async (dir) => {
          for await (const [, entry] of dir.entries()) {
            if (entry.kind === 'directory') { await walk(entry); continue; }
            const access = await entry.createSyncAccessHandle();
            try {
              const b = new Uint8Array(access.getSize());
              access.read(b, { at: 0 });
              files += 1;
              bytes += b.length;
              for (let i = b.indexOf(needle[0]); i >= 0 && i <= b.length - needle.length; i = b.indexOf(needle[0], i + 1)) {
                let j = 1;
                while (j < needle.length && b[i + j] === needle[j]) j++;
                if (j === needle.length) hits++;
              }
            } finally {
              access.close();
            }
          }
        };
        let dir = await navigator.storage.getDirectory();
        for (const part of Array.isArray(name) ? name : ['.resq-wasm', name]) dir = await dir.getDirectoryHandle(part);
        await walk(dir);
        postMessage({ hits, bytes, files });
      } catch (err) {
        postMessage({ error: String(err) });
      }
    };`;
  const worker = new Worker(URL.createObjectURL(new Blob([body], { type: 'text/javascript' })));
  try {
    const got = await new Promise((resolve) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.postMessage({ name, marker });
    });
    if (got.error) throw new Error(`the scanning worker failed: ${got.error}`);
    return got;
  } finally {
    worker.terminate();
  }
};
