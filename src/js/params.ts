// Parameters on their way to the worker. Bytes at or above the transfer
// threshold are copied once here and the copy is transferred (moved), so the
// caller keeps its buffer; `transfer(bytes)` moves the caller's own buffer.
// Below the threshold, the structured clone copies them.

import { badParam } from './errors.js';
import type { StagedRef } from './protocol.js';

/** Marks bytes to hand over to the worker without a copy; see `transfer()`. */
export class Transfer {
  readonly bytes: Uint8Array;
  /** @internal The caller's buffer was detached already: the call refuses it, naming the parameter. */
  readonly detached: boolean;
  constructor(bytes: Uint8Array, detached = false) {
    this.bytes = bytes;
    this.detached = detached;
  }
}

/** Marks a staged value used up: the call that stored it succeeded. */
export const USED = Symbol('used');

/**
 * A value whose bytes already wait in the worker (a `StagedBlob`): a
 * parameter set carries only its id.
 */
export abstract class StagedParam {
  /**
   * The id in the worker of database `owner`; throws RESQ_BAD_PARAM (naming
   * `label`) once used or discarded, or when it belongs to another database.
   */
  abstract stagedId(label: string, owner: object): number;
  /** @internal the worker generation that holds its bytes (see link.ts) */
  abstract readonly generation: number;
  /** @internal the call that stored it succeeded */
  abstract [USED](): void;
}

/** What a call sends besides its parameters: buffers to move, staged values it uses. */
export interface Outgoing {
  /** The database the call goes to (staged values belong to one). */
  owner: object;
  transfer: Set<Transferable>;
  staged: StagedParam[];
}

/**
 * A value a parameter can take. A `Blob`/`File` streams into the row in
 * chunks (`execute` only); see API.md.
 */
export type SqlValue = null | boolean | number | bigint | string | ArrayBuffer | ArrayBufferView | Transfer | Blob | StagedParam;
export type Params = readonly SqlValue[] | { readonly [name: string]: SqlValue };

/**
 * Whether `buffer` was transferred away. `detached` is ES2024: where it is
 * missing (Node 20, browsers before 2024) a detached buffer is the one of
 * no bytes over which no view can be made.
 */
export function isDetached(buffer: ArrayBufferLike): boolean {
  const detached = (buffer as ArrayBuffer & { detached?: boolean }).detached;
  if (detached !== undefined) return detached;
  if (buffer.byteLength !== 0) return false;
  try {
    new Uint8Array(buffer);
    return false;
  } catch {
    return true;
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Prepares one parameter set; buffers to move and staged values used are added to `out`. */
export function prepareParams(params: unknown, threshold: number, out: Outgoing): unknown {
  if (params === undefined || params === null) return undefined;
  if (Array.isArray(params)) return params.map((v, i) => prepareValue(v, threshold, out, `parameter ${i + 1}`));
  if (isPlainObject(params)) {
    const set: Record<string, unknown> = {};
    for (const k of Object.keys(params)) set[k] = prepareValue(params[k], threshold, out, `:${k}`);
    return set;
  }
  throw badParam('parameters must be an array (for ?) or a plain object (for :name)');
}

function prepareValue(v: unknown, threshold: number, { owner, transfer, staged }: Outgoing, label: string): unknown {
  if (v instanceof StagedParam) {
    const id = v.stagedId(label, owner);
    staged.push(v);
    return { __resqStaged: id } satisfies StagedRef;
  }
  if (v instanceof Transfer) {
    if (v.detached || isDetached(v.bytes.buffer)) throw badParam(`${label}: the buffer is detached (already transferred)`);
    if (!(v.bytes.buffer instanceof ArrayBuffer)) return copyOf(v.bytes, transfer);
    transfer.add(v.bytes.buffer);
    return v.bytes;
  }
  if (v instanceof ArrayBuffer) {
    if (isDetached(v)) throw badParam(`${label}: the buffer is detached (already transferred)`);
    return v.byteLength >= threshold ? copyOf(new Uint8Array(v), transfer) : v;
  }
  if (ArrayBuffer.isView(v)) {
    if (isDetached(v.buffer)) throw badParam(`${label}: the buffer is detached (already transferred)`);
    const whole = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength;
    // A view's clone would carry its whole buffer, and a shared buffer
    // would stay shared: copy just the view's bytes.
    if (v.byteLength >= threshold || !whole || !(v.buffer instanceof ArrayBuffer)) {
      return copyOf(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), transfer);
    }
    return v;
  }
  if (typeof v === 'function' || typeof v === 'symbol') throw badParam(`${label}: a ${typeof v} is not a SQLite value`);
  // Everything else is checked in the worker against API.md's table.
  return v;
}

function copyOf(bytes: Uint8Array, transfer: Set<Transferable>): Uint8Array {
  const copy = new Uint8Array(bytes);
  transfer.add(copy.buffer);
  return copy;
}
