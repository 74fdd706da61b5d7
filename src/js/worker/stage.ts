// Temp space for staged blobs (`stageBlob()`), inside the worker: a value
// built piece by piece stays out of the database until it is used as a
// parameter, and is then written into its row once (as a `Blob` parameter
// is). Bytes stay in memory up to STAGE_MEMORY_CAP, then go to a temporary
// OPFS file in this worker's stage directory (`.resq-wasm-stage/<dir>/`),
// or to the browser's Blobs where the worker has no OPFS sync access
// handles; sealed in the worker of an encrypted database (spill.ts).
//
// Each worker holds a Web Lock named after its stage directory for as long
// as it lives (the browser releases it when the worker ends, crash
// included). Opening any database removes the stage directories no live
// worker holds: what crashed sessions left behind, whatever their database.
//
// A failed append (an unreadable Blob, a full disk) leaves a staged blob
// unusable: appends the page sent after it, without waiting, would otherwise
// land after a gap. Its later appends and its use are refused until it is
// discarded.

import type { WireError } from '../protocol.js';
import { plainSpill, spareFile, sealedSpill, type FileSystemSyncAccessHandle, type Sealer, type Spill } from './spill.js';

type SyncFileHandle = FileSystemFileHandle & { createSyncAccessHandle(): Promise<FileSystemSyncAccessHandle> };

/** The Web Lock a live worker holds on its stage directory: this, then the directory's name. */
const LOCK_PREFIX = 'resq-wasm-stage:';

/** Bytes a staged blob keeps in the worker's memory before it spills to OPFS. */
export const STAGE_MEMORY_CAP = 4 << 20;

interface Stage {
  size: number;
  chunks: Uint8Array[];
  file?: SyncFileHandle;
  spill?: Spill;
  /** Why an append failed; the staged blob is unusable from then on. */
  failed?: string;
}

/**
 * The staged bytes where a `Blob` parameter is expected: the core takes only
 * a `Blob`'s size and identity, and the worker's stream writer reads the
 * bytes with {@link StagedSource.read}, straight from memory or the temp
 * file (no `File` snapshot to go through). Never leaves the worker.
 */
export class StagedSource extends Blob {
  readonly #size: number;
  readonly read: (at: number, into: Uint8Array) => Uint8Array;

  constructor(size: number, read: (at: number, into: Uint8Array) => Uint8Array) {
    super();
    this.#size = size;
    this.read = read;
  }

  override get size(): number {
    return this.#size;
  }
}

const bad = (message: string): WireError => ({ code: 'RESQ_BAD_PARAM', message });

export class StageSpace {
  #stages = new Map<number, Stage>();
  #nextId = 1;
  #dir: FileSystemDirectoryHandle | null = null;
  #dirName: string;
  /** False once OPFS has refused this worker a sync access handle: spills go to Blobs. */
  #opfs = true;

  /** Makes a sealer with a fresh key, for each staged value that spills; null: spills stay plain. */
  readonly #sealer: (() => Sealer) | null;

  /** Call {@link claim} before anything is staged. `sealer`: see {@link #sealer}. */
  constructor(dirName: string, sealer: (() => Sealer) | null) {
    this.#dirName = dirName;
    this.#sealer = sealer;
  }

