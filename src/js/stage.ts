// Temp space for staged blobs (`stageBlob()`), inside the worker: a value
// built piece by piece stays out of the database until it is used as a
// parameter, and is then written into its row once (as a `Blob` parameter
// is). Bytes stay in memory up to STAGE_MEMORY_CAP, then go to a temporary
// OPFS file beside the database's pool. Left-over files of a crashed session
// are removed when the database is opened again.

import type { WireError } from './protocol.js';

/** The worker-only part of OPFS (the DOM lib lacks it). */
interface FileSystemSyncAccessHandle {
  write(buffer: Uint8Array, options: { at: number }): number;
  flush(): void;
  close(): void;
}
type SyncFileHandle = FileSystemFileHandle & { createSyncAccessHandle(): Promise<FileSystemSyncAccessHandle> };

/** Bytes a staged blob keeps in the worker's memory before it spills to OPFS. */
export const STAGE_MEMORY_CAP = 4 << 20;

interface Stage {
  size: number;
  chunks: Uint8Array[];
  file?: SyncFileHandle;
  access?: FileSystemSyncAccessHandle;
}

const bad = (message: string): WireError => ({ code: 'RESQ_BAD_PARAM', message });

export class StageSpace {
  #stages = new Map<number, Stage>();
  #nextId = 1;
  #dir: FileSystemDirectoryHandle | null = null;
  #dirName: string;

  constructor(dirName: string) {
    this.#dirName = dirName;
  }

  /** Removes what a crashed session left behind (called at open). */
  async reclaim(): Promise<void> {
    const root = await opfsRoot();
    if (!root) return;
    const top = await root.getDirectoryHandle('.resq-wasm-stage', { create: true });
    await top.removeEntry(this.#dirName, { recursive: true }).catch(() => {});
  }

  create(): number {
    const id = this.#nextId++;
    this.#stages.set(id, { size: 0, chunks: [] });
    return id;
  }

  async append(id: number, chunk: Uint8Array | Blob): Promise<number> {
    const s = this.#get(id);
    const bytes = chunk instanceof Blob ? new Uint8Array(await chunk.arrayBuffer()) : chunk;
    if (s.file && !s.access) s.access = await s.file.createSyncAccessHandle(); // after a failed use
    if (!s.access && s.size + bytes.byteLength > STAGE_MEMORY_CAP && (await this.#directory())) {
      // Spill: from here on the bytes live in a temporary OPFS file.
      s.file = (await this.#dir!.getFileHandle(`${id}.bin`, { create: true })) as SyncFileHandle;
      s.access = await s.file.createSyncAccessHandle();
      let at = 0;
      for (const c of s.chunks) at += s.access.write(c, { at });
      s.chunks = [];
    }
    if (s.access) s.access.write(bytes, { at: s.size });
    else s.chunks.push(bytes);
    s.size += bytes.byteLength;
    return s.size;
  }

  /** The staged bytes as a `Blob`, for the streaming parameter path. */
  async asBlob(id: number): Promise<Blob> {
    const s = this.#get(id);
    if (!s.file) return new Blob(s.chunks as BlobPart[]);
    if (s.access) {
      s.access.flush();
      s.access.close();
      s.access = undefined;
    }
    return s.file.getFile();
  }

  async discard(id: number): Promise<void> {
    const s = this.#stages.get(id);
    if (!s) return;
    this.#stages.delete(id);
    s.access?.close();
    if (s.file) await this.#dir?.removeEntry(s.file.name).catch(() => {});
  }

  async discardAll(): Promise<void> {
    for (const id of [...this.#stages.keys()]) await this.discard(id);
    await this.reclaim().catch(() => {});
  }

  #get(id: number): Stage {
    const s = this.#stages.get(id);
    if (!s) throw bad('this staged blob was already used or discarded');
    return s;
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

async function opfsRoot(): Promise<FileSystemDirectoryHandle | null> {
  try {
    return await navigator.storage.getDirectory();
  } catch {
    return null;
  }
}

/** Marks a staged blob inside a parameter set on its way to the worker. */
export interface StagedRef {
  __resqStaged: number;
}

export const isStagedRef = (v: unknown): v is StagedRef =>
  typeof v === 'object' && v !== null && typeof (v as StagedRef).__resqStaged === 'number' && Object.keys(v).length === 1;
