// Kill trials of a plain database's rekey(key) (rekey-kill-kit.mjs), which
// moves the database to the worker with ciphers as it encrypts it.
// rekey-kill.test.mjs has the rekeys from a key.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import { start } from './harness.mjs';
import { TRIALS, rekeyKillTrials } from './rekey-kill-kit.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests({ key: 'a passphrase' });

let h;
before(async () => {
  h = await start({ probe: {} });
});
after(async () => {
  await h?.close();
});

test(`a rekey(key) of a plain database crashed midway leaves no key or the new key opening it, never neither, and the key never harms it (${TRIALS} trials)`, (t) =>
  rekeyKillTrials(h, t, 'plain', {}, { key: 'encrypt me' }));
