// A key as SQLite3 Multiple Ciphers' chacha20 cipher derives it: a
// passphrase through PBKDF2-HMAC-SHA256 with the file's 16-byte salt and
// 64,007 iterations (its default), 32 raw bytes as they are. `rekey`
// derives the new key here and hands SQLite3MC the raw key with the same
// salt, so the salt in page 1 never changes (benches/experiments/019-rekey.md);
// a later `open` with the passphrase derives the same key from it.

/** SQLite3MC's `CHACHA20_KDF_ITER_DEFAULT`. */
const ITERATIONS = 64007;

/** The 32-byte key for `key` (a passphrase or 32 raw bytes), or null for anything else. */
export async function rawKey(key: unknown, salt: Uint8Array): Promise<Uint8Array | null> {
  if (key instanceof Uint8Array) return key.byteLength === 32 ? key : null;
  if (typeof key !== 'string' || key.length === 0 || !key.isWellFormed()) return null;
  const pass = await crypto.subtle.importKey('raw', new TextEncoder().encode(key), 'PBKDF2', false, ['deriveBits']);
  const bits = await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: salt as BufferSource, iterations: ITERATIONS }, pass, 256);
  return new Uint8Array(bits);
}
