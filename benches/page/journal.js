// Journal modes side by side (benches/experiments/011-commit-cost.md,
// 020-wal-sessions.md): the same package, W1 at four sizes and W4, with the
// raw OPFS floor in the same pass. `wal` is the package as it ships (WAL,
// checkpoints when idle or past the WAL's bound); `truncate` is the
// rollback journal it used before, set by PRAGMA once the database has its
// table (a new database moves to WAL at its first commit).
import { open } from 'resq-wasm';
import { time, floorWorker, randomBytes, label, KB, MB } from './measure.js';

const SIZES = [4 * KB, 64 * KB, MB, 8 * MB];
const iterations = (size) => (size >= 8 * MB ? 8 : size >= MB ? 15 : 30);
export const CONFIGS = {
  wal: [],
  truncate: ['PRAGMA journal_mode=TRUNCATE'],
};

async function one(config, pageSize, rows, bytesBySize) {
  const db = await open(`journal-${config}-${pageSize}-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute(`PRAGMA page_size=${pageSize}`);
  await db.execute('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
  for (const p of CONFIGS[config]) await db.query(p);
  const [{ journal_mode: mode }] = await db.query('PRAGMA journal_mode');
  if (mode !== config) throw new Error(`${config}: the database is in ${mode} mode`);
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
