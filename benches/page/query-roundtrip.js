// Issue "foundation": median `query` round trip from the page, 1 row and
// 10,000 rows of (INTEGER, REAL, 50-char TEXT, 64-byte BLOB, NULL), with the
// floor of a bare worker echoing the same JSON bytes beside it.
import { open } from 'resq-wasm';
import { time, echoWorker } from './measure.js';

export async function run() {
  const db = await open(':memory:');
  await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, r REAL, s TEXT, b BLOB, n NULL)');
  const blob = crypto.getRandomValues(new Uint8Array(64));
  const sets = Array.from({ length: 10000 }, (_, i) => [i * 0.5, 'x'.repeat(50), blob]);
  await db.executeBatch('INSERT INTO t(r, s, b) VALUES (?, ?, ?)', sets);
  const echo = echoWorker();
  const rows = [];
  for (const count of [1, 10000]) {
    const sql = `SELECT * FROM t LIMIT ${count}`;
    const got = await db.query(sql);
    if (got.length !== count || got[0].b.length !== 64) throw new Error('wrong answer');
    const bytes = await db.queryBytes(sql);
    const n = count === 1 ? 200 : 20;
    rows.push({ workload: `query ${count} row(s)`, ...(await time(() => db.query(sql), { n })) });
    rows.push({ workload: `queryBytes ${count} row(s)`, ...(await time(() => db.queryBytes(sql), { n })) });
    rows.push({
      workload: `floor: echo ${bytes.byteLength} JSON bytes (transfer both ways)`,
      ...(await time(
        () => {
          const c = bytes.slice();
          return echo.roundTrip({ bytes: c, transferBack: true }, [c.buffer]);
        },
        { n },
      )),
    });
  }
  echo.close();
  await db.close();
  return rows;
}
