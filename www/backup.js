// Backup and restore: the whole database as one file, streamed both ways,
// never whole in memory. `db.export()` gives the file as a ReadableStream,
// and `importDatabase(name, source)` replaces the database with a file once
// it has checked all of it.
//
// To disk: where the browser has `showSaveFilePicker`, the stream is piped
// into the chosen file. Elsewhere the chunks become a Blob, folded in every
// 16 MB so that no more than that waits in page memory (the browser keeps a
// large Blob on disk), and an <a download> saves it.

import * as resq from 'resq-wasm';

const FOLD = 16 << 20;

/** What this build of the package offers; the panel says what is missing. */
export function backupSupport(db) {
  return { canExport: typeof db.export === 'function', canImport: typeof resq.importDatabase === 'function' };
}

/** A stream of `source`'s chunks, unchanged, that reports bytes seen so far. */
function counted(source, onBytes) {
  let seen = 0;
  return source.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        onBytes(seen);
        controller.enqueue(chunk);
      },
    }),
  );
}

/**
 * Asks where to save first (the picker needs the click's user activation),
 * then streams the export there. Resolves to the bytes written, or null
 * when the user cancelled the picker.
 */
export async function exportLibrary(db, { fileName, onBytes }) {
  let sink = null;
  if ('showSaveFilePicker' in window) {
    try {
      const handle = await window.showSaveFilePicker({
        suggestedName: fileName,
        types: [{ description: 'SQLite database', accept: { 'application/vnd.sqlite3': ['.db'] } }],
      });
      sink = await handle.createWritable();
    } catch (err) {
      if (err.name === 'AbortError') return null;
      throw err;
    }
  }
  let total = 0;
  const stream = counted(db.export(), (n) => onBytes((total = n)));
  if (sink) {
    await stream.pipeTo(sink);
    return total;
  }
  let blob = new Blob([]);
  let batch = [];
  let batchBytes = 0;
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    batch.push(value);
    batchBytes += value.byteLength;
    if (batchBytes >= FOLD) {
      blob = new Blob([blob, ...batch]);
      batch = [];
      batchBytes = 0;
    }
  }
  blob = new Blob([blob, ...batch], { type: 'application/vnd.sqlite3' });
  const url = URL.createObjectURL(blob);
  Object.assign(document.createElement('a'), { href: url, download: fileName }).click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000); // long after the download has begun

  return total;
}

/**
 * Replaces the database `name` with `file`, streamed through the page so
 * that the bar can follow it. Resolves once it is in place.
 */
export async function importLibrary(name, file, { onBytes }) {
  await resq.importDatabase(name, counted(file.stream(), onBytes));
}
