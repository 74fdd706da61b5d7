// Which of the compare run's write rows that are slower than before issue
// 29 (experiment 032) pay for the checkpoint copy the sample before them
// left (experiment 034): each write timed back to back, as the compare run
// does, and with a pause outside the timing after each sample, long enough
// for the idle checkpoint to copy the WAL into the database file. In each
// build given (a package path), so that the build before WAL runs in the
// same session. Two passes, the builds and ways in opposite orders.
import { MB, randomBytes, time } from './measure.js';

const PAUSE_MS = 1000;
const TEXT50 = 'resq-wasm benchmark row text, fifty characters...'.padEnd(50, '.');

/** The compare run's rows, each a setup and one timed sample. */
const WORKLOADS = {
  'W1 INSERT 8 MB': {
    n: 9,
    setup: async (db) => {
      await db.execute('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
      return randomBytes(8 * MB);
    },
    sample: (db, bytes) => db.execute('INSERT INTO w(data) VALUES (?)', [bytes]),
  },
  'W4 10,000 rows, one transaction': {
    n: 9,
    setup: async (db) => {
      await db.execute('CREATE TABLE r(id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB, n NULL)');
      const blob = randomBytes(64);
      return Array.from({ length: 10000 }, (_, i) => [i, i * 0.25, TEXT50, blob, null]);
    },
    sample: async (db, sets) => {
      await db.execute('DELETE FROM r');
      await db.executeBatch('INSERT INTO r(i, f, s, b, n) VALUES (?, ?, ?, ?, ?)', sets);
    },
  },
  'W5 8 MB as 128 rows, one transaction': {
    n: 9,
    setup: async (db) => {
      await db.execute('CREATE TABLE a(id INTEGER PRIMARY KEY, data BLOB)');
      return Array.from({ length: 128 }, () => [randomBytes(64 * 1024)]);
    },
    sample: (db, sets) => db.executeBatch('INSERT INTO a(data) VALUES (?)', sets),
  },
};

const WAYS = { 'back to back': false, [`a ${PAUSE_MS} ms pause after each`]: true };

async function sample(build, workload, pause) {
  const { open } = await import(`${build}index.js`);
  const w = WORKLOADS[workload];
  const db = await open(`copy-diag-${Math.random().toString(36).slice(2, 8)}.db`);
  const input = await w.setup(db);
  const after = pause ? () => new Promise((r) => setTimeout(r, PAUSE_MS)) : undefined;
  const r = await time(() => w.sample(db, input), { n: w.n, warmup: 1, after });
  await db.close();
  return r;
}

export async function run({ builds = ['/pkg/'], workloads = Object.keys(WORKLOADS), flip = false } = {}) {
  const rows = [];
  const ways = flip ? Object.keys(WAYS).reverse() : Object.keys(WAYS);
  for (const workload of workloads)
    for (const build of flip ? [...builds].reverse() : builds)
      for (const way of ways) rows.push({ workload, config: `${build}, ${way}`, ...(await sample(build, workload, WAYS[way])) });
  return rows;
}

export const passes = [{}, { flip: true }];
