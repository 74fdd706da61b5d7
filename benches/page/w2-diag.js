// Where a 1 MB one-BLOB `query` spends its time (the compare run's W2
// 1 MB): the value as a row, its length only, a 1 MB `readBlob`, and the
// same value after a pause (idle checkpoint finished). Two passes, flipped.
import { open } from 'resq-wasm';
import { time, randomBytes, MB } from './measure.js';

const WAYS = {
  'query, the 1 MB value': (db, id) => db.query('SELECT data FROM w WHERE id = ?', [id]),
  'query, length(data)': (db, id) => db.query('SELECT length(data) AS n FROM w WHERE id = ?', [id]),
  'readBlob, 1 MB': (db, id) => db.readBlob('w', 'data', id),
  'query, SELECT 1': (db) => db.query('SELECT 1 AS x'),
};

export async function run({ order = Object.keys(WAYS), size = MB, storage } = {}) {
  const db = await open(storage === 'memory' ? ':memory:' : `w2-diag-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
  let id;
  for (let i = 0; i < 30; i++) id = (await db.execute('INSERT INTO w(data) VALUES (?)', [randomBytes(size)])).lastInsertRowid;
  const rows = [];
  for (const w of order) rows.push({ workload: 'W2 diag', config: w, ...(await time(() => WAYS[w](db, id), { n: 60, warmup: 3 })) });
  await new Promise((r) => setTimeout(r, 2000));
  for (const w of order)
    rows.push({ workload: 'W2 diag, after 2 s', config: w, ...(await time(() => WAYS[w](db, id), { n: 60, warmup: 3 })) });
  await db.close();
  return rows;
}

export const passes = [{ order: Object.keys(WAYS) }, { order: Object.keys(WAYS).reverse(), storage: 'memory' }];
