// Which e2e test files run in the Node engine (RESQ_ENGINE=node,
// node-page.mjs), and why the others cannot. Every file not named here runs
// there, so a new test file runs in Node until it is named here with its
// reason. A test that cannot run in a file that does is skipped where it
// is, with `notInNode(reason)` (harness.mjs).
//
//   node tests/e2e/node-engine.mjs        the files to run, one a line
//   node tests/e2e/node-engine.mjs --why  the files left out, with why

import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const TABS = 'several tabs share one database: Node has no tabs, and a memory database is private to its open()';
const STORED = 'its database is stored and opened again (reopens, reloads, checkpoints): Node keeps databases in memory only';
const SESSIONS = 'sessions that read the last commit beside a writer need a stored database (WAL): Node keeps none';
const PROBE = "it reads the worker's state through the probe worker, a browser worker";
const KILLED = 'a browser killed, crashed or cut off mid-write: there is no browser';
const KEY = 'encryption at rest is for stored databases: Node keeps none';
const IDB = "IndexedDB storage, a browser's";
const CHROMIUM_PASS = 'runs once, in the Chromium pass (it starts Node or a bundler itself)';

/** Test files that do not run in Node, and why. */
export const NOT_IN_NODE = {
  'backup-tabs.test.mjs': TABS,
  'backup.test.mjs': 'it imports into a database by name, which Node refuses (there importDatabase takes an open Database)',
  'checkpoint.test.mjs': STORED,
  'consumer.test.mjs': CHROMIUM_PASS,
  'crash.test.mjs': KILLED,
  'death.test.mjs': `${PROBE}, and the page's Worker`,
  'demo.test.mjs': "the demo app's UI in a browser page",
  'encryption-crash.test.mjs': KILLED,
  'encryption-temp.test.mjs': KEY,
  'encryption.test.mjs': KEY,
  'failover.test.mjs': TABS,
  'hostile.test.mjs': "it misuses the page's own Worker and window",
  'idb-memory.test.mjs': IDB,
  'idb-quota.test.mjs': IDB,
  'idb.test.mjs': IDB,
  'inspector.test.mjs': "a custom element in a page's DOM (each browser pass also imports it in Node, where it defines nothing)",
  'isolation.test.mjs': TABS,
  'kill.test.mjs': KILLED,
  'nextjs.test.mjs': CHROMIUM_PASS,
  'node.test.mjs': CHROMIUM_PASS,
  'persistence.test.mjs': STORED,
  'powerloss-idb.test.mjs': KILLED,
  'powerloss.test.mjs': KILLED,
  'quota.test.mjs': "the origin's storage quota, a browser's",
  'rekey-kill.test.mjs': KILLED,
  'rekey.test.mjs': KEY,
  'sessions.test.mjs': SESSIONS,
  'snapshots.test.mjs': `${SESSIONS}; ${PROBE}`,
  'soak.test.mjs': PROBE,
  'tabs.test.mjs': TABS,
  'timeout.test.mjs': TABS,
  'vitest-example.test.mjs': CHROMIUM_PASS,
  'watch.test.mjs': `${PROBE} (node.test.mjs checks watch() in Node)`,
};

const dir = import.meta.dirname;
const files = readdirSync(dir).filter((f) => f.endsWith('.test.mjs'));
for (const f of Object.keys(NOT_IN_NODE)) if (!files.includes(f)) throw new Error(`node-engine.mjs names ${f}, which is not a test file`);

/** The test files that run in Node, as paths. */
export const IN_NODE = files.filter((f) => !(f in NOT_IN_NODE)).map((f) => join(dir, f));

if (process.argv[1] === import.meta.filename) {
  if (process.argv[2] === '--why') for (const [f, why] of Object.entries(NOT_IN_NODE)) console.log(`${f}: ${why}`);
  else for (const f of IN_NODE) console.log(f);
}
