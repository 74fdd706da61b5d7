// What a test needs of its engine, and what it checks where the engine
// lacks it. One thing varies today: OPFS. WebKitGTK's MiniBrowser (the e2e
// layer's third engine) cannot give a worker a sync access handle, nor, in
// its automation sessions, the OPFS root, so no database opens there with
// `storage: 'opfs'`; memory databases, workers and the page API work.
//
//   import { test } from './engines.mjs';
//   test('an OPFS thing', { opfs: true }, async (t) => { … });
//   const test = opfsTests();           // every test of this file needs OPFS
//
// A test with `opfs` (true, or the open() options it uses, such as a key)
// runs as written where there is OPFS. Where there is none it checks what a
// user of that browser meets instead: open() of an OPFS database is refused
// with RESQ_UNSUPPORTED naming the browser's reason, within 20 s, and the
// page opens a memory database right after. Other tests run everywhere;
// harness.mjs's `SCRATCH` is the storage of their databases (util.mjs's
// withDb uses it).

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
    { name: dbName(t), options: options === true ? {} : options },
  );
  assert.notEqual(r.refused.hung, true, 'open() of an OPFS database settles within 20 s');
  assert.equal(r.refused.ok, false, 'open() of an OPFS database is refused');
  assert.equal(r.refused.error.isResqError, true);
  assert.equal(r.refused.error.code, 'RESQ_UNSUPPORTED', r.refused.error.message);
  // The browser's own reason: the DOMException's name and message.
  assert.match(r.refused.error.message, /OPFS.*\b[A-Z][a-z]+Error\b: \S/);
  assert.deepEqual(r.next, { ok: true, value: 1 }, 'a memory database opens on the same page after');
}

/** node:test's test(), plus the option `opfs` (see the top of this file). */
export function test(name, options, fn) {
  if (typeof options === 'function') return nodeTest(name, options);
  const { opfs, ...rest } = options;
  if (!opfs || !NO_OPFS) return nodeTest(name, rest, fn);
  return nodeTest(`${name} [${ENGINE}: no OPFS, so open() is refused]`, rest, (t) => refusesOpfs(t, opfs));
}

/** A test() whose tests all need OPFS: `opfs` (true or open() options) unless a test says otherwise. */
export function opfsTests(opfs = true) {
  return (name, options, fn) => (typeof options === 'function' ? test(name, { opfs }, options) : test(name, { opfs, ...options }, fn));
}
