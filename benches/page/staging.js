// Experiment 004: building a value from chunks, on OPFS, three ways in one
// run: (a) `UPDATE … SET data = CAST(data || ? AS BLOB)` per chunk, (b)
// `stageBlob()` + one INSERT, (c) one INSERT of the whole value (the floor).
// Bytes written are counted in the worker at the VFS boundary (every OPFS
// SyncAccessHandle.write: database, journal, temp files).
import { open } from 'resq-wasm';
import { randomBytes, KB, MB } from './measure.js';

async function build(way, chunks) {
  const db = await open(`bench-stage-${way}-${Math.random().toString(36).slice(2, 8)}.db`);
  await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
  const before = (await db.stats()).opfsBytesWritten;
  const t0 = performance.now();
  if (way === 'a: data || ? per chunk') {
    await db.execute("INSERT INTO v(id, data) VALUES (1, x'')");
    for (const c of chunks) await db.execute('UPDATE v SET data = CAST(data || ? AS BLOB) WHERE id = 1', [c]);
  } else if (way === 'b: stageBlob + one INSERT') {
    const staged = await db.stageBlob();
    for (const c of chunks) await staged.append(c);
    await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [staged]);
  } else if (way === "b': stageBlob, appends not awaited") {
    // As a MediaRecorder handler appends: calls complete in order, so the
    // INSERT runs after the last append without waiting on each.
    const staged = await db.stageBlob();
    for (const c of chunks) staged.append(c);
    await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [staged]);
  } else {
    const whole = new Uint8Array(chunks.length * chunks[0].length);
    chunks.forEach((c, i) => whole.set(c, i * c.length));
    await db.execute('INSERT INTO v(id, data) VALUES (1, ?)', [whole]);
  }
  const ms = performance.now() - t0;
  const { opfsBytesWritten, wasmMemoryBytes } = await db.stats();
  const got = await db.readBlob('v', 'data', 1, { offset: (chunks.length - 1) * chunks[0].length });
  const last = chunks[chunks.length - 1];
  if (got.length !== last.length || got.some((x, i) => x !== last[i])) throw new Error(`wrong bytes: ${way}`);
  await db.close();
  return { ms, written: opfsBytesWritten - before, wasm: wasmMemoryBytes };
}

export async function run({ order = ['a', 'b', 'c'], sizes = [8, 64], skipAppendAbove = 8 } = {}) {
  const ways = { a: 'a: data || ? per chunk', b: 'b: stageBlob + one INSERT', bb: "b': stageBlob, appends not awaited", c: 'c: one INSERT (floor)' };
  const rows = [];
  for (const mb of sizes) {
    const chunks = Array.from({ length: (mb * MB) / (64 * KB) }, () => randomBytes(64 * KB));
    for (const k of order) {
      if (k === 'a' && mb > skipAppendAbove) continue;
      const r = await build(ways[k], chunks);
      rows.push({ workload: `${mb} MB from ${chunks.length} × 64 KB`, config: ways[k], median: r.ms, p95: r.ms, n: 1, written: r.written, wasm: r.wasm });
    }
  }
  return rows;
}

export const passes = [{ order: ['a', 'b', 'bb', 'c'] }, { order: ['c', 'bb', 'b', 'a'] }];
