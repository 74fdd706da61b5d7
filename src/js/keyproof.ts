// How a following tab shows the leading tab's worker that it holds the
// database's key, without sending the key: the worker sends a random
// challenge, the tab answers with its HMAC-SHA256 under the key's bytes,
// and the worker compares it with its own. A tab that cannot answer gets
// RESQ_BAD_KEY, and none of its calls runs.

/**
 * The bytes a key is proved with: `p` and a passphrase's UTF-8, or `r` and
 * 32 raw bytes (so a passphrase never matches raw bytes). Null for no key
 * or one the worker would refuse (it says why).
 */
export function keyBytes(key: unknown): Uint8Array | null {
  if (typeof key === 'string' && key.length > 0) return new Uint8Array([0x70, ...new TextEncoder().encode(key)]);
  if (key instanceof Uint8Array && key.byteLength === 32) return new Uint8Array([0x72, ...key]);
  return null;
}

/** The key {@link keyBytes} made `bytes` from, as `open` takes it; undefined for null. */
export function keyOf(bytes: Uint8Array | null): string | Uint8Array | undefined {
  if (!bytes) return undefined;
  return bytes[0] === 0x72 ? bytes.slice(1) : new TextDecoder().decode(bytes.subarray(1));
}

/**
 * A key as the page holds it between one lead and the next, with no byte
 * of it readable there: WebCrypto keys that script cannot extract (one to
 * prove the key with, one it is sealed under) and the key sealed. The
 * worker that opens the database gets all of it (CryptoKeys cross to
 * workers) and unseals the key with {@link unholdKey}.
 */
export interface HeldKey {
  proof: CryptoKey;
  wrap: CryptoKey;
  iv: Uint8Array;
  sealed: ArrayBuffer;
}

/** `key` held (see {@link HeldKey}); null for a value that is no key (the worker says why). */
export async function holdKey(key: unknown): Promise<HeldKey | null> {
  // A lone surrogate would come back from UTF-8 as another passphrase.
  if (typeof key === 'string' && !key.isWellFormed()) return null;
  const bytes = keyBytes(key);
  if (!bytes || !globalThis.crypto?.subtle) return null;
  try {
    const proof = await crypto.subtle.importKey('raw', bytes as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const wrap = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv: iv as BufferSource }, wrap, bytes as BufferSource);
    return { proof, wrap, iv, sealed };
  } finally {
    bytes.fill(0);
  }
}

/** The {@link keyBytes} of a held key, in the worker. */
export async function unholdKey(held: HeldKey): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: held.iv as BufferSource }, held.wrap, held.sealed));
}

/** HMAC-SHA256 of `challenge` under `key`: a held key's proof key, or {@link keyBytes}. */
export async function keyProof(key: CryptoKey | Uint8Array, challenge: Uint8Array): Promise<Uint8Array> {
  const k = key instanceof Uint8Array ? await crypto.subtle.importKey('raw', key as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']) : key;
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, challenge as BufferSource));
}

/** Whether two proofs are equal, in time that does not depend on where they differ. */
export function sameProof(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.min(a.length, b.length); i++) diff |= a[i] ^ b[i];
  return diff === 0;
}
