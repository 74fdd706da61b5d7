// Where a staged value's bytes go once they outgrow the worker's memory: a
// temporary OPFS file, written at the end and read anywhere; where the
// worker has no OPFS sync access handles, the browser's Blobs (blobFile),
// or in Node, which cannot read a Blob synchronously, the worker's memory.
// An encrypted
// database's worker seals that file (src/worker/seal.rs): blocks of
// SEAL_BLOCK bytes, each sealed once with ChaCha20-Poly1305 under a key of
// 32 random bytes that never leaves this worker, the last partial block
// kept in memory until it fills. Nothing of its plaintext reaches the disk.

import type { WireError } from '../protocol.js';
import { readSync, readsSync } from './read-sync.js';

/** The worker-only part of OPFS (the DOM lib lacks it). */
export interface FileSystemSyncAccessHandle {
  read(buffer: Uint8Array, options: { at: number }): number;
  write(buffer: Uint8Array, options: { at: number }): number;
  flush(): void;
  close(): void;
}

/** What seals a block (the wasm's `Sealer`). */
export interface Sealer {
  seal(block: number, bytes: Uint8Array): Uint8Array;
  unseal(block: number, sealed: Uint8Array): Uint8Array;
  free(): void;
}

/** Plaintext bytes per sealed block. */
export const SEAL_BLOCK = 64 << 10;
/** What a sealed block adds: its Poly1305 tag. */
const TAG = 16;

/** An append-only temp file. */
export interface Spill {
  append(bytes: Uint8Array, size: number): void;
  /** Fills `view` with the bytes at `at` (all within the file). */
  read(at: number, view: Uint8Array): void;
  close(): void;
}

/** Bytes a {@link blobFile} gathers in the worker's memory before they become one Blob. */
export const BLOB_PART = 4 << 20;

/**
 * An append-only temp file kept as the browser's Blobs, for a worker
 * without OPFS sync access handles (WebKit, private windows): bytes
 * gather in memory up to BLOB_PART, then become a Blob, which the browser
 * keeps outside the worker's heap (Chromium moves large ones to disk;
 * Firefox and WebKit keep them in memory). Read synchronously with
 * `FileReaderSync`, as the IndexedDB storage reads its segments.
 */
export function blobFile(): FileSystemSyncAccessHandle {
  const parts: Blob[] = [];
  let stored = 0;
  let pending: Uint8Array[] = [];
  let pendingSize = 0;
  let whole: Blob | null = null;
  const settle = () => {
    if (pendingSize > 0) {
      parts.push(new Blob(pending as BlobPart[]));
      stored += pendingSize;
      pending = [];
      pendingSize = 0;
      whole = null;
    }
    whole ??= new Blob(parts);
    return whole;
  };
  return {
    write(bytes, { at }) {
      if (at !== stored + pendingSize)
        throw new Error(`a temp file of Blobs is written at its end (${stored + pendingSize}), not at ${at}`);
      pending.push(bytes.slice());
      pendingSize += bytes.byteLength;
      if (pendingSize >= BLOB_PART) settle();
      return bytes.byteLength;
    },
    read(view, { at }) {
      const end = Math.min(at + view.byteLength, stored + pendingSize);
      if (end <= at) return 0;
      const bytes = new Uint8Array(readSync(settle().slice(at, end)));
      view.set(bytes);
      return bytes.byteLength;
    },
    flush() {},
    close() {
      parts.length = 0;
      pending = [];
      whole = null;
    },
  };
}

/**
 * An append-only temp file in the worker's own memory, for a worker that
 * cannot read a Blob synchronously: Node's (node-worker.ts), where the
 * package runs an app's unit tests and memory is the test process's.
 */
