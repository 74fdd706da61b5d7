// Experiment 004: building a value from chunks, on OPFS, three ways in one
// run: (a) `UPDATE … SET data = CAST(data || ? AS BLOB)` per chunk, (b)
// `stageBlob()` + one INSERT, (c) one INSERT of the whole value (the floor).
// Bytes written are counted in the worker at the VFS boundary (every OPFS
// SyncAccessHandle.write: database, journal, temp files) by the probe worker.
import { open } from 'resq-wasm';
import { floorWorker, probe, randomBytes, KB, MB } from './measure.js';

async function build(way, chunks) {
  const name = `bench-stage-${way}-${Math.random().toString(36).slice(2, 8)}.db`;
  const db = await open(name);
  await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
  const before = await probe(name, 'written');
  const t0 = performance.now();
  if (way === 'a: data || ? per chunk') {
    await db.execute("INSERT INTO v(id, data) VALUES (1, x'')");
    for (const c of chunks) await db.execute('UPDATE v SET data = CAST(data || ? AS BLOB) WHERE id = 1', [c]);
  } else if (way === 'b: stageBlob + one INSERT') {
    const staged = await db.stageBlob();
    for (const c of chunks) await staged.append(c);
    await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [staged]);
  } else if (way === "b'': stageBlob, pipeTo(writable)") {
    let i = 0;
    const source = new ReadableStream({ pull: (c) => (i < chunks.length ? c.enqueue(chunks[i++]) : c.close()) });
    const staged = await db.stageBlob();
    await source.pipeTo(staged.writable);
    await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [staged]);
  } else if (way === "b': stageBlob, appends not awaited") {
    // As a MediaRecorder handler appends: calls complete in order, so the
    // INSERT runs after the last append without waiting on each.
    const staged = await db.stageBlob();
    for (const c of chunks) staged.append(c);
    await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [staged]);
  } else {
    const whole = new Uint8Array(chunks.length * chunks[0].length);
    for (const [i, c] of chunks.entries()) whole.set(c, i * c.length);
    await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [whole]);
  }
  const ms = performance.now() - t0;
  const [opfsBytesWritten, wasmMemoryBytes] = [await probe(name, 'written'), await probe(name, 'memory')];
  const got = await db.readBlob('v', 'data', 1, { offset: (chunks.length - 1) * chunks[0].length });
  const last = chunks[chunks.length - 1];
  if (got.length !== last.length || got.some((x, i) => x !== last[i])) throw new Error(`wrong bytes: ${way}`);
  await db.close();
  return { ms, written: opfsBytesWritten - before, wasm: wasmMemoryBytes };
}

/**
 * The floor of (b)'s staging half: each chunk copied, transferred to a bare
 * worker and written into an OPFS file, one awaited round trip per chunk,
 * no database.
 */
async function stagingFloor(chunks) {
  const floor = floorWorker();
  await floor.append(new Uint8Array(1), 0); // the worker is up and its file open
  const t0 = performance.now();
  let at = 0;
  for (const c of chunks) {
    await floor.append(c.slice(), at);
    at += c.length;
  }
  const ms = performance.now() - t0;
  await floor.close();
  return { ms };
}

const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

/**
 * `reps` builds per cell, interleaved (a, b, …, c, a, b, …) so a slow
 * stretch of the disk hits every way alike; the median is reported.
 */
export async function run({ order = ['a', 'b', 'c'], sizes = [8, 64], skipAppendAbove = 8, reps = 5 } = {}) {
  const ways = {
    a: 'a: data || ? per chunk',
    b: 'b: stageBlob + one INSERT',
    bb: "b': stageBlob, appends not awaited",
    bp: "b'': stageBlob, pipeTo(writable)",
    c: 'c: one INSERT (floor)',
    f: 'floor of the staging half of (b): each chunk transferred to a bare worker and written to OPFS, awaited',
  };
  const rows = [];
  for (const mb of sizes) {
    const chunks = Array.from({ length: (mb * MB) / (64 * KB) }, () => randomBytes(64 * KB));
    const keys = order.filter((k) => k !== 'a' || mb <= skipAppendAbove);
    const runs = Object.fromEntries(keys.map((k) => [k, []]));
    for (let r = 0; r < reps; r++)
      for (const k of keys) runs[k].push(k === 'f' ? await stagingFloor(chunks) : await build(ways[k], chunks));
    for (const k of keys) {
      const ms = runs[k].map((x) => x.ms);
      const last = runs[k][runs[k].length - 1];
      rows.push({
        workload: `${mb} MB from ${chunks.length} × 64 KB`,
        config: ways[k],
        median: median(ms),
        p95: Math.max(...ms),
        n: ms.length,
        samples: ms,
        written: last.written,
        wasm: last.wasm,
      });
    }
  }
  return rows;
}

export const passes = [{ order: ['a', 'b', 'bb', 'bp', 'c', 'f'] }, { order: ['f', 'c', 'bp', 'bb', 'b', 'a'] }];