  /**
   * Takes this worker's lock on its stage directory (held until the worker
   * ends), then removes its own leftovers and every stage directory no live
   * worker holds. Called at open.
   */
  async claim(): Promise<void> {
    const locks = (navigator as { locks?: LockManager }).locks;
    await new Promise<void>((held) => {
      if (!locks) return held();
      locks.request(LOCK_PREFIX + this.#dirName, { ifAvailable: true }, () => {
        held();
        return new Promise(() => {}); // never released: the worker's end releases it
      });
    });
    await this.#sweep().catch(() => {});
  }

  async #sweep(): Promise<void> {
    const root = await opfsRoot();
    if (!root) return;
    const top = await root.getDirectoryHandle('.resq-wasm-stage', { create: true });
    // Names first, locks second: a worker takes its lock before it makes
    // its directory, so every directory listed here that is in use shows
    // up as held below.
    const names: string[] = [];
    for await (const name of (top as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(name);
    const locks = (navigator as { locks?: LockManager }).locks;
    const held = locks ? new Set((await locks.query()).held?.map((l) => l.name)) : null;
    for (const name of names) {
      const orphan = held ? !held.has(LOCK_PREFIX + name) : false;
      if (orphan || name === this.#dirName) await top.removeEntry(name, { recursive: true }).catch(() => {});
    }
  }

  create(): number {
    const id = this.#nextId++;
    this.#stages.set(id, { size: 0, chunks: [] });
    return id;
  }

  async append(id: number, chunk: Uint8Array | Blob): Promise<number> {
    const s = this.#usable(id);
    try {
      const bytes = chunk instanceof Blob ? await readChunk(chunk) : chunk;
      if (!s.spill && s.size + bytes.byteLength > STAGE_MEMORY_CAP) {
        // Spill: from here on the bytes live in a temp file.
        const access = await this.#tempFile(id, s);
        s.spill = this.#sealer ? sealedSpill(access, this.#sealer()) : plainSpill(access);
        let at = 0;
        for (const c of s.chunks) {
          s.spill.append(c, at);
          at += c.byteLength;
        }
        s.chunks = [];
      }
      if (s.spill) s.spill.append(bytes, s.size);
      else s.chunks.push(bytes);
      s.size += bytes.byteLength;
      return s.size;
    } catch (err) {
      s.failed = (err as { message?: string } | null)?.message ?? String(err);
      throw err;
    }
  }

  /** The staged bytes as a {@link StagedSource}, for the streaming parameter path. */
  source(id: number): StagedSource {
    const s = this.#usable(id);
    const read = (at: number, into: Uint8Array): Uint8Array => {
      const want = Math.min(into.byteLength, s.size - at);
      if (s.spill) {
        const view = into.subarray(0, want);
        s.spill.read(at, view);
        return view;
      }
      // In memory: copy the chunks that overlap [at, at + want).
      let filled = 0;
      let start = 0;
      for (const c of s.chunks) {
        const end = start + c.byteLength;
        if (end > at && start < at + want) {
          const from = Math.max(at - start, 0);
          const n = Math.min(c.byteLength - from, want - filled);
          into.set(c.subarray(from, from + n), filled);
          filled += n;
        }
        start = end;
        if (filled === want) break;
      }
      return into.subarray(0, want);
    };
    return new StagedSource(s.size, read);
  }

  async discard(id: number): Promise<void> {
    const s = this.#stages.get(id);
    if (!s) return;
    this.#stages.delete(id);
    s.spill?.close();
    if (s.file) await this.#dir?.removeEntry(s.file.name).catch(() => {});
  }

  async discardAll(): Promise<void> {
    for (const id of [...this.#stages.keys()]) await this.discard(id);
    await this.#sweep().catch(() => {});
  }

  #usable(id: number): Stage {
    const s = this.#stages.get(id);
    if (!s) throw bad('this staged blob was already used or discarded');
    if (s.failed) throw bad(`an earlier append to this staged blob failed (${s.failed}); discard it and stage the value again`);
    return s;
  }

  /** Staged blob `id`'s temp file: in OPFS, or where the worker cannot open a sync access handle there, `spareFile()`. */
  async #tempFile(id: number, s: Stage): Promise<FileSystemSyncAccessHandle> {
    const dir = this.#opfs ? await this.#directory() : null;
    if (!dir) return spareFile();
    const file = (await dir.getFileHandle(`${id}.bin`, { create: true })) as SyncFileHandle;
    try {
      const access = await file.createSyncAccessHandle();
      s.file = file;
      return access;
    } catch (err) {
      // WebKit's OPFS has directories and files but no sync access handles
      // (NotSupportedError, or InvalidStateError once one was refused). A
      // full disk is the caller's answer; anything else, temp space in
      // Blobs serves as well.
      if ((err as Error).name === 'QuotaExceededError') throw err;
      this.#opfs = false;
      await dir.removeEntry(file.name).catch(() => {});
      return spareFile();
    }
  }

  async #directory(): Promise<FileSystemDirectoryHandle | null> {
    if (this.#dir) return this.#dir;
    const root = await opfsRoot();
    if (!root) return null;
    const top = await root.getDirectoryHandle('.resq-wasm-stage', { create: true });
    this.#dir = await top.getDirectoryHandle(this.#dirName, { create: true });
    return this.#dir;
  }
}

async function readChunk(blob: Blob): Promise<Uint8Array> {
  try {
    return new Uint8Array(await blob.arrayBuffer());
  } catch (err) {
    throw bad(`a Blob chunk could not be read: ${String(err)}`);
  }
}

async function opfsRoot(): Promise<FileSystemDirectoryHandle | null> {
  try {
    return await navigator.storage.getDirectory();
  } catch {
    return null;
  }
}
