// A small commit on IndexedDB storage (experiment 043): one-row INSERTs of
// 4 KB and 64 KB, each its own commit, timed in two builds of the package
// (`engines`: where each one's index.js is served, benches/variants.sh),
// with the raw floor beside them: the same bytes put in a bare worker's
// readwrite transaction with durability 'strict'. Two passes, the builds
// in opposite orders.
import { time, floorWorker, randomBytes, KB } from './measure.js';

const SIZES = [4 * KB, 64 * KB];
const N = 40;

async function inserts(engine, size) {
  const { open } = await import(`${engine}index.js`);
  const db = await open(`idb-commit-${Math.random().toString(36).slice(2, 8)}.db`, { storage: 'idb' });
  await db.execute('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
  const bytes = randomBytes(size);
  const r = await time(() => db.execute('INSERT INTO w(data) VALUES (?)', [bytes]), { n: N, warmup: 3 });
  const [{ n }] = await db.query('SELECT count(*) AS n FROM w');
  if (n !== N + 3) throw new Error(`wrong answer: ${n} rows`);
  await db.close({ drop: true });
  return r;
}

export async function run({ engines }) {
  const rows = [];
  const floor = floorWorker();
  for (const size of SIZES) {
    const bytes = randomBytes(size);
    const f = await time(() => floor.idbWrite(bytes.slice()), { n: N, warmup: 3 });
    rows.push({ workload: `INSERT ${size / KB} KB`, config: 'floor: raw IndexedDB put', ...f });
    for (const e of engines) rows.push({ workload: `INSERT ${size / KB} KB`, config: e, ...(await inserts(e, size)) });
  }
  await floor.close();
  return rows;
}

export const passes = [{ engines: ['/target/variants/before/', '/pkg/'] }, { engines: ['/pkg/', '/target/variants/before/'] }];
