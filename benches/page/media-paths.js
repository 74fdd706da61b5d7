// Experiment 005: the media paths changed in the second session, each A/B in
// one run, order flipped.
// - Using a staged blob: the worker reads the staged bytes straight from
//   memory or its temp file (new) vs through a `Blob`/`File` snapshot of
//   them, sliced and read with `arrayBuffer()` like any `Blob` parameter
//   (old). The old path exists only in the experiment's build: apply
//   benches/experiments/005-old-staged-path.patch, and a database whose name
//   contains `ab-old` takes it; without the patch both rows run the new
//   path (an A/A control). Timed: the INSERT that
//   uses the staged value. Control: the INSERT of the same bytes as one
//   Uint8Array (a path neither touches).
// - blobFile: assembled on the page from 4 MB `readBlob` calls (old) vs in
//   the worker, which sends a `Blob` handle (new); wall and main-thread busy.
import { open } from 'resq-wasm';
import { randomBytes, timeAndBusy, KB, MB } from './measure.js';

const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

async function stagedRows(path, mb, reps) {
  const db = await open(`bench-paths-${path === 'old' ? 'ab-old' : 'ab-new'}-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
  const chunks = Array.from({ length: (mb * MB) / (64 * KB) }, () => randomBytes(64 * KB));
  const use = [];
  const control = [];
  for (let r = 0; r < reps; r++) {
    const staged = await db.stageBlob();
    for (const c of chunks) await staged.append(c);
    let t0 = performance.now();
    await db.execute('INSERT INTO v(data) VALUES (?)', [staged]);
    use.push(performance.now() - t0);
    const whole = new Uint8Array(mb * MB);
    for (const [i, c] of chunks.entries()) whole.set(c, i * c.length);
    t0 = performance.now();
    await db.execute('INSERT INTO v(data) VALUES (?)', [whole]);
    control.push(performance.now() - t0);
    await db.execute('DELETE FROM v');
  }
  await db.close();
  return [
    { workload: `use a staged ${mb} MB value`, config: path, median: median(use), p95: Math.max(...use), n: reps },
    { workload: `control: INSERT ${mb} MB as one Uint8Array`, config: path, median: median(control), p95: Math.max(...control), n: reps },
  ];
}

async function blobFile(path) {
  const db = await open(`bench-paths-file-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
  await db.execute('INSERT INTO v VALUES (1, zeroblob(67108864))');
  const fn =
    path === 'new'
      ? () => db.blobFile('v', 'data', 1, { type: 'video/webm' })
      : async () => {
          const parts = [];
          for (let at = 0; at < 64 * MB; at += 4 * MB) parts.push(await db.readBlob('v', 'data', 1, { offset: at, length: 4 * MB }));
          return new Blob(parts, { type: 'video/webm' });
        };
  const r = await timeAndBusy(fn, { n: 6, warmup: 1 });
  await db.close();
  return { workload: 'blobFile of a 64 MB value', config: path, ...r };
}

export async function run({ order = ['old', 'new'], sizes = [2, 8, 64], reps = 5 } = {}) {
  const rows = [];
  for (const mb of sizes) for (const p of order) rows.push(...(await stagedRows(p, mb, mb > 8 ? 3 : reps)));
  for (const p of order) rows.push(await blobFile(p));
  return rows;
}

export const passes = [{ order: ['old', 'new'] }, { order: ['new', 'old'] }];
