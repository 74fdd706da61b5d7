// Which e2e test files each pass of `npm test` runs (scripts/test.sh), and
// why the others are left out. A pass runs every file not named for it
// here, so a new test file runs everywhere until it is named with its
// reason. A test that cannot run in a file that does is skipped where it
// is (`notInNode(reason)` in harness.mjs, `opfs` in engines.mjs).
//
//   node tests/e2e/passes.mjs <pass>        the files to run, one a line
//   node tests/e2e/passes.mjs <pass> --why  the files left out, with why

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

/** The Node pass (RESQ_ENGINE=node): test files that do not run there, and why. */
const NOT_IN_NODE = {
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
  'hostile-misuse.test.mjs': "it misuses the page's own Worker and window",
  'hostile.test.mjs': "it misuses the page's own Worker and window",
  'idb-memory.test.mjs': IDB,
  'idb-quota.test.mjs': IDB,
  'idb.test.mjs': IDB,
  'inspector.test.mjs': "a custom element in a page's DOM (each browser pass also imports it in Node, where it defines nothing)",
  'isolation.test.mjs': TABS,
  'kill-idb.test.mjs': KILLED,
  'kill.test.mjs': KILLED,
  'nextjs-webpack.test.mjs': CHROMIUM_PASS,
  'nextjs.test.mjs': CHROMIUM_PASS,
  'node.test.mjs': CHROMIUM_PASS,
  'persistence.test.mjs': STORED,
  'powerloss-idb.test.mjs': KILLED,
  'powerloss.test.mjs': KILLED,
  'quota.test.mjs': "the origin's storage quota, a browser's",
  'rekey-kill-plain.test.mjs': KILLED,
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

// The passes forced onto IndexedDB (chromium-idb, firefox-idb) run the
// suite again with every file name opening in IndexedDB. A file whose
// every database names its storage, or that opens none in the browser,
// does the same there as in the engine's own pass: it runs once, there.
// So does one that checks SQL and values, which IndexedDB does not change
// (WebKitGTK runs it on IndexedDB).
const OWN_PASS = "the same in the engine's own pass, which runs it";
const NAMES_IDB = `every database it opens asks for storage: 'idb' itself: ${OWN_PASS}`;
const SQL = "SQL's answers and how values map, the same on any storage: WebKitGTK's pass runs it on IndexedDB";
const HOSTILE =
  "bad input, refused whatever the storage, each row's database checked unchanged after it: WebKitGTK's pass runs it on IndexedDB";
const NOT_FORCED = {
  'consumer.test.mjs': CHROMIUM_PASS,
  'drizzle.test.mjs': SQL,
  'hostile-misuse.test.mjs': HOSTILE,
  'hostile.test.mjs': HOSTILE,
  'idb-memory.test.mjs': NAMES_IDB,
  'idb-quota.test.mjs': NAMES_IDB,
  'kill-idb.test.mjs': NAMES_IDB,
  'kill.test.mjs': "its OPFS trials would only be refused here, a refusal WebKitGTK's pass checks",
  'kysely.test.mjs': SQL,
  'nextjs-webpack.test.mjs': CHROMIUM_PASS,
  'nextjs.test.mjs': CHROMIUM_PASS,
  'node.test.mjs': CHROMIUM_PASS,
  'package.test.mjs': `what the tarball holds, and a page importing it: ${OWN_PASS}`,
  'powerloss-idb.test.mjs': NAMES_IDB,
  'shapes.test.mjs': SQL,
  'slt.test.mjs': SQL,
  'values.test.mjs': SQL,
  'vitest-example.test.mjs': CHROMIUM_PASS,
};

/**
 * The slowest files of a pass, slowest first: run.mjs starts them first, so
 * that the last minutes of a run are not one long file alone.
 */
export const SLOW = [
  'powerloss-idb.test.mjs',
  'rekey-kill.test.mjs',
  'rekey-kill-plain.test.mjs',
  'kill.test.mjs',
  'kill-idb.test.mjs',
  'hostile.test.mjs',
  'hostile-misuse.test.mjs',
  'powerloss.test.mjs',
  'nextjs.test.mjs',
  'nextjs-webpack.test.mjs',
  'failover.test.mjs',
  'frameworks.test.mjs',
  'demo.test.mjs',
  'idb.test.mjs',
];

/** Test files each pass leaves out, and why; a pass not named runs them all. */
export const LEFT_OUT = { node: NOT_IN_NODE, 'chromium-idb': NOT_FORCED, 'firefox-idb': NOT_FORCED };

const dir = import.meta.dirname;
const files = readdirSync(dir).filter((f) => f.endsWith('.test.mjs'));
for (const [pass, out] of Object.entries(LEFT_OUT))
  for (const f of Object.keys(out)) if (!files.includes(f)) throw new Error(`passes.mjs leaves ${f} out of ${pass}: it is not a test file`);

/** The test files pass `pass` runs, as paths. */
export const filesOf = (pass) => files.filter((f) => !(f in (LEFT_OUT[pass] ?? {}))).map((f) => join(dir, f));

if (process.argv[1] === import.meta.filename) {
  const [pass, why] = process.argv.slice(2);
  if (!pass) throw new Error('usage: node tests/e2e/passes.mjs <pass> [--why]');
  if (why === '--why') for (const [f, reason] of Object.entries(LEFT_OUT[pass] ?? {})) console.log(`${f}: ${reason}`);
  else for (const f of filesOf(pass)) console.log(f);
}
