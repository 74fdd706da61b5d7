// Whether the compare run's W1 INSERT 8 MB pays for the checkpoint the
// sample before it left (experiment 033): the same 8 MB INSERT timed back
// to back, as the compare run does, and with a pause outside the timing
// after each sample, long enough for the idle checkpoint to copy the WAL
// into the database file. Two passes, the order flipped.
import { open } from 'resq-wasm';
import { randomBytes, MB, time } from './measure.js';

const PAUSE_MS = 1000;
const N = 15;

function sample(db, bytes, pause) {
  const after = pause ? () => new Promise((r) => setTimeout(r, PAUSE_MS)) : undefined;
  return time(() => db.execute('INSERT INTO w(data) VALUES (?)', [bytes]), { n: N, warmup: 2, after });
}

const WAYS = { 'back to back': false, [`a ${PAUSE_MS} ms pause after each`]: true };

export async function run({ order = Object.keys(WAYS) } = {}) {
  const bytes = randomBytes(8 * MB);
  const rows = [];
  for (const w of order) {
    const db = await open(`w1-diag-${Math.random().toString(36).slice(2, 8)}.db`);
    await db.execute('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
    rows.push({ workload: 'W1 8 MB diag', config: w, ...(await sample(db, bytes, WAYS[w])) });
    await db.close();
  }
  return rows;
}

export const passes = [{}, { order: Object.keys(WAYS).reverse() }];
