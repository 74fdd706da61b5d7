// Encrypted against plain (`npm run bench -- encryption`): the same
// workloads on an OPFS database opened without a key, with a passphrase
// and with 32 raw bytes, in the same pass, the order flipped in the
// second; `open` timed for each (a passphrase's key derivation runs there).
// `{ pkg }` runs another build of the package (benches/variants.sh).
// W2 reads a value the page cache still holds; "cold" reads it after the
// database is opened again, so every page is read and decrypted.
import { time, randomBytes, label, KB, MB } from './measure.js';

const SIZES = [4 * KB, 64 * KB, MB, 8 * MB];
const iterations = (size) => (size >= 8 * MB ? 8 : size >= MB ? 15 : 30);
export const KEYS = {
  plain: undefined,
  passphrase: 'correct horse battery staple',
  raw: new Uint8Array(32).map((_, i) => i * 7 + 1),
};

async function one(open, config, rows, bytesBySize) {
  const name = `enc-${config}-${Math.random().toString(36).slice(2, 8)}.db`;
  const options = KEYS[config] === undefined ? {} : { key: KEYS[config] };
  const first = await time(async () => (await open(name, options)).close(), { n: 1, warmup: 0 });
  rows.push({ workload: 'open', row: 'a new database', config, ...first });
  const again = await time(async () => (await open(name, options)).close(), { n: 5, warmup: 1 });
  rows.push({ workload: 'open', row: 'again, then close', config, ...again });
  let db = await open(name, options);
  await db.execute('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
  for (const size of SIZES) {
    const bytes = bytesBySize.get(size);
    let id = 0;
    const w1 = await time(async () => (id = (await db.execute('INSERT INTO w(data) VALUES (?)', [bytes])).lastInsertRowid), {
      n: iterations(size),
      warmup: 2,
    });
    rows.push({ workload: 'W1', row: `INSERT ${label(size)}`, config, ...w1 });
    const w2 = await time(() => db.query('SELECT data FROM w WHERE id = ?', [id]), { n: iterations(size), warmup: 2 });
    rows.push({ workload: 'W2', row: `SELECT ${label(size)}`, config, ...w2 });
  }
  await db.close();
  for (const size of [MB, 8 * MB]) {
    const cold = [];
    for (let i = 0; i < 5; i++) {
      const again = await open(name, options);
      const t0 = performance.now();
      await again.query('SELECT data FROM w WHERE length(data) = ? LIMIT 1', [size]);
      cold.push(performance.now() - t0);
      await again.close();
    }
    cold.sort((a, b) => a - b);
    rows.push({ workload: 'W2', row: `SELECT ${label(size)}, cold`, config, median: cold[2], p95: cold[4], n: 5 });
  }
  db = await open(name, options);
  await db.execute('CREATE TABLE r(id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB, n NULL)');
  const text = 'resq-wasm benchmark row text, fifty characters...'.padEnd(50, '.');
  await db.executeBatch(
    'INSERT INTO r(i, f, s, b, n) VALUES (?, ?, ?, ?, ?)',
    Array.from({ length: 10000 }, (_, i) => [i, i * 0.25, text, randomBytes(64), null]),
  );
  const w3 = await time(() => db.query('SELECT id, i, f, s, b, n FROM r'), { n: 10, warmup: 2 });
  rows.push({ workload: 'W3', row: 'SELECT 10,000 rows', config, ...w3 });
  await db.close();
}

export async function run({ configs = Object.keys(KEYS), pkg = 'resq-wasm' } = {}) {
  const { open } = await import(pkg);
  const rows = [];
  const bytesBySize = new Map(SIZES.map((s) => [s, randomBytes(s)]));
  for (const c of configs) await one(open, c, rows, bytesBySize);
  return rows;
}

export const passes = [{}, { configs: Object.keys(KEYS).reverse() }];
