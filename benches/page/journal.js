// Journal modes and page sizes side by side (benches/experiments/011-commit-cost.md):
// the same package, each configuration set by PRAGMA on a new database, W1
// at four sizes and W4, with the raw OPFS floor in the same pass.
import { open } from 'resq-wasm';
import { time, floorWorker, randomBytes, label, KB, MB } from './measure.js';

const SIZES = [4 * KB, 64 * KB, MB, 8 * MB];
const iterations = (size) => (size >= 8 * MB ? 8 : size >= MB ? 15 : 30);
export const CONFIGS = {
  truncate: [],
  persist: ['PRAGMA journal_mode=PERSIST'],
  wal: ['PRAGMA locking_mode=EXCLUSIVE', 'PRAGMA journal_mode=WAL'],
  // No checkpoint during the run: the cost of a commit alone.
  'wal-nockpt': ['PRAGMA locking_mode=EXCLUSIVE', 'PRAGMA journal_mode=WAL', 'PRAGMA wal_autocheckpoint=0'],
};

async function one(config, pageSize, rows, bytesBySize) {
  const db = await open(`journal-${config}-${pageSize}-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute(`PRAGMA page_size=${pageSize}`);
  for (const p of CONFIGS[config]) await db.query(p);
  await db.execute('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
  const tag = `${config} ${pageSize / KB}K`;
  for (const size of SIZES) {
    const bytes = bytesBySize.get(size);
    const m = await time(() => db.execute('INSERT INTO w(data) VALUES (?)', [bytes]), { n: iterations(size), warmup: 2 });
    rows.push({ workload: 'W1', row: `INSERT ${label(size)}`, config: tag, ...m });
  }
  await db.execute('CREATE TABLE r(id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB, n NULL)');
  const blob = randomBytes(64);
  const text = 'resq-wasm benchmark row text, fifty characters...'.padEnd(50, '.');
  const sets = Array.from({ length: 10000 }, (_, i) => [i, i * 0.25, text, blob, null]);
  const w4 = await time(
    async () => {
      await db.execute('DELETE FROM r');
      await db.executeBatch('INSERT INTO r(i, f, s, b, n) VALUES (?, ?, ?, ?, ?)', sets);
    },
    { n: 5, warmup: 1 },
  );
  rows.push({ workload: 'W4', row: '10,000 rows', config: tag, ...w4 });
  await db.close();
}

export async function run({ configs = Object.keys(CONFIGS), pageSizes = [8192] } = {}) {
  const rows = [];
  const bytesBySize = new Map(SIZES.map((s) => [s, randomBytes(s)]));
  const floor = floorWorker();
  for (const size of SIZES) {
    rows.push({
      workload: 'W1',
      row: `INSERT ${label(size)}`,
      config: 'floor',
      ...(await time(() => floor.write(bytesBySize.get(size).slice()), { n: iterations(size), warmup: 2 })),
    });
  }
  await floor.close();
  for (const c of configs) for (const p of pageSizes) await one(c, p, rows, bytesBySize);
  return rows;
}

export const passes = [{}, { configs: Object.keys(CONFIGS).reverse() }];
