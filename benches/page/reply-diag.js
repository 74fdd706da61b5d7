// Experiment 028: the per-call path, in each of `engines` (builds of the
// package as paths, or peers), two passes with the order flipped: W3's
// rows (1, 100 and 10,000 of compare.js's shape), and for the builds a
// 1-row `queryBytes`, a 16 KB `readBlob` (a gallery's thumbnail) and
// SELECTs of one 64 KB and one 1 MB BLOB, where a reply's buffers are
// either moved or copied.
import { randomBytes, time } from './measure.js';

const TEXT50 = 'resq-wasm benchmark row text, fifty characters...'.padEnd(50, '.');

async function openAny(engine, name) {
  if (engine.startsWith('/')) {
    const db = await (await import(`${engine}index.js`)).open(name);
    return {
      query: (s, p) => db.query(s, p),
      exec: (s, p) => db.execute(s, p),
      batch: (s, p) => db.executeBatch(s, p),
      close: () => db.close(),
      db,
    };
  }
  const e = await (await import('../peers/client.js')).openPeer(engine, name);
  return { query: e.query, exec: e.exec, batch: e.batch, close: () => e.close({ drop: true }) };
}

async function once(engine, pass, n) {
  const e = await openAny(engine, `reply-${Math.random().toString(36).slice(2, 8)}.db`);
  await e.exec('CREATE TABLE r(id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB, n NULL)');
  const blob = randomBytes(64);
  await e.batch(
    'INSERT INTO r(i, f, s, b, n) VALUES (?, ?, ?, ?, ?)',
    Array.from({ length: 10000 }, (_, i) => [i, i * 0.25, TEXT50, blob, null]),
  );
  const rows = [];
  const row = (workload, m) => rows.push({ workload, config: `${engine}, pass ${pass}`, ...m });
  for (const count of [1, 100, 10000]) {
    const sql = `SELECT id, i, f, s, b, n FROM r ORDER BY id LIMIT ${count}`;
    row(`W3 ${count} rows`, await time(() => e.query(sql), { n: count === 10000 ? 10 : n }));
  }
  if (e.db) {
    const db = e.db;
    row('queryBytes 1 row', await time(() => db.queryBytes('SELECT id, i, f, s, b, n FROM r ORDER BY id LIMIT 1'), { n }));
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('INSERT INTO m(id, data) VALUES (1, ?), (2, ?), (3, ?)', [
      randomBytes(16 << 10),
      randomBytes(64 << 10),
      randomBytes(1 << 20),
    ]);
    row('readBlob 16 KB', await time(() => db.readBlob('m', 'data', 1), { n }));
    row('SELECT one 64 KB BLOB', await time(() => db.query('SELECT data FROM m WHERE id = 2'), { n: 50 }));
    row('SELECT one 1 MB BLOB', await time(() => db.query('SELECT data FROM m WHERE id = 3'), { n: 20 }));
  }
  await e.close();
  return rows;
}

export async function run({ engines = ['/pkg/'], n = 200 } = {}) {
  const rows = [];
  for (const pass of [1, 2]) {
    for (const engine of pass === 1 ? engines : [...engines].reverse()) rows.push(...(await once(engine, pass, n)));
  }
  return rows;
}
