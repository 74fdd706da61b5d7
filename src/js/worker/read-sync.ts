// Reads a Blob's bytes synchronously, as only a dedicated worker can
// (`FileReaderSync`, in every engine; the DOM lib leaves it out): the
// IndexedDB storage's segments and the temp files kept as Blobs.

declare const FileReaderSync: { new (): { readAsArrayBuffer(blob: Blob): ArrayBuffer } };

let reader: { readAsArrayBuffer(blob: Blob): ArrayBuffer } | null = null;

/** Whether this worker reads Blobs synchronously: not in Node's worker_threads. */
export const readsSync = (): boolean => typeof FileReaderSync === 'function';

/** `blob`'s bytes, read at once. */
export function readSync(blob: Blob): ArrayBuffer {
  reader ??= new FileReaderSync();
  return reader.readAsArrayBuffer(blob);
}
