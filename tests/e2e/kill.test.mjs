// Kill trials on OPFS (kill-kit.mjs): a plain database and an encrypted
// one, each worker stopped or renderer crashed mid-write; every
// acknowledged row survives. kill-idb.test.mjs runs the same trials on
// IndexedDB storage: two files, so that the two halves run side by side.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import { start } from './harness.mjs';
import { TRIALS, killTrials } from './kill-kit.mjs';

// The OPFS trials need OPFS (see engines.mjs).
const test = opfsTests();

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

for (const key of [null, 'kill trials key']) {
  const what = key ? ', on an encrypted database' : '';
  test(`kill trials${what}: ${TRIALS} workers stopped or renderers crashed mid-write; every acknowledged row survives, integrity ok, no temp space left`, (t) =>
    killTrials(h, t, key ? { key } : {}, key ? 'kill-trials-encrypted.db' : 'kill-trials.db'));
}
