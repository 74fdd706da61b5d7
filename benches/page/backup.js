// Backup and restore of a large database (`npm run bench -- backup`). A
// database holding `mb` MB of media (64 MB values, staged from 1 MB chunks)
// is exported to a file of the origin's OPFS, `db.export()` piped into a
// FileSystemWritableFileStream as a user saves a backup, then imported from
// that File into a new database with `importDatabase` (staged, checked with
// `PRAGMA quick_check`, copied over the database in one transaction).
// The export is also read to its end alone, written nowhere.
// Beside them, in the same session, the raw OPFS floors of a bare worker:
// the same bytes written 4 MB at a time, moved from the page, then one
// flush; and read 4 MB at a time, each chunk moved to the page.
import { open, importDatabase } from 'resq-wasm';
import { floorWorker, probe, MB } from './measure.js';

const CHUNK = 4 * MB;

async function build(name, mb) {
  const db = await open(name);
  await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
  const words = new Uint32Array(MB / 4);
  for (let v = 0; v < mb / 64; v++) {
    const staged = await db.stageBlob();
    for (let i = 0; i < 64; i++) {
      let x = ((v * 64 + i + 1) * 2654435761) >>> 0;
      for (let j = 0; j < words.length; j++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        words[j] = x;
      }
      await staged.append(words);
    }
    await db.execute('INSERT INTO media(name, data) VALUES (?, ?)', [`clip-${v}`, staged]);
  }
  return db;
}

const rate = (bytes, ms) => bytes / MB / (ms / 1000);

async function resq(mb, tag) {
  const name = `bench-backup-${tag}.db`;
  const db = await build(name, mb);
  const root = await navigator.storage.getDirectory();
  const handle = await root.getFileHandle(`bench-backup-${tag}.bin`, { create: true });
  let t0 = performance.now();
  await db.export().pipeTo(await handle.createWritable());
  const exportMs = performance.now() - t0;
  const exportWasm = await probe(name, 'memory');
  // The export alone: read to its end, its chunks dropped (what an upload
  // or a hash of the backup costs on our side; compare with the raw read).
  t0 = performance.now();
  let read = 0;
  for await (const chunk of db.export()) read += chunk.byteLength;
  const readOutMs = performance.now() - t0;
  const file = await handle.getFile();
  if (read !== file.size) throw new Error(`export() gave ${read} of ${file.size} bytes`);
  const copyName = `bench-backup-${tag}-copy.db`;
  const copy = await open(copyName);
  t0 = performance.now();
  await importDatabase(copy, file);
  const importMs = performance.now() - t0;
  const importWasm = await probe(copyName, 'memory');
  const [{ n }] = await copy.query('SELECT count(*) AS n FROM media');
  if (n !== mb / 64) throw new Error(`the copy holds ${n} values`);
  await copy.close();
  await db.close();
  await root.removeEntry(handle.name);
  const workload = `${(file.size / MB).toFixed(1)} MB database`;
  return [
    {
      workload,
      config: 'export(): piped into an OPFS file (FileSystemWritableFileStream)',
      median: exportMs,
      n: 1,
      bytes: file.size,
      mbps: rate(file.size, exportMs),
      wasm: exportWasm,
    },
    {
      workload,
      config: 'export(): read to its end, nothing written',
      median: readOutMs,
      n: 1,
      bytes: file.size,
      mbps: rate(file.size, readOutMs),
    },
    {
      workload,
      config: 'importDatabase(): from that File (staged, quick_check, one-transaction copy)',
      median: importMs,
      n: 1,
      bytes: file.size,
      mbps: rate(file.size, importMs),
      wasm: importWasm,
    },
  ];
}

async function floor(mb) {
  const bytes = mb * MB;
  const f = floorWorker();
  await f.append(new Uint8Array(1), 0); // the worker is up and its file open
  const chunk = new Uint8Array(CHUNK).fill(7);
  let t0 = performance.now();
  for (let at = 0; at < bytes; at += CHUNK) await f.append(chunk.slice(), at);
  await f.flush();
  const writeMs = performance.now() - t0;
  t0 = performance.now();
  let read = 0;
  for (let at = 0; at < bytes; at += CHUNK) read += (await f.readAt(at, CHUNK)).byteLength;
  const readMs = performance.now() - t0;
  if (read !== bytes) throw new Error(`the floor read ${read} bytes`);
  await f.close();
  await (await navigator.storage.getDirectory()).removeEntry('floor.bin');
  const workload = `${mb} MB raw`;
  return [
    {
      workload,
      config: 'floor: written to OPFS 4 MB at a time (moved from the page), one flush',
      median: writeMs,
      n: 1,
      bytes,
      mbps: rate(bytes, writeMs),
    },
    {
      workload,
      config: 'floor: read from OPFS 4 MB at a time, each moved to the page',
      median: readMs,
      n: 1,
      bytes,
      mbps: rate(bytes, readMs),
    },
  ];
}

export async function run({ mb = 1024, order = ['resq', 'floor'] } = {}) {
  const rows = [];
  for (const way of order) rows.push(...(way === 'resq' ? await resq(mb, Math.random().toString(36).slice(2, 8)) : await floor(mb)));
  return rows;
}

export const passes = [{ order: ['resq', 'floor'] }, { order: ['floor', 'resq'] }];