export function memoryFile(): FileSystemSyncAccessHandle {
  let chunks: Uint8Array[] = [];
  let size = 0;
  return {
    write(bytes, { at }) {
      if (at !== size) throw new Error(`a temp file in memory is written at its end (${size}), not at ${at}`);
      chunks.push(bytes.slice());
      size += bytes.byteLength;
      return bytes.byteLength;
    },
    read(view, { at }) {
      let n = 0;
      let start = 0;
      for (const chunk of chunks) {
        const from = at + n - start;
        if (n < view.byteLength && from >= 0 && from < chunk.byteLength) {
          const part = chunk.subarray(from, from + view.byteLength - n);
          view.set(part, n);
          n += part.byteLength;
        }
        start += chunk.byteLength;
      }
      return n;
    },
    flush() {},
    close() {
      chunks = [];
    },
  };
}

/** Temp space where there is no OPFS sync access handle: Blobs, or memory where they cannot be read back. */
export const spareFile = (): FileSystemSyncAccessHandle => (readsSync() ? blobFile() : memoryFile());

const unreadable = (): WireError => ({ code: 'RESQ_BAD_PARAM', message: 'the staged bytes could not be read back from their temp file' });

/** Writes all of `bytes` at `at`; a full disk is RESQ_QUOTA. */
function write(access: FileSystemSyncAccessHandle, bytes: Uint8Array, at: number): void {
  let n: number;
  try {
    n = access.write(bytes, { at });
  } catch (err) {
    if ((err as Error).name !== 'QuotaExceededError') throw err;
    n = -1;
  }
  if (n !== bytes.byteLength)
    throw { code: 'RESQ_QUOTA', message: "the staged chunk does not fit: the origin's storage is full" } satisfies WireError;
}

/** The bytes as they are. */
export function plainSpill(access: FileSystemSyncAccessHandle): Spill {
  return {
    append: (bytes, size) => write(access, bytes, size),
    read(at, view) {
      if (access.read(view, { at }) !== view.byteLength) throw unreadable();
    },
    close: () => access.close(),
  };
}

/** The bytes sealed a block at a time by `sealer` (which it frees on close). */
export function sealedSpill(access: FileSystemSyncAccessHandle, sealer: Sealer): Spill {
  /** Whole blocks in the file. */
  let blocks = 0;
  /** The block being filled, in memory. */
  const tail = new Uint8Array(SEAL_BLOCK);
  let tailSize = 0;
  const sealed = new Uint8Array(SEAL_BLOCK + TAG);
  // The block read last, unsealed: reads smaller than a block (an import's
  // pages) come in order, and each block is written once, never changed.
  let cached = -1;
  let cachedPlain: Uint8Array = new Uint8Array(0);
  return {
    append(bytes) {
      for (let from = 0; from < bytes.byteLength; ) {
        const n = Math.min(SEAL_BLOCK - tailSize, bytes.byteLength - from);
        tail.set(bytes.subarray(from, from + n), tailSize);
        tailSize += n;
        from += n;
        if (tailSize < SEAL_BLOCK) break;
        write(access, sealer.seal(blocks, tail), blocks * (SEAL_BLOCK + TAG));
        blocks += 1;
        tailSize = 0;
      }
    },
    read(at, view) {
      for (let filled = 0; filled < view.byteLength; ) {
        const block = Math.floor((at + filled) / SEAL_BLOCK);
        const from = at + filled - block * SEAL_BLOCK;
        let plain: Uint8Array;
        if (block === cached) {
          plain = cachedPlain;
        } else if (block < blocks) {
          if (access.read(sealed, { at: block * (SEAL_BLOCK + TAG) }) !== sealed.byteLength) throw unreadable();
          cachedPlain.fill(0);
          plain = cachedPlain = sealer.unseal(block, sealed);
          cached = block;
        } else {
          plain = tail.subarray(0, tailSize);
        }
        const n = Math.min(plain.byteLength - from, view.byteLength - filled);
        if (n <= 0) throw unreadable();
        view.set(plain.subarray(from, from + n), filled);
        filled += n;
      }
    },
    close() {
      access.close();
      sealer.free();
      tail.fill(0);
      cachedPlain.fill(0);
    },
  };
}
