// Experiment 001: at which BLOB size should parameters and results cross
// between the page and the worker by transfer rather than structured clone?
// Single-row INSERT and SELECT from the page, on OPFS, with the floor (raw
// OPFS write + flush / read of the same bytes, one copy across) in the same
// run. `order` flips which configuration runs first at every size.
import { open } from 'resq-wasm';
import { time, timeAndBusy, floorWorker, engineWorker, echoWorker, randomBytes, label, KB, MB } from './measure.js';

const SIZES = [64, 4 * KB, 16 * KB, 64 * KB, 128 * KB, 256 * KB, 512 * KB, MB, 4 * MB, 8 * MB, 16 * MB];
const CONFIGS = { clone: Infinity, transfer: 0 };

export async function run({ order = ['clone', 'transfer'], sizes = SIZES } = {}) {
  const dbs = {};
  for (const name of order) {
    dbs[name] = await open(`bench-blob-${name}-${Math.random().toString(36).slice(2)}.db`, {
      blobTransferThreshold: CONFIGS[name],
    });
    await dbs[name].execute('CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)');
  }
  const floor = floorWorker();
  const engine = await engineWorker(`bench-engine-${Math.random().toString(36).slice(2)}.db`);
  const echo = echoWorker();
  const rows = [];
  for (const size of sizes) {
    const bytes = randomBytes(size);
    const n = size >= 4 * MB ? 8 : size >= MB ? 15 : 30;
    for (const name of order) {
      const db = dbs[name];
      const insert = () => db.execute('INSERT OR REPLACE INTO t(id, data) VALUES (1, ?)', [bytes]);
      rows.push({ workload: `INSERT ${label(size)}`, config: name, ...(await timeAndBusy(insert, { n })) });
      const [{ data }] = await db.query('SELECT data FROM t WHERE id = 1');
      if (data.length !== size || data[size - 1] !== bytes[size - 1] || data[0] !== bytes[0]) throw new Error('wrong bytes read');
      const select = () => db.query('SELECT data FROM t WHERE id = 1');
      rows.push({ workload: `SELECT ${label(size)}`, config: name, ...(await timeAndBusy(select, { n })) });
    }
    rows.push({ workload: `INSERT ${label(size)}`, config: 'floor', ...(await timeAndBusy(() => floor.write(bytes.slice()), { n })) });
    // The transport floor: the same SQLite statement run inside a worker,
    // plus one copy of the bytes moved into a worker (and an empty reply).
    const moveIn = await time(
      () => {
        const c = bytes.slice();
        return echo.roundTrip({ bytes: c, transferBack: false, ack: true }, [c.buffer]);
      },
      { n },
    );
    const engineInsert = await engine.insert(bytes, n);
    rows.push({
      workload: `INSERT ${label(size)}`,
      config: 'engine+copy',
      median: engineInsert + moveIn.median,
      engine: engineInsert,
      transport: moveIn.median,
      n,
    });
    const back = await floor.read(size);
    if (back.length !== size || back[size - 1] !== bytes[size - 1]) throw new Error('floor read wrong bytes');
    rows.push({ workload: `SELECT ${label(size)}`, config: 'floor', ...(await timeAndBusy(() => floor.read(size), { n })) });
    // The transport floor: SQLite's read and the copy out of wasm memory,
    // inside a worker, plus moving that many bytes to the page.
    const engineSelect = await engine.select(n);
    let pingPong = bytes.slice();
    const moveOut = await time(
      async () => {
        pingPong = (await echo.roundTrip({ bytes: pingPong, transferBack: true }, [pingPong.buffer])).bytes;
      },
      { n },
    );
    rows.push({
      workload: `SELECT ${label(size)}`,
      config: 'engine+move',
      median: engineSelect + moveOut.median,
      engine: engineSelect,
      transport: moveOut.median,
      n,
    });
  }
  await floor.close();
  await engine.close();
  echo.close();
  for (const db of Object.values(dbs)) await db.close();
  return rows;
}

/** Two passes, the order of the configurations flipped. */
export const passes = [{ order: ['clone', 'transfer'] }, { order: ['transfer', 'clone'] }];
