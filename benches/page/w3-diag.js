// Where a one-row `query` spends its time, warm (the compare run's
// "SELECT 1 row, after 500 calls", 2× the peers'): the same row as objects
// with and without its 64-byte BLOB, as JSON bytes, and `SELECT 1`.
// Two passes, the order flipped.
import { open } from 'resq-wasm';
import { time, randomBytes } from './measure.js';

const TEXT50 = 'resq-wasm benchmark row text, fifty characters...'.padEnd(50, '.');
const WAYS = {
  'query, the row with its BLOB': (db) => db.query('SELECT id, i, f, s, b, n FROM r ORDER BY id LIMIT 1'),
  'query, the row without its BLOB': (db) => db.query('SELECT id, i, f, s, n FROM r ORDER BY id LIMIT 1'),
  'queryBytes, the row with its BLOB': (db) => db.queryBytes('SELECT id, i, f, s, b, n FROM r ORDER BY id LIMIT 1'),
  'query, SELECT 1': (db) => db.query('SELECT 1 AS x'),
  'execute, SELECT 1': (db) => db.execute('SELECT 1 AS x'),
};

export async function run({ order = Object.keys(WAYS) } = {}) {
  const db = await open(`w3-diag-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute('CREATE TABLE r(id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB, n NULL)');
  const blob = randomBytes(64);
  await db.executeBatch(
    'INSERT INTO r(i, f, s, b, n) VALUES (?, ?, ?, ?, ?)',
    Array.from({ length: 100 }, (_, i) => [i, i * 0.25, TEXT50, blob, null]),
  );
  const rows = [];
  for (const w of order) rows.push({ workload: 'W3 diag', config: w, ...(await time(() => WAYS[w](db), { n: 1000, warmup: 500 })) });
  await db.close();
  return rows;
}

export const passes = [{ order: Object.keys(WAYS) }, { order: Object.keys(WAYS).reverse() }];
