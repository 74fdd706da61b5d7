// Issue "media": readBlob of a 1 MB range from the middle of a 256 MB value
// against reading a 1 MB value whole, same database, both through readBlob
// and the 1 MB value also through query(). Two passes, order flipped.
import { open } from 'resq-wasm';
import { time, MB } from './measure.js';

let db;
async function setup() {
  if (db) return;
  db = await open(`bench-ranged-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
  // 256 MB written by SQLite itself (zeroblob), then marked in the middle.
  await db.execute('INSERT INTO v(id, data) VALUES (1, zeroblob(268435456)), (2, randomblob(1048576))');
}

export async function run({ order = ['range', 'whole'] } = {}) {
  await setup();
  const ways = {
    range: ['1 MB range at 128 MB of a 256 MB value (readBlob)', () => db.readBlob('v', 'data', 1, { offset: 128 * MB, length: MB })],
    whole: ['a 1 MB value whole (readBlob)', () => db.readBlob('v', 'data', 2)],
    query: ['a 1 MB value whole (query)', () => db.query('SELECT data FROM v WHERE id = 2')],
  };
  const rows = [];
  for (const k of [...order, 'query']) {
    const [label, fn] = ways[k];
    const got = await fn();
    if ((got instanceof Uint8Array ? got : got[0].data).length !== MB) throw new Error("wrong length");
    rows.push({ workload: label, ...(await time(fn, { n: 30, warmup: 3 })) });
  }
  return rows;
}

export const passes = [{ order: ['range', 'whole'] }, { order: ['whole', 'range'] }];
