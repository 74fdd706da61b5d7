// Blob parameters on their way into SQLite. A `Blob`/`File` (or a staged
// value) below the stream limit is read here and bound as its bytes, so
// SQL sees exactly the file; a larger one stays a `Blob`: the engine binds
// a placeholder, and `writeStreams` writes the bytes into the cells it
// landed in, a chunk at a time (see src/worker/streams.rs).

import { isStagedRef } from '../protocol.js';
import type { Caller } from './callers.js';
import { db, limits, refusal, type Engine } from './engine.js';
import { StagedSource } from './stage.js';
import { Turns } from './turn.js';

/** Bytes of a `Blob` parameter read per step: wasm memory holds one. */
const STREAM_CHUNK = 1 << 20;
/**
 * Bytes written into the cell per step: between steps the worker gives
 * its thread to reads that arrived (turn.ts). A step writes 128 KB pages
 * into the WAL; Firefox's OPFS took 40-50 ms for a whole 1 MiB chunk.
 */
const WRITE_STEP = 256 << 10;

/**
 * Bytes of small `Blob`s an `executeBatch` reads before it runs the sets
 * that hold them: a batch of a thousand 3 MB files runs in parts of about
 * this much, in one transaction, never with all of them in memory.
 */
export const BATCH_BLOB_BUDGET = 32 << 20;

/** Where staged bytes are read into on their way to wasm memory; made once. */
let scratch: Uint8Array | undefined;

/** `id` is a staged blob of `from`'s: a caller cannot touch another's. */
export function ownStage(from: Caller, id: number): number {
  if (!from.stages.has(id)) throw refusal('RESQ_BAD_PARAM', 'this staged blob was already used or discarded');
  return id;
}

export async function discardStage(from: Caller, id: number): Promise<void> {
  if (!from.stages.delete(id)) return;
  await db.stages!.discard(id);
}

/**
 * Swaps each staged-blob marker in a parameter set for a {@link StagedSource}
 * (which then streams like any `Blob` parameter); their ids go to `used`, to
 * be discarded once the call succeeded.
 */
export function resolveStaged(from: Caller, params: unknown, used: number[]): unknown {
  const stages = db.stages;
  if (!stages || params === null || typeof params !== 'object') return params;
  const sources = new Map<number, StagedSource>();
  const swap = (v: unknown) => {
    if (!isStagedRef(v)) return v;
    const id = ownStage(from, v.__resqStaged);
    if (!sources.has(id)) {
      used.push(id);
      sources.set(id, stages.source(id));
    }
    return sources.get(id);
  };
  return Array.isArray(params) ? params.map(swap) : Object.fromEntries(Object.entries(params).map(([k, v]) => [k, swap(v)]));
}

/** The entries of a parameter set: index or name, and value. */
function entriesOf(params: object): (readonly [number | string, unknown])[] {
  return Array.isArray(params) ? params.map((v, i) => [i, v] as const) : Object.entries(params);
}

/** The values of a parameter set, without a copy when it is an array. */
const valuesOf = (params: object): unknown[] => (Array.isArray(params) ? params : Object.values(params));

/** Bytes of the `Blob`s in `params` that {@link inlineSmall} would read. */
export function smallBlobBytes(params: unknown): number {
  if (params === null || typeof params !== 'object') return 0;
  let n = 0;
  for (const v of valuesOf(params)) if (v instanceof Blob && v.size < limits.stream) n += v.size;
  return n;
}

/** Replaces each `Blob` below the stream limit in `params` by its bytes. */
export async function inlineSmall(params: unknown): Promise<unknown> {
  // Most sets hold no Blob: they go as they are, nothing made for them.
  if (params === null || typeof params !== 'object' || !valuesOf(params).some((v) => v instanceof Blob)) return params;
  const entries = entriesOf(params);
  const limit = limits.stream;
  const read = async (key: number | string, v: unknown) => {
    if (!(v instanceof Blob) || v.size >= limit) return v;
    if (v instanceof StagedSource) return v.read(0, new Uint8Array(v.size));
    try {
      return new Uint8Array(await v.arrayBuffer());
    } catch (err) {
      const label = typeof key === 'number' ? `parameter ${key + 1}` : `:${key}`;
      throw refusal('RESQ_BAD_PARAM', `${label}: the Blob or File could not be read: ${String(err)}`);
    }
  };
  const values = await Promise.all(entries.map(([k, v]) => read(k, v)));
  return Array.isArray(params) ? values : Object.fromEntries(entries.map(([k], i) => [k, values[i]]));
}

/**
 * Splits a batch's parameter sets into runs of at most `most` sets whose
 * small `Blob`s together stay within {@link BATCH_BLOB_BUDGET} (a set over
 * it alone is a run of its own), as `[start, end)` pairs.
 */
export function batchRuns(sets: unknown[], most: number): [number, number][] {
  const runs: [number, number][] = [];
  let start = 0;
  let bytes = 0;
  sets.forEach((set, i) => {
    const n = smallBlobBytes(set);
    if (i > start && (bytes + n > BATCH_BLOB_BUDGET || i - start === most)) {
      runs.push([start, i]);
      start = i;
      bytes = 0;
    }
    bytes += n;
  });
  runs.push([start, sets.length]);
  return runs;
}

/**
 * Writes the `Blob` parameters of a streaming `execute` (or of a write
 * through `query`) into the cells their placeholders landed in, a chunk at
 * a time, then commits; any failure (a `Blob` that cannot be read, a write
 * error) rolls the whole call back.
 */
export async function writeStreams(c: Engine, streams: Blob[]): Promise<void> {
  const turns = new Turns();
  /** Writes `bytes` at `at` of stream `i`, in steps, yielding between them. */
  const write = async (i: number, at: number, bytes: Uint8Array) => {
    for (let from = 0; from < bytes.length; from += WRITE_STEP) {
      await turns.pass();
      c.streamWrite(i, at + from, bytes.subarray(from, from + WRITE_STEP));
    }
  };
  try {
    for (const [i, blob] of streams.entries()) {
      if (blob instanceof StagedSource) {
        scratch ??= new Uint8Array(STREAM_CHUNK);
        for (let at = 0; at < blob.size; at += STREAM_CHUNK) await write(i, at, blob.read(at, scratch));
        continue;
      }
      // The next chunk is read while this one is written: the browser reads
      // a Blob off the worker's thread, so the two overlap (JS holds two
      // chunks, wasm memory one).
      const read = (at: number) => {
        const p = blob.slice(at, at + STREAM_CHUNK).arrayBuffer();
        p.catch(() => {}); // awaited below; a chunk never awaited (a write failed) is not unhandled
        return p;
      };
      let next = blob.size > 0 ? read(0) : undefined;
      for (let at = 0; next; at += STREAM_CHUNK) {
        let chunk: ArrayBuffer;
        try {
          chunk = await next;
        } catch (err) {
          throw refusal('RESQ_BAD_PARAM', `a Blob parameter could not be read: ${String(err)}`);
        }
        next = at + STREAM_CHUNK < blob.size ? read(at + STREAM_CHUNK) : undefined;
        await write(i, at, new Uint8Array(chunk));
      }
    }
  } catch (err) {
    c.streamEnd(false);
    throw err;
  }
  c.streamEnd(true);
}

/**
 * A write with `RETURNING` run by `query`/`queryBytes` takes streamed
 * values as `execute` does: its rows are ready, its cells still to fill.
 */
export async function writeTaken(c: Engine): Promise<void> {
  const streams = c.takeStreams();
  if (streams) await writeStreams(c, streams);
}
