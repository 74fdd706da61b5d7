// Reads a Blob's bytes synchronously, as only a dedicated worker can
// (`FileReaderSync`, in every engine; the DOM lib leaves it out): the
// IndexedDB storage's segments and the temp files kept as Blobs.

declare const FileReaderSync: { new (): { readAsArrayBuffer(blob: Blob): ArrayBuffer } };

let reader: { readAsArrayBuffer(blob: Blob): ArrayBuffer } | null = null;

/** `blob`'s bytes, read at once. */
export function readSync(blob: Blob): ArrayBuffer {
  reader ??= new FileReaderSync();
  return reader.readAsArrayBuffer(blob);
}
