// The gallery probe (issue 29): a second session on the same database makes
// two small calls every 20 ms (a 16 KB thumbnail through readBlob, and a
// row by id through query) while one long call runs in the first session;
// the gallery's calls are timed, and so is the long call, alone and beside
// the gallery. The long calls: a streamed File INSERT, an executeBatch of
// 10,000 rows, a CPU-bound query, an export read at 50 MB/s, and a blobStream of
// a stored value read through (`chunkMB` MB chunks, 4 by default).
// `only`: the long calls whose names hold it. `calls`: the gallery's
// calls, 'both' (the default), or only its 'readBlob' or its 'query'.
// `tab`: the gallery's session is opened in another tab (a window this page
// opens), whose calls reach the database through the leading tab's worker.
import { open } from 'resq-wasm';
import { MB, anotherTab } from './measure.js';

const EVERY_MS = 20;

const quantile = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/** Runs the gallery until `done` settles; returns its calls' times. */
async function gallery(db, done, calls = 'both') {
  const times = [];
  let over = false;
  done.finally(() => (over = true));
  let id = 0;
  while (!over) {
    const t0 = performance.now();
    if (calls !== 'query') await db.readBlob('thumbs', 'data', 1 + (id % 50));
    if (calls !== 'readBlob') await db.query('SELECT id, name FROM thumbs WHERE id = ?', [1 + ((id + 1) % 50)]);
    id++;
    times.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, EVERY_MS));
  }
  return times;
}

/**
 * The long calls: `run`, a function of the writing session; `ahead`, what
 * it needs in place first, done before each time it runs (not timed).
 */
function longCalls(fileMB, chunkMB) {
  const file = new File([new Uint8Array(fileMB * MB).fill(7)], 'clip.bin');
  const rows = Array.from({ length: 10000 }, (_, i) => [i, `row ${i}`]);
  const stored = (db) => db.execute('INSERT INTO media(data) VALUES (?)', [new File([new Uint8Array(fileMB * MB).fill(5)], 'v.bin')]);
  return {
    [`${fileMB} MB File INSERT`]: { run: (db) => db.execute('INSERT INTO media(data) VALUES (?)', [file]) },
    'executeBatch 10,000 rows': { run: (db) => db.executeBatch('INSERT INTO rows(n, s) VALUES (?, ?)', rows) },
    'a CPU-bound query': {
      run: (db) => db.query('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT sum(x) AS s FROM c'),
    },
    // A slow consumer (an upload, a slow disk); the chunks are dropped, so
    // the page holds none of a 1 GiB file.
    'export() read at 50 MB/s': {
      run: async (db) => {
        let n = 0;
        for await (const chunk of db.export()) {
          n += chunk.byteLength;
          await new Promise((r) => setTimeout(r, chunk.byteLength / 50e3));
        }
        return n;
      },
    },
    [`blobStream of ${fileMB} MB, ${chunkMB} MB chunks`]: {
      ahead: stored,
      run: async (db) => {
        const [{ id }] = await db.query('SELECT max(id) AS id FROM media');
        if (id === null) throw new Error('nothing to stream');
        let n = 0;
        for await (const chunk of db.blobStream('media', 'data', id, { chunkSize: chunkMB * MB })) n += chunk.byteLength;
        return n;
      },
    },
  };
}

/**
 * The WAL copied into the database before a timed call, as for any value
 * stored a while ago: the worker's own copy of a 1 GiB WAL runs in slices
 * for seconds, holding writes, and would otherwise run inside the next
 * call timed (the one beside the gallery, after the one alone).
 */
async function settled(writer, what) {
  const [ckpt] = await writer.query('PRAGMA wal_checkpoint(TRUNCATE)');
  if (ckpt.busy !== 0) throw new Error(`the checkpoint before the ${what} was busy`);
}

/** A session on `name` opened in another tab of this origin, and a function that closes the tab. */
async function inAnotherTab(name) {
  const w = await anotherTab();
  // The module is imported in the other tab's realm: its Database lives there.
  const lib = await w.eval("import('resq-wasm')");
  return { db: await lib.open(name), close: () => w.close() };
}

export async function run({ fileMB = 256, only = '', tab = false, chunkMB = 4, calls = 'both' } = {}) {
  const name = `stall-${Math.random().toString(36).slice(2, 8)}.db`;
  const writer = await open(name);
  await writer.execute('CREATE TABLE thumbs(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
  await writer.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
  await writer.execute('CREATE TABLE rows(n INTEGER, s TEXT)');
  const thumb = new Uint8Array(16 << 10).fill(3);
  await writer.executeBatch(
    'INSERT INTO thumbs(name, data) VALUES (?, ?)',
    Array.from({ length: 50 }, (_, i) => [`thumb ${i}`, thumb]),
  );
  const other = tab ? await inAnotherTab(name) : null;
  const reader = other ? other.db : await open(name);
  const rows = [];
  const idle = await gallery(reader, new Promise((r) => setTimeout(r, 1000)), calls);
  rows.push(summary('nothing (baseline)', idle, null, null));
  for (const [what, { run: call, ahead }] of Object.entries(longCalls(fileMB, chunkMB))) {
    if (!what.includes(only)) continue;
    if (ahead) await ahead(writer);
    await settled(writer, what);
    const t0 = performance.now();
    await call(writer);
    const alone = performance.now() - t0;
    await settled(writer, what);
    const t1 = performance.now();
    const done = call(writer).then(() => performance.now() - t1);
    const times = await gallery(reader, done, calls);
    rows.push(summary(what, times, alone, await done));
    await writer.execute('DELETE FROM media');
  }
  await reader.close();
  other?.close();
  await writer.close();
  return rows.map((r) => ({ ...r, row: tab ? `${r.row} (gallery in another tab)` : r.row }));
}

function summary(what, times, alone, beside) {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    workload: 'gallery',
    row: what,
    config: `worst ${sorted.at(-1).toFixed(1)} ms${alone === null ? '' : `; the long call ${alone.toFixed(0)} ms alone, ${beside.toFixed(0)} ms beside the gallery`}`,
    median: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    worst: sorted.at(-1),
    alone,
    beside,
    n: sorted.length,
  };
}
