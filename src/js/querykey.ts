// What makes two live queries the same, so that they share one: the same
// SQL, form of result, and parameters that bind the same. The page's stores
// (store.ts, under React's and Vue's `useQuery`) key the user's parameters
// with it; the worker's shared watches (worker/live.ts) key them as they
// arrive there. The key is tagged values, each self-delimiting (a tag, then
// a length or a terminator). It keeps apart 0 and -0, a number and a
// bigint, NaN and the infinities, null and undefined, booleans and numbers;
// bytes go by their contents (exactly a view's range, whatever its type),
// spelled one character per byte: React keys on every render. Names of a
// named set go in any order. A value whose contents it cannot read (a
// Blob, a StagedBlob, any other object) is keyed by identity, never merged.

import { isPlainObject, Transfer } from './params.js';

/** The key of `sql` with `params`, as rows or (`bytes`) as JSON bytes. */
export function queryKey(sql: unknown, params: unknown, bytes: boolean): string {
  return `${bytes ? 'J' : 'R'}${valueKey(sql)}${setKey(params)}`;
}

/** The bytes a parameter is keyed by (a buffer, a view's range, `transfer()`); null for others and a detached buffer. */
function bytesOf(v: unknown): Uint8Array | null {
  if (v instanceof Transfer) return v.detached ? null : bytesOf(v.bytes);
  if (v instanceof ArrayBuffer) return viewOf(v, 0, v.byteLength);
  if (ArrayBuffer.isView(v)) return viewOf(v.buffer, v.byteOffset, v.byteLength);
  return null;
}

/** Null when `buffer` is detached: no view can be made of one (where `detached` is unknown too). */
function viewOf(buffer: ArrayBufferLike, offset: number, length: number): Uint8Array | null {
  try {
    return new Uint8Array(buffer, offset, length);
  } catch {
    return null;
  }
}

/** The parameters as the key reads them now: the bytes keyed copied, all else as it is. */
export function keptParams<P>(params: P): P {
  const keep = (v: unknown) => {
    const b = bytesOf(v);
    return b ? b.slice() : v;
  };
  if (Array.isArray(params)) return Array.from(params, keep) as P;
  if (isPlainObject(params)) return Object.fromEntries(Object.keys(params).map((k) => [k, keep(params[k])])) as P;
  return params;
}

/** None, positional, named (names sorted), or anything else as a value. */
function setKey(params: unknown): string {
  if (params === undefined || params === null) return '-';
  if (Array.isArray(params)) {
    let key = `[${params.length}:`;
    for (let i = 0; i < params.length; i++) key += valueKey(params[i]);
    return key;
  }
  if (isPlainObject(params)) {
    const names = Object.keys(params).sort();
    let key = `{${names.length}:`;
    for (const name of names) key += valueKey(name) + valueKey(params[name]);
    return key;
  }
  return `!${valueKey(params)}`;
}

/** Objects keyed by identity, numbered on first sight. */
const ids = new WeakMap<object, number>();
let lastId = 0;

function valueKey(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return `s${v.length}:${v}`;
    case 'number':
      // String() tells every double apart but -0.
      return `n${Object.is(v, -0) ? '-0' : String(v)};`;
    case 'bigint':
      return `i${v};`;
    case 'boolean':
      return v ? 't' : 'f';
    case 'undefined':
      return 'u';
    case 'symbol':
      // Refused alike.
      return 'y';
  }
  if (v === null) return 'z';
  const bytes = bytesOf(v);
  if (bytes) return `b${bytes.length}:${latin1(bytes)}`;
  if (v instanceof Transfer || v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return 'x';
  const o = v as object;
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = ++lastId));
  return `o${id};`;
}

/** Bytes per call: well under every engine's limit on arguments. */
const CHUNK = 8192;

function latin1(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
  }
  return s;
}
