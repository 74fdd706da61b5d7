// Experiment 006: where a Blob/File parameter should stop being read whole
// and bound as bytes, and start streaming (placeholder, resize, chunked
// writes). The same File sizes are stored both ways in one run, order
// flipped. The ways exist only in the experiment's build: apply
// benches/experiments/006-file-bind-limit.patch, and a database whose name holds
// `ab-bytes` binds every Blob whole while `ab-stream` streams every Blob;
// without the patch both rows follow the package's rule (an A/A control).
// Timed: one INSERT of a File (median of 7, after 1 untimed). Also: the
// worker's wasm memory after the inserts (it never shrinks: the peak).
import { open } from 'resq-wasm';
import { probe, randomBytes, KB, MB } from './measure.js';

const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const SIZES = [64 * KB, 512 * KB, 1 * MB, 2 * MB, 4 * MB, 8 * MB, 16 * MB];
const REPS = 7;

async function store(way, size) {
  const name = `bench-limit-ab-${way}-${Math.random().toString(36).slice(2, 8)}.db`;
  const db = await open(name);
  await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
  const file = new File([randomBytes(size)], 'clip.bin');
  const ms = [];
  for (let r = 0; r <= REPS; r++) {
    const t0 = performance.now();
    await db.execute('INSERT INTO v(name, data) VALUES (?, ?)', [file.name, file]);
    if (r > 0) ms.push(performance.now() - t0);
    await db.execute('DELETE FROM v');
  }
  const memory = await probe(name, 'memory');
  await db.close();
  return {
    workload: `INSERT a ${size >= MB ? `${size / MB} MB` : `${size / KB} KB`} File`,
    config: way,
    median: median(ms),
    p95: Math.max(...ms),
    n: REPS,
    wasm: memory,
  };
}

export const passes = [{ ways: ['bytes', 'stream'] }, { ways: ['stream', 'bytes'] }];

export async function run({ ways = ['bytes', 'stream'] } = {}) {
  const rows = [];
  for (const size of SIZES) for (const way of ways) rows.push(await store(way, size));
  return rows;
}
