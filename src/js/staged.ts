// The page side of `stageBlob()`: a value built piece by piece in the
// worker's temp space (see stage.ts for the worker side).

import { badParam, type ResqError } from './errors.js';
import { StagedParam, USED } from './params.js';
import type { Op, Replies, Requests } from './protocol.js';

/** Appends kept in flight, by a staged blob's `writable` and by an import, before the next one waits. */
const APPENDS_IN_FLIGHT = 8;

/**
 * Appends in call order, with up to APPENDS_IN_FLIGHT of them on their way:
 * `add` waits only when the window is full, `drain` for the rest. A failed
 * append rejects the `add` or `drain` that waits for it.
 */
export class AppendWindow {
  #pending: Promise<unknown>[] = [];

  async add(appended: Promise<unknown>): Promise<void> {
    appended.catch(() => {}); // waited for below, or the caller already failed
    this.#pending.push(appended);
    if (this.#pending.length >= APPENDS_IN_FLIGHT) await this.#pending.shift();
  }

  async drain(): Promise<void> {
    await Promise.all(this.#pending.splice(0));
  }
}

/**
 * Sends one request to the worker, in the database's call order. With
 * `generation`, only to the worker of that generation (see link.ts): the
 * call refers to something that lives there.
 */
export type Send = <K extends Op>(op: K, fields: Requests[K], transfer?: Transferable[], generation?: number) => Promise<Replies[K]>;

/** See `Database.stageBlob`. */
export class StagedBlob extends StagedParam {
  #id: number;
  #send: Send;
  #owner: object;
  /** @internal the worker generation that holds the staged bytes */
  readonly generation: number;
  #size = 0;
  #state: 'open' | 'used' | 'discarded' | 'failed' = 'open';
  #writable: WritableStream<Uint8Array | ArrayBuffer | Blob> | null = null;

  /** @internal use `db.stageBlob()` */
  constructor(id: number, send: Send, owner: object, generation: number) {
    super();
    this.#id = id;
    this.#send = send;
    this.#owner = owner;
    this.generation = generation;
  }

  /** Bytes appended so far (counting appends still on their way). */
  get size(): number {
    return this.#size;
  }

  /**
   * Adds bytes at the end. Bytes are copied (you keep your buffer); a `Blob`
   * is read in the worker. Appends complete in call order, so they need not
   * be awaited one by one. A failed append makes the staged blob unusable
   * (later appends would leave a gap): discard it and stage the value again.
   */
  append(chunk: ArrayBuffer | ArrayBufferView | Blob): Promise<void> {
    if (this.#state !== 'open') return Promise.reject(this.#refusal());
    let value: Uint8Array | Blob;
    const transfer: Transferable[] = [];
    if (chunk instanceof Blob) value = chunk;
    else if (chunk instanceof ArrayBuffer || ArrayBuffer.isView(chunk)) {
      const view = chunk instanceof ArrayBuffer ? new Uint8Array(chunk) : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if ((view.buffer as ArrayBuffer & { detached?: boolean }).detached) return this.#fail(badParam("the chunk's buffer is detached"));
      value = new Uint8Array(view);
      transfer.push(value.buffer);
    } else {
      return this.#fail(badParam('append() takes bytes (Uint8Array, ArrayBuffer) or a Blob'));
    }
    this.#size += value instanceof Blob ? value.size : value.byteLength;
    return this.#send('stageAppend', { stage: this.#id, chunk: value }, transfer, this.generation).then(
      () => undefined,
      (err: ResqError) => this.#fail(err),
    );
  }

  /**
   * A `WritableStream` that appends each chunk: `readable.pipeTo(staged.writable)`.
   * It keeps up to 8 appends in flight, so a fast source does not wait a
   * round trip per chunk; `close()` resolves once all of them are staged.
   * Aborting it (a source that fails midway) makes the staged blob unusable,
   * as a failed append does.
   */
  get writable(): WritableStream<Uint8Array | ArrayBuffer | Blob> {
    this.#writable ??= this.#pipelined();
    return this.#writable;
  }

  #pipelined(): WritableStream<Uint8Array | ArrayBuffer | Blob> {
    const appends = new AppendWindow();
    return new WritableStream({
      write: (chunk) => appends.add(this.append(chunk)),
      close: () => appends.drain(),
      // The source failed or was cancelled: what was staged is a fragment,
      // so it must not be stored by mistake.
      abort: () => {
        if (this.#state === 'open') this.#state = 'failed';
      },
    });
  }

  /** Frees the staged bytes (also after a failed append). A second call does nothing. */
  discard(): Promise<void> {
    if (this.#state !== 'open' && this.#state !== 'failed') return Promise.resolve();
    this.#state = 'discarded';
    return this.#send('stageDiscard', { stage: this.#id }, [], this.generation).then(
      () => undefined,
      // Its worker went, and the staged bytes with it.
      (err: ResqError) => (err.code === 'RESQ_WORKER_DIED' ? undefined : Promise.reject(err)),
    );
  }

  /** Used when this staged blob is passed as a parameter (not for application code). */
  stagedId(label: string, owner: object): number {
    if (this.#state !== 'open') throw this.#refusal(`${label}: `);
    if (owner !== this.#owner)
      throw badParam(`${label}: this staged blob belongs to another database; stage the value in the database that stores it`);
    return this.#id;
  }

  #refusal(prefix = ''): ResqError {
    return badParam(
      this.#state === 'failed'
        ? `${prefix}an earlier append to this staged blob failed (or its writable was aborted); discard it and stage the value again`
        : `${prefix}this staged blob was already ${this.#state}`,
    );
  }

  #fail(err: ResqError): Promise<never> {
    if (this.#state === 'open') this.#state = 'failed';
    return Promise.reject(err);
  }

  /** @internal the call that stored it succeeded */
  [USED](): void {
    this.#state = 'used';
  }
}
