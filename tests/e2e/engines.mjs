// What a test needs of its engine, and what it checks where the engine
// lacks it. One thing varies today: OPFS sync access handles. WebKitGTK
// (the e2e layer's third engine) has OPFS directories and files but cannot
// give a worker a sync access handle, so a file name opens in IndexedDB
// there (the default storage), and `storage: 'opfs'` is refused.
//
//   import { test } from './engines.mjs';
//   test('an OPFS thing', { opfs: true }, async (t) => { … });
//   const test = opfsTests();           // every test of this file needs OPFS,
//   test('a stored thing', { opfs: false }, …);   // but this one
//
// A test with `opfs` (true, or the open() options it uses, such as a key)
// looks at OPFS itself: its pool files, its temp files, the writes that
// reach its sync access handles. It runs as written where there is OPFS.
// Where there is none it checks what a user of that browser meets instead:
// open() with `storage: 'opfs'` is refused with RESQ_UNSUPPORTED naming the
// browser's reason, within 20 s, and the page opens a memory database right
// after. Every other test runs everywhere, its file names in the engine's
// default storage (in Node, memory: node-page.mjs).

import { test as nodeTest, after } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE, NO_OPFS, start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

// One started app per test file for the refusal checks, made on first use.
let shared = null;
if (NO_OPFS) after(async () => (await shared)?.close());

async function refusesOpfs(t, options) {
  shared ??= start();
  const { page } = await shared;
  const r = await inPage(
    page,
    async ({ open, outcome }, { name, options }) => {
      const settled = outcome(open(name, options));
      const late = new Promise((resolve) => setTimeout(() => resolve({ hung: true }), 20_000));
      const refused = await Promise.race([settled, late]);
      const next = await outcome(open(':memory:').then(async (db) => (await db.query('SELECT 1 AS one'))[0].one));
      return { refused, next };
    },
    { name: dbName(t), options: { ...(options === true ? {} : options), storage: 'opfs' } },
  );
  assert.notEqual(r.refused.hung, true, 'open() of an OPFS database settles within 20 s');
  assert.equal(r.refused.ok, false, 'open() of an OPFS database is refused');
  assert.equal(r.refused.error.isResqError, true);
  assert.equal(r.refused.error.code, 'RESQ_UNSUPPORTED', r.refused.error.message);
  // The browser's own reason: the DOMException's name and message; in
  // Node, the way out.
  assert.match(r.refused.error.message, ENGINE === 'node' ? /in memory only: open\(':memory:'\)/ : /OPFS.*\b[A-Z]\w*Error\b: \S/);
  assert.deepEqual(r.next, { ok: true, value: 1 }, 'a memory database opens on the same page after');
}

/** node:test's test(), plus the option `opfs` (see the top of this file). */
export function test(name, options, fn) {
  if (typeof options === 'function') return nodeTest(name, options);
  const { opfs, ...rest } = options;
  if (!opfs || !NO_OPFS) return nodeTest(name, rest, fn);
  const lacks = ENGINE === 'node' ? 'no OPFS' : 'no OPFS sync access handles';
  return nodeTest(`${name} [${ENGINE}: ${lacks}, so storage: 'opfs' is refused]`, rest, (t) => refusesOpfs(t, opfs));
}

/** A test() whose tests all need OPFS: `opfs` (true or open() options) unless a test says otherwise. */
export function opfsTests(opfs = true) {
  return (name, options, fn) => (typeof options === 'function' ? test(name, { opfs }, options) : test(name, { opfs, ...options }, fn));
}
