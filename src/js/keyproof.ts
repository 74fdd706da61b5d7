// A tab's key, and how a following tab shows the leading tab's worker that
// it holds the database's key, without sending the key: the worker sends a random
// challenge, the tab answers with its HMAC-SHA256 under the key's bytes,
// and the worker compares it with its own. A tab that cannot answer gets
// RESQ_BAD_KEY, and none of its calls runs.

import type { HeldKey, Hello, KeyProof, KeyVerdict } from './protocol.js';

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

/** `key` held (see HeldKey in protocol.ts); null for a value that is no key (the worker says why). */
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
  const k =
    key instanceof Uint8Array
      ? await crypto.subtle.importKey('raw', key as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
      : key;
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, challenge as BufferSource));
}

/** Whether two proofs are equal, in time that does not depend on where they differ. */
export function sameProof(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.min(a.length, b.length); i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** A tab's key: held, or a value given as a key that is none (for the worker to refuse); null for none. */
export type LinkKey = { held: HeldKey } | { invalid: unknown } | null;

/** `key` as `open` took it, as a tab keeps it. */
export async function linkKey(key: unknown): Promise<LinkKey> {
  if (key === undefined) return null;
  const held = await holdKey(key);
  return held ? { held } : { invalid: key };
}

/**
 * The following side of the check, on `port` to the leader's worker that
 * said `hello`: 'ok' to follow it (a plain database and no key, or the
 * challenge answered with the key), 'gone' if that worker went first
 * (`leaderGone`), or why this tab may not follow (for RESQ_BAD_KEY).
 */
export async function answerChallenge(
  hello: Hello,
  port: MessagePort,
  key: LinkKey,
  name: string,
  leaderGone: Promise<null>,
): Promise<'ok' | 'gone' | { refusal: string }> {
  const proof = key && 'held' in key ? key.held.proof : null;
  if (!hello.encrypted && proof) return { refusal: `${name} is not encrypted: open it without a key` };
  if (hello.encrypted && !proof) return { refusal: `${name} is encrypted: open it with its key` };
  if (!proof) return 'ok';
  // Encrypted: an answer to a challenge missing (never sent) fails.
  const verdict = new Promise<boolean>((r) => (port.onmessage = (e) => r((e.data as KeyVerdict)?.keyOk === true)));
  port.postMessage({ proof: await keyProof(proof, hello.challenge ?? new Uint8Array(0)) } satisfies KeyProof);
  const ok = await Promise.race([verdict, leaderGone]);
  if (ok === null) return 'gone';
  return ok ? 'ok' : { refusal: `the key does not open ${name}` };
}
