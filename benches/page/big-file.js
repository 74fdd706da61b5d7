// The largest value a row holds, from a File on disk (benches/big-file.mjs
// puts the file in the page's <input>): stored with one INSERT, read back
// with blobStream, each timed beside the raw OPFS floor of the same bytes
// in the same run (a bare worker streaming the File into a sync access
// handle and flushing; reading it back in 1 MiB chunks transferred to the
// page). Also: the worker's wasm memory after both, the bytes compared
// whole (untimed), and a value one byte longer refused.
import { probe } from './measure.js';

const MiB = 1 << 20;
/** The largest value a row holds beside an INTEGER PRIMARY KEY. */
const LARGEST = 2147483640;

function floorCall(w, msg, onChunk) {
  return new Promise((resolve) => {
    w.onmessage = ({ data }) => {
      if (data.chunk) onChunk(data.chunk);
      else resolve(data);
    };
    w.postMessage(msg);
  });
}

/** The raw floor on `storage`'s medium: OPFS, or IndexedDB (floor-worker.js). */
async function floor(file, storage) {
  const w = new Worker(new URL('./floor-worker.js', import.meta.url));
  const [write, out, drop] = storage === 'idb' ? ['idbWriteFile', 'idbStreamOut', 'idbDrop'] : ['writeFile', 'streamOut', 'dropFile'];
  let t0 = performance.now();
  const { written } = await floorCall(w, { op: write, file });
  const writeMs = performance.now() - t0;
  let read = 0;
  t0 = performance.now();
  await floorCall(w, { op: out }, (c) => (read += c.byteLength));
  const readMs = performance.now() - t0;
  await floorCall(w, { op: drop });
  w.terminate();
  if (written !== file.size || read !== file.size) throw new Error(`floor moved ${written} / ${read} of ${file.size} bytes`);
  return { write: writeMs, read: readMs };
}

/** Compares the stored value with the file, chunk by chunk. */
async function same(db, id, file) {
  let at = 0;
  for await (const chunk of db.blobStream('m', 'data', id)) {
    const want = new Uint8Array(await file.slice(at, at + chunk.length).arrayBuffer());
    for (let i = 0; i < chunk.length; i++) if (chunk[i] !== want[i]) return `differs at byte ${at + i}`;
    at += chunk.length;
  }
  return at === file.size ? true : `${at} of ${file.size} bytes`;
}

/**
 * `engines`: the package as served (`/pkg/`, the probe worker's, whose
 * wasm memory is read), or other builds of it (`/target/variants/<name>/`,
 * benches/variants.sh), each stored and read in every pass. `storage`:
 * the package's `storage` option, and the floor's medium ('idb':
 * IndexedDB, the File put as 4 MiB values, a strict transaction a 64 MiB).
 */
export async function run({ passes = 2, engines = ['/pkg/'], storage } = {}) {
  const file = document.querySelector('input[type=file]').files[0];
  const rows = [];
  for (let pass = 1; pass <= passes; pass++) {
    // Order flipped between passes: the floor first, then the engines; then the other way.
    const second = pass % 2 === 0;
    const order = second ? [...engines].reverse() : engines;
    const f = second ? null : await floor(file, storage);
    for (const engine of order) rows.push(...(await once(engine, pass, file, storage)));
    const floorMs = f ?? (await floor(file, storage));
    const mbps = (ms) => file.size / MiB / (ms / 1000);
    for (const r of rows.filter((r) => r.pass === pass)) {
      const ms = r.workload.startsWith('INSERT') ? floorMs.write : floorMs.read;
      Object.assign(r, { floorMs: ms, floorMbps: mbps(ms), ratio: ms / r.median });
    }
  }
  return rows;
}

async function once(engine, pass, file, storage) {
  const { open } = await import(`${engine}index.js`);
  {
    const name = `big-file-${pass}-${Math.random().toString(36).slice(2, 8)}.db`;
    const db = await open(name, storage ? { storage } : {});
    await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
    let t0 = performance.now();
    const { lastInsertRowid: id } = await db.execute('INSERT INTO m(data) VALUES (?)', [file]);
    const insert = performance.now() - t0;
    let streamed = 0;
    t0 = performance.now();
    for await (const chunk of db.blobStream('m', 'data', id)) streamed += chunk.byteLength;
    const read = performance.now() - t0;
    const memory = engine === '/pkg/' ? await probe(name, 'memory') : null;
    const exact = await same(db, id, file);
    // One byte longer than the largest row: refused, nothing stored.
    // (Only for a File of the largest size: a smaller one's would fit.)
    const over = new File([file, new Uint8Array(1)], 'over.bin');
    const refused =
      file.size < LARGEST
        ? 'not tried (a smaller File)'
        : await db.execute('INSERT INTO m(data) VALUES (?)', [over]).then(
            () => 'stored',
            (e) => `${e.code}: ${e.message}`,
          );
    const [{ rows: count }] = await db.query('SELECT count(*) AS rows FROM m');
    const stored = db.storage;
    await db.close();
    const mbps = (ms) => file.size / MiB / (ms / 1000);
    const common = { pass, engine, storage: stored, size: file.size, wasmMemory: memory, exact, refused, rowsAfter: count, streamed };
    return [
      { workload: 'INSERT the File', config: `pass ${pass}`, median: insert, n: 1, mbps: mbps(insert), ...common },
      { workload: 'blobStream it back', config: `pass ${pass}`, median: read, n: 1, mbps: mbps(read), ...common },
    ];
  }
}
