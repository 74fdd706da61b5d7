// Experiment 027: W5's appends (an 8 MB value built by 128 UPDATEs of
// `data || ?`, 64 KB each) in each of `engines`, `reps` times per pass,
// two passes with the order flipped. Where the build is the one served
// with the probe worker (`/pkg/`), the OPFS calls made during the appends
// and during the checkpoints among them. p95 is the slowest append.
import { probe, randomBytes, KB } from './measure.js';

async function openAny(engine, name) {
  if (engine.startsWith('/')) {
    const db = await (await import(`${engine}index.js`)).open(name);
    return { exec: (s, p) => db.execute(s, p), query: (s, p) => db.query(s, p), close: () => db.close(), db };
  }
  const e = await (await import('../peers/client.js')).openPeer(engine, name);
  return { exec: e.exec, query: e.query, close: () => e.close({ drop: true }) };
}

async function once(engine, pass, chunks) {
  const name = `app-${Math.random().toString(36).slice(2, 8)}.db`;
  const e = await openAny(engine, name);
  await e.exec('CREATE TABLE a(id INTEGER PRIMARY KEY, data BLOB)');
  const probed = engine === '/pkg/';
  const c0 = probed ? await probe(name, 'opfsCalls') : null;
  const t0 = performance.now();
  const { lastInsertRowid: id } = await e.exec("INSERT INTO a(data) VALUES (x'')");
  // The slowest append: its own work and any checkpoint it waited for.
  let worst = 0;
  for (const c of chunks) {
    const t = performance.now();
    await e.exec('UPDATE a SET data = CAST(data || ? AS BLOB) WHERE id = ?', [c, id]);
    worst = Math.max(worst, performance.now() - t);
  }
  const ms = performance.now() - t0;
  let config = `${engine}, pass ${pass}`;
  if (probed) {
    const c1 = await probe(name, 'opfsCalls');
    const d = (k) => c1[k] - c0[k];
    config += `; OPFS: ${d('writes')} writes ${d('writeMs').toFixed(0)} ms, ${d('reads')} reads ${d('readMs').toFixed(0)} ms, ${d('flushes')} flushes ${d('flushMs').toFixed(0)} ms`;
  }
  const [{ n }] = await e.query('SELECT length(data) AS n FROM a WHERE id = ?', [id]);
  if (n !== 128 * 64 * KB) throw new Error(`wrong length ${n}`);
  await e.close();
  return { workload: 'W5', row: '8 MB by 128 × data || ?', config, median: ms, p95: worst, n: 1 };
}

// `inserts`: W1's shape instead, `count` INSERTs of one `size`-byte value
// into one table, each timed, with the OPFS calls of each.
async function inserts(engine, pass, size, count) {
  const name = `ins-${Math.random().toString(36).slice(2, 8)}.db`;
  const e = await openAny(engine, name);
  await e.exec('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
  const bytes = randomBytes(size);
  const probed = engine === '/pkg/';
  const rows = [];
  for (let i = 0; i < count; i++) {
    const c0 = probed ? await probe(name, 'opfsCalls') : null;
    const t0 = performance.now();
    await e.exec('INSERT INTO w(data) VALUES (?)', [bytes]);
    const ms = performance.now() - t0;
    let config = `${engine}, pass ${pass}, #${i + 1}`;
    if (probed) {
      const c1 = await probe(name, 'opfsCalls');
      const d = (k) => c1[k] - c0[k];
      config += `; OPFS: ${d('writes')} writes ${d('writeMs').toFixed(1)} ms, ${d('reads')} reads, ${d('flushes')} flushes ${d('flushMs').toFixed(1)} ms`;
    }
    rows.push({ workload: 'W1', row: `INSERT ${size} B`, config, median: ms, n: 1 });
  }
  await e.close();
  return rows;
}

export async function run({ engines = ['/pkg/', 'sqlite-wasm'], reps = 3, size = 0, count = 10 } = {}) {
  if (size) {
    const rows = [];
    for (const pass of [1, 2])
      for (const engine of pass === 1 ? engines : [...engines].reverse()) rows.push(...(await inserts(engine, pass, size, count)));
    return rows;
  }
  const chunks = Array.from({ length: 128 }, () => randomBytes(64 * KB));
  const rows = [];
  for (const pass of [1, 2]) {
    for (const engine of pass === 1 ? engines : [...engines].reverse()) {
      for (let i = 0; i < reps; i++) rows.push(await once(engine, pass, chunks));
    }
  }
  return rows;
}
