// Issue "media": readBlob of a 1 MB range from the middle of a 256 MB value
// against reading a 1 MB value whole, same database, both through readBlob
// and the 1 MB value also through query(). Two passes, order flipped.
// Cold seeks beside them: the far read with no kept read handle, and the
// first far read after open().
// Then playback: a 64 MB value consumed as a blobStream (1 MB
// chunks, as a player pulls them) and built as a blobFile, with the page's
// main-thread busy time, beside the floor: 64 raw OPFS reads of 1 MB in a
// bare worker, each transferred to the page.
import { open } from 'resq-wasm';
import { time, timeAndBusy, floorWorker, MB } from './measure.js';

let db;
let name;
async function setup() {
  if (db) return;
  name = `bench-ranged-${Math.random().toString(36).slice(2, 8)}.db`;
  db = await open(name);
  await db.execute('CREATE TABLE v(id INTEGER PRIMARY KEY, data BLOB)');
  // 256 MB written by SQLite itself (zeroblob), then marked in the middle.
  await db.execute('INSERT INTO v(id, data) VALUES (1, zeroblob(268435456)), (2, randomblob(1048576)), (3, zeroblob(67108864))');
}

const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

/**
 * Cold seeks: the same far read with no read handle kept (a query ran in
 * between, as any other call does), and the first read after the database
 * is opened again. Each sample times the read alone.
 */
async function cold(order) {
  const far = () => db.readBlob('v', 'data', 1, { offset: 128 * MB, length: MB });
  const ways = {
    dropped: [
      'cold: 1 MB at 128 MB, read handle dropped before each read',
      10,
      async () => {
        await db.query('SELECT 1');
      },
    ],
    reopened: [
      'cold: 1 MB at 128 MB, first read after open()',
      5,
      async () => {
        await db.close();
        db = await open(name);
      },
    ],
  };
  const rows = [];
  for (const k of order) {
    const [label, n, before] = ways[k];
    const ms = [];
    for (let i = 0; i < n; i++) {
      await before();
      const t0 = performance.now();
      const got = await far();
      ms.push(performance.now() - t0);
      if (got.length !== MB) throw new Error('wrong length');
    }
    rows.push({ workload: label, median: median(ms), p95: Math.max(...ms), n });
  }
  return rows;
}

export async function run({ order = ['range', 'whole'], playbackOrder, coldOrder } = {}) {
  await setup();
  if (playbackOrder) return playback(playbackOrder);
  if (coldOrder) return cold(coldOrder);
  const ways = {
    range: ['1 MB range at 128 MB of a 256 MB value (readBlob)', () => db.readBlob('v', 'data', 1, { offset: 128 * MB, length: MB })],
    whole: ['a 1 MB value whole (readBlob)', () => db.readBlob('v', 'data', 2)],
    query: ['a 1 MB value whole (query)', () => db.query('SELECT data FROM v WHERE id = 2')],
  };
  const rows = [];
  for (const k of [...order, 'query']) {
    const [label, fn] = ways[k];
    const got = await fn();
    if ((got instanceof Uint8Array ? got : got[0].data).length !== MB) throw new Error('wrong length');
    rows.push({ workload: label, ...(await time(fn, { n: 30, warmup: 3 })) });
  }
  return rows;
}

async function playback(order) {
  const floor = floorWorker();
  await floor.write(new Uint8Array(MB));
  const ways = {
    stream: [
      '64 MB as a blobStream, 1 MB chunks',
      async () => {
        let n = 0;
        for await (const c of db.blobStream('v', 'data', 3)) n += c.length;
        if (n !== 64 * MB) throw new Error('short stream');
      },
    ],
    file: [
      '64 MB as a blobFile',
      async () => {
        if ((await db.blobFile('v', 'data', 3, { type: 'video/webm' })).size !== 64 * MB) throw new Error('short file');
      },
    ],
    floor: [
      'floor: 64 raw OPFS reads of 1 MB, each transferred',
      async () => {
        for (let i = 0; i < 64; i++) await floor.read(MB);
      },
    ],
  };
  const rows = [];
  for (const k of order) {
    const [label, fn] = ways[k];
    rows.push({ workload: label, ...(await timeAndBusy(fn, { n: 6, warmup: 1 })) });
  }
  await floor.close();
  return rows;
}

export const passes = [
  { order: ['range', 'whole'] },
  { order: ['whole', 'range'] },
  { playbackOrder: ['stream', 'file', 'floor'] },
  { playbackOrder: ['floor', 'file', 'stream'] },
  { coldOrder: ['dropped', 'reopened'] },
  { coldOrder: ['reopened', 'dropped'] },
];
