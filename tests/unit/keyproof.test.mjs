// A key's one form and its one check (src/js/keyproof.ts), where the page
// is given a key: `p` and a passphrase's UTF-8, or `r` and 32 raw bytes,
// and RESQ_BAD_PARAM with one message for anything else, before any of it
// reaches a worker. The browser tests (encryption, rekey) open, prove and
// change keys through real workers; the core reads this form
// (src/worker/convert.rs).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const { keyBytes, holdKey, unholdKey, keyProof } = await load('src/js/keyproof.ts');

test('a passphrase and 32 raw bytes each have one form, and never the same one', () => {
  assert.deepEqual([...keyBytes('pé')], [0x70, 0x70, 0xc3, 0xa9]);
  const raw = new Uint8Array(32).fill(7);
  assert.deepEqual([...keyBytes(raw)], [0x72, ...raw]);
  // The 32 characters of a passphrase are not the 32 bytes they spell.
  assert.notDeepEqual([...keyBytes('\x07'.repeat(32))], [...keyBytes(raw)]);
});

test('anything else is RESQ_BAD_PARAM, with one message', () => {
  const refused = [undefined, null, 42, '', 'lone \ud800', new Uint8Array(31), new Uint8Array(33), new ArrayBuffer(32), [1, 2]];
  const messages = new Set();
  for (const key of refused) {
    assert.throws(
      () => keyBytes(key),
      (e) => {
        assert.equal(e.code, 'RESQ_BAD_PARAM', String(key));
        messages.add(e.message);
        return true;
      },
    );
  }
  assert.deepEqual([...messages], ['key must be a passphrase (a non-empty string, valid Unicode) or 32 raw bytes (a Uint8Array)']);
  // rekey's refusal names null too, which decrypts.
  assert.throws(() => keyBytes(42, true), { code: 'RESQ_BAD_PARAM', message: /, or null to decrypt$/ });
});

test('a held key unseals to its one form, zeroes what it was made from, and proves as its bytes do', async () => {
  const bytes = keyBytes('a passphrase');
  const copy = bytes.slice();
  const held = await holdKey(bytes);
  assert.ok(
    bytes.every((b) => b === 0),
    'the bytes it was made from are zeroed',
  );
  assert.deepEqual([...(await unholdKey(held))], [...copy]);
  const challenge = new Uint8Array(32).fill(1);
  assert.deepEqual([...(await keyProof(held.proof, challenge))], [...(await keyProof(copy, challenge))]);
});
