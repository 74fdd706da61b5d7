// Backup and restore, the page side. `db.export()` is a ReadableStream that
// reads the database file out of the worker one chunk per pull, while the
// worker runs nothing else (see worker.ts). `importDatabase` moves a file
// into the worker's temp space the way a staged blob fills (Blob slices as
// handles, stream chunks gathered and moved), then asks the worker to
// replace the database with it, which it does only once SQLite has checked
// the whole file (src/worker/backup.rs).

import { ResqError, badParam } from './errors.js';
import { AppendWindow, type Send } from './staged.js';
import { iterable } from './iterable.js';

/** What `importDatabase` reads a database file from. */
export type ImportSource = Blob | ReadableStream<Uint8Array>;

/** A `Blob` source goes to the worker in slices of this many bytes (handles: the worker reads them). */
const BLOB_SLICE = 4 << 20;
/** A stream source's chunks are gathered into appends of this many bytes. */
const STREAM_GATHER = 1 << 20;

/**
 * The database file as a stream. `gated` sends in the database's call
 * order (the export takes its place among the calls); its reads go
 * `direct`, past calls waiting behind it, to the worker of `generation()`
 * at its start. `live` holds a stopper for each running export, for
 * `close()`.
 */
export function exportStream(
  gated: Send,
  direct: Send,
  generation: () => number,
  live: Set<(err: ResqError) => void>,
): ReadableStream<Uint8Array> {
  let id = 0;
  let size = 0;
  let at = 0;
  let held = 0;
  // Read to the end, cancelled, stopped by close(), or failed: the worker
  // is told to let go (a no-op if it has already), once the export is open.
  let done = false;
  const finish = (): boolean => {
    if (done) return false;
    done = true;
    live.delete(stop);
    return true;
  };
  const letGo = () => void direct('exportClose', { export: id }, [], held).catch(() => {});
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stop = (err: ResqError) => {
    if (!finish()) return;
    if (id) letGo();
    controller.error(err);
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start: async (c) => {
        controller = c;
        live.add(stop);
        try {
          ({ export: id, size } = await gated('exportOpen', {}));
        } catch (err) {
          finish();
          throw err;
        }
        held = generation();
        // Stopped or cancelled while it was opening.
        if (done) letGo();
      },
      pull: async (c) => {
        let bytes: Uint8Array;
        try {
          bytes = await direct('exportRead', { export: id }, [], held);
        } catch (err) {
          if (finish()) letGo();
          throw err;
        }
        at += bytes.byteLength;
        c.enqueue(bytes);
        if (at >= size || bytes.byteLength === 0) {
          finish();
          c.close();
        }
      },
      cancel: () => {
        if (finish() && id) letGo();
      },
    },
    { highWaterMark: 1 },
  );
  return iterable(stream);
}

/** Throws RESQ_BAD_PARAM unless `source` is something `importDatabase` reads. */
export function checkSource(source: unknown): asserts source is ImportSource {
  if (source instanceof Blob || source instanceof ReadableStream) return;
  throw badParam('importDatabase() reads a Blob, a File or a ReadableStream of bytes (wrap bytes in a Blob: new Blob([bytes]))');
}

/**
 * Moves `source` into a staged blob of the worker, then has the worker
 * replace the database with it (`importStaged`, which uses the staged blob
 * up, success or not). `send` sends in the database's call order; `key`
 * (in its one form, keyproof.ts) reads an encrypted file (the database's
 * own key when not given).
 */
export async function importInto(send: Send, generation: () => number, source: unknown, key?: unknown): Promise<void> {
  checkSource(source);
  const stage = await send('stageOpen', {});
  // The staged bytes live in that worker: every later call goes there or nowhere.
  const held = generation();
  const appends = new AppendWindow();
  const append = (chunk: Uint8Array | Blob, transfer: Transferable[]) => appends.add(send('stageAppend', { stage, chunk }, transfer, held));
  try {
    if (source instanceof Blob) {
      for (let at = 0; at < source.size; at += BLOB_SLICE) await append(source.slice(at, at + BLOB_SLICE), []);
    } else {
      await gather(source, (bytes) => append(bytes, [bytes.buffer]));
    }
    await appends.drain();
  } catch (err) {
    void send('stageDiscard', { stage }, [], held).catch(() => {});
    throw err;
  }
  // `importDatabase` made the key's one form (keyproof.ts `keyBytes`).
  await send('importStaged', key === undefined ? { stage } : { stage, key: key as Uint8Array }, [], held);
}

/** Reads `stream` to its end, handing on its bytes in buffers of STREAM_GATHER bytes (the last may be shorter). */
async function gather(stream: ReadableStream<Uint8Array>, emit: (bytes: Uint8Array) => Promise<void>): Promise<void> {
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    reader = stream.getReader();
  } catch (err) {
    throw badParam(`the source stream cannot be read (is it locked, or read already?): ${String(err)}`);
  }
  let buffer = new Uint8Array(STREAM_GATHER);
  let filled = 0;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (err) {
        const why = err instanceof ResqError ? `${err.code}: ${err.message}` : String(err);
        throw badParam(`the source stream failed: ${why}`);
      }
      if (next.done) break;
      const chunk: unknown = next.value;
      if (!(chunk instanceof ArrayBuffer) && !ArrayBuffer.isView(chunk))
        throw badParam('the source stream gave something other than bytes');
      let view = chunk instanceof ArrayBuffer ? new Uint8Array(chunk) : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      while (view.byteLength > 0) {
        const n = Math.min(view.byteLength, STREAM_GATHER - filled);
        buffer.set(view.subarray(0, n), filled);
        filled += n;
        view = view.subarray(n);
        if (filled === STREAM_GATHER) {
          await emit(buffer);
          buffer = new Uint8Array(STREAM_GATHER);
          filled = 0;
        }
      }
    }
    if (filled > 0) await emit(buffer.slice(0, filled));
  } catch (err) {
    // Ours or the source's: either way nothing more is read from it.
    reader.cancel(err).catch(() => {});
    throw err;
  } finally {
    reader.releaseLock();
  }
}
