// Kill trials of a rekey from a key (rekey-kill-kit.mjs): to another key,
// and to none. rekey-kill-plain.test.mjs has a plain database's rekey(key).

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

test(`a rekey crashed midway leaves the old key or the new one working, never neither (${TRIALS} trials)`, (t) =>
  rekeyKillTrials(h, t, 'key', { key: 'old key' }, { key: 'new key' }));

test(`a rekey(null) crashed midway leaves the old key or no key opening it, never neither, and no key never harms it (${TRIALS} trials)`, (t) =>
  rekeyKillTrials(h, t, 'null', { key: 'decrypt me' }, {}));
