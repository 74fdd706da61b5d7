// An `executeBatch`'s parameter sets written into one buffer, which moves
// to the worker without a structured clone and into wasm memory in one
// copy; `src/codec/batch.rs` reads it and says the format. A 10,000-row
// batch spent most of its time asking each JS value what it was, from wasm
// (benches/experiments/016-batch-encoding.md).
//
// Only what the format holds is written. Anything else (a Blob, a staged
// value, `transfer()`, `undefined`, a bigint outside 64 bits, a string
// with a lone surrogate, a set that is not an array or a plain object)
// makes `encodeBatch` return null, and the batch goes as sets of values:
// the worker's checks of that path are the ones that explain the refusal.

import { isDetached, isPlainObject } from './params.js';

const utf8 = new TextEncoder();
const NONE = 0,
  ARRAY = 1,
  OBJECT = 2;
/** Strings up to this many UTF-16 units are encoded by hand. */
const SHORT = 64;
const NULL = 0,
  FALSE = 1,
  TRUE = 2,
  NUMBER = 3,
  BIGINT = 4,
  TEXT = 5,
  BYTES = 6;

/** The sets in one buffer, or null when one of them cannot be written. */
export function encodeBatch(sets: readonly unknown[]): Uint8Array | null {
  const w = new Writer(4096);
  w.u32(sets.length);
  for (let i = 0; i < sets.length; i++) {
    const set = sets[i];
    // A batch's sets are mostly alike: the first one's size foretells the
    // buffer's, which then grows once, not by doubling (a copy each time).
    if (i === 1) w.reserve(Math.ceil(w.length * sets.length * 1.05));
    if (set === undefined || set === null) {
      w.u8(NONE);
      w.u32(0);
    } else if (Array.isArray(set)) {
      w.u8(ARRAY);
      w.u32(set.length);
      for (const v of set) if (!w.value(v)) return null;
    } else if (isPlainObject(set)) {
      const keys = Object.keys(set);
      w.u8(OBJECT);
      w.u32(keys.length);
      for (const k of keys) {
        if (!w.text(k) || !w.value(set[k])) return null;
      }
    } else {
      return null;
    }
  }
  return w.done();
}

class Writer {
  #buf: Uint8Array;
  #view: DataView;
  #at = 0;

  constructor(size: number) {
    this.#buf = new Uint8Array(size);
    this.#view = new DataView(this.#buf.buffer);
  }

  /** Writes `v`; false when the format has no place for it. */
  value(v: unknown): boolean {
    switch (typeof v) {
      case 'number':
        this.#room(9);
        this.#buf[this.#at] = NUMBER;
        this.#view.setFloat64(this.#at + 1, v, true);
        this.#at += 9;
        return true;
      case 'string':
        this.u8(TEXT);
        return this.text(v);
      case 'boolean':
        this.u8(v ? TRUE : FALSE);
        return true;
      case 'bigint':
        if (BigInt.asIntN(64, v) !== v) return false;
        this.#room(9);
        this.#buf[this.#at] = BIGINT;
        this.#view.setBigInt64(this.#at + 1, v, true);
        this.#at += 9;
        return true;
    }
    if (v === null) {
      this.u8(NULL);
      return true;
    }
    const view =
      v instanceof Uint8Array
        ? v
        : v instanceof ArrayBuffer
          ? new Uint8Array(v)
          : ArrayBuffer.isView(v)
            ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
            : null;
    if (view === null || isDetached(view.buffer)) return false;
    this.u8(BYTES);
    this.u32(view.length);
    this.#room(view.length);
    this.#buf.set(view, this.#at);
    this.#at += view.length;
    return true;
  }

  /** Writes `s` as UTF-8; false if it has a lone surrogate. */
  text(s: string): boolean {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.#room(4 + s.length * 3);
    const start = this.#at + 4;
    let end: number;
    if (s.length > SHORT) {
      if (!s.isWellFormed()) return false;
      end = start + utf8.encodeInto(s, this.#buf.subarray(start)).written;
    } else {
      end = this.#short(s, start);
      if (end < 0) return false;
    }
    this.#view.setUint32(this.#at, end - start, true);
    this.#at = end;
    return true;
  }

  /**
   * A short string's UTF-8, by hand: cheaper than a TextEncoder call for
   * a few dozen characters. Returns where it ends, or -1 at a lone surrogate.
   */
  #short(s: string, at: number): number {
    const buf = this.#buf;
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) {
        buf[at++] = c;
      } else if (c < 0x800) {
        buf[at++] = 0xc0 | (c >> 6);
        buf[at++] = 0x80 | (c & 0x3f);
      } else if (c < 0xd800 || c > 0xdfff) {
        buf[at++] = 0xe0 | (c >> 12);
        buf[at++] = 0x80 | ((c >> 6) & 0x3f);
        buf[at++] = 0x80 | (c & 0x3f);
      } else {
        const d = c < 0xdc00 && i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
        if (d < 0xdc00 || d > 0xdfff) return -1;
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        buf[at++] = 0xf0 | (c >> 18);
        buf[at++] = 0x80 | ((c >> 12) & 0x3f);
        buf[at++] = 0x80 | ((c >> 6) & 0x3f);
        buf[at++] = 0x80 | (c & 0x3f);
      }
    }
    return at;
  }

  u8(n: number): void {
    this.#room(1);
    this.#buf[this.#at++] = n;
  }

  u32(n: number): void {
    this.#room(4);
    this.#view.setUint32(this.#at, n, true);
    this.#at += 4;
  }

  get length(): number {
    return this.#at;
  }

  reserve(size: number): void {
    if (size > this.#buf.length) this.#grow(size);
  }

  done(): Uint8Array {
    return this.#buf.subarray(0, this.#at);
  }

  #room(n: number): void {
    if (this.#at + n > this.#buf.length) this.#grow(Math.max(this.#buf.length * 2, this.#at + n));
  }

  #grow(size: number): void {
    const grown = new Uint8Array(size);
    grown.set(this.#buf.subarray(0, this.#at));
    this.#buf = grown;
    this.#view = new DataView(grown.buffer);
  }
}
