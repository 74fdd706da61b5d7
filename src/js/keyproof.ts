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

/** HMAC-SHA256 of `challenge` under `bytes` (see {@link keyBytes}). */
export async function keyProof(bytes: Uint8Array, challenge: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', bytes as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, challenge as BufferSource));
}

/** Whether two proofs are equal, in time that does not depend on where they differ. */
export function sameProof(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.min(a.length, b.length); i++) diff |= a[i] ^ b[i];
  return diff === 0;
}
