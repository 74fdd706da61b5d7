// Kill trials on IndexedDB storage (kill-kit.mjs; kill.test.mjs runs them
// on OPFS): `storage: 'idb'`, where a commit is acknowledged once its
// IndexedDB transaction completed, a plain database and an encrypted one.
// WebKitGTK has no way to crash a renderer through WebDriver, and its
// databases are in IndexedDB already: these trials run in Chromium and
// Firefox.

import { before, after, test } from 'node:test';
import { ENGINE, start } from './harness.mjs';
import { TRIALS, killTrials } from './kill-kit.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

for (const key of [null, 'kill trials key']) {
  const what = key ? ', encrypted' : '';
  test(
    `kill trials in IndexedDB${what}: ${TRIALS} workers stopped or renderers crashed mid-write; every acknowledged row survives, integrity ok`,
    { skip: ENGINE === 'webkit' && 'WebKitGTK: no renderer crash through WebDriver' },
    (t) => killTrials(h, t, { ...(key ? { key } : {}), storage: 'idb' }, `kill-trials-idb${key ? '-encrypted' : ''}.db`),
  );
}
