// Experiment 026: a streamed File INSERT and a blobStream of `mb` MB,
// timed alone in each build of `engines` (two passes, the order flipped),
// with the OPFS calls the worker made during each where the build is the
// one served with the probe worker (`/pkg/`). `refill`: the value goes
// into the pages a deleted one of the same size freed.
import { probe, MB } from './measure.js';

async function once(engine, pass, file, mb, refill) {
  const { open } = await import(`${engine}index.js`);
  const name = `diag-${Math.random().toString(36).slice(2, 8)}.db`;
  const db = await open(name);
  await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
  const probed = engine === '/pkg/';
  const rows = [];
  const step = async (what, fn) => {
    const c0 = probed ? await probe(name, 'opfsCalls') : null;
    const t0 = performance.now();
    await fn();
    const ms = performance.now() - t0;
    let config = `${engine}, pass ${pass}`;
    if (probed) {
      const c1 = await probe(name, 'opfsCalls');
      const d = (k) => c1[k] - c0[k];
      config += `; OPFS: ${d('writes')} writes ${d('writeMs').toFixed(0)} ms, ${d('reads')} reads ${d('readMs').toFixed(0)} ms, ${d('flushes')} flushes ${d('flushMs').toFixed(0)} ms`;
    }
    rows.push({ workload: `${mb} MB`, row: what, config, median: ms, n: 1 });
  };
  if (refill) {
    // The value goes into the pages a deleted one freed, as in a library
    // whose videos come and go.
    await db.execute('INSERT INTO media(data) VALUES (?)', [file]);
    await db.execute('DELETE FROM media');
  }
  await step('File INSERT', () => db.execute('INSERT INTO media(data) VALUES (?)', [file]));
  await db.query('PRAGMA wal_checkpoint(TRUNCATE)');
  await step('blobStream, 4 MB chunks', async () => {
    const [{ id }] = await db.query('SELECT max(id) AS id FROM media');
    for await (const c of db.blobStream('media', 'data', id, { chunkSize: 4 * MB })) c.byteLength;
  });
  await db.close();
  return rows;
}

export async function run({ mb = 256, engines = ['/pkg/'], refill = false } = {}) {
  const file = new File([new Uint8Array(mb * MB).fill(5)], 'v.bin');
  const rows = [];
  for (const pass of [1, 2]) {
    for (const engine of pass === 1 ? engines : [...engines].reverse()) rows.push(...(await once(engine, pass, file, mb, refill)));
  }
  return rows;
}
