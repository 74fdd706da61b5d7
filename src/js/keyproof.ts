// A tab's key, and how a following tab shows the leading tab's worker that
// it holds the database's key, without sending the key: the worker sends a random
// challenge, the tab answers with its HMAC-SHA256 under the key's bytes,
// and the worker compares it with its own. A tab that cannot answer gets
// RESQ_BAD_KEY, and none of its calls runs.

import { ResqError, badParam } from './errors.js';
import type { HeldKey, Hello, KeyProof, KeyVerdict } from './protocol.js';

/**
 * A key in its one form: `p` and a passphrase's UTF-8, or `r` and 32 raw
 * bytes (so a passphrase never matches raw bytes). Made here, where the
 * page is given a key (`open`, `rekey`, `importDatabase`), and checked
 * only here: the worker proves the key with these bytes and the core
 * opens the database with them (src/worker/convert.rs reads this form).
 * `orNull`: the refusal names `null` too (`rekey(null)` decrypts).
 */
export function keyBytes(key: unknown, orNull = false): Uint8Array {
  // A lone surrogate would come back from UTF-8 as another passphrase.
  if (typeof key === 'string' && key.length > 0 && key.isWellFormed()) return new Uint8Array([0x70, ...new TextEncoder().encode(key)]);
  if (key instanceof Uint8Array && key.byteLength === 32) return new Uint8Array([0x72, ...key]);
  throw badParam(
    `key must be a passphrase (a non-empty string, valid Unicode)${orNull ? ', ' : ' or '}32 raw bytes (a Uint8Array)${orNull ? ', or null to decrypt' : ''}`,
  );
}

/** A key's {@link keyBytes} held (see HeldKey in protocol.ts); `bytes` are zeroed. */
export async function holdKey(bytes: Uint8Array): Promise<HeldKey> {
  try {
    // A secure context has it, as OPFS wants one (a key is for OPFS only).
    if (!globalThis.crypto?.subtle)
      throw new ResqError('RESQ_UNSUPPORTED', 'a key needs WebCrypto (crypto.subtle), which only a secure context has');
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

/**
 * The following side of the check, on `port` to the leader's worker that
 * said `hello`: 'ok' to follow it (a plain database and no key, or the
 * challenge answered with the key), 'gone' if that worker went first
 * (`leaderGone`), or why this tab may not follow (for RESQ_BAD_KEY).
 */
export async function answerChallenge(
  hello: Hello,
  port: MessagePort,
  key: HeldKey | null,
  name: string,
  leaderGone: Promise<null>,
): Promise<'ok' | 'gone' | { refusal: string }> {
  const proof = key?.proof ?? null;
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
