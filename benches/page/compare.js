// The side-by-side benchmark: resq-wasm and its peers on the same workloads,
// in one browser session, each engine in a dedicated worker and used the
// way its own documentation shows (peers: benches/peers/). Every workload
// checks what it read before its time counts.
//
// Main-thread busy time: a MessageChannel probe (see measure.js `busy`).
import { open } from 'resq-wasm';
import { time, busy, summary, floorWorker, echoWorker, randomBytes, label, KB, MB } from './measure.js';

export const ENGINES = ['resq-wasm', 'sqlite-wasm', 'wa-sqlite', 'sql.js', 'resq-wasm idb', 'wa-sqlite idb'];
/** The IndexedDB rows: W1–W4 and W6 (W5's appends are an OPFS comparison). */
const isIdb = (engine) => engine.endsWith(' idb');
const BLOB_SIZES = [4 * KB, 64 * KB, 256 * KB, MB, 8 * MB];
const iterations = (size) => (size >= 8 * MB ? 5 : size >= MB ? 10 : 20) * scale;
/** Every row's sample count is multiplied by this (`run`'s `samples`). */
let scale = 1;

/**
 * `build`: for resq-wasm, where its index.js is served ('/shipped/': the
 * package without the probe worker), else the page's import.
 */
async function openEngine(engine, name, build) {
  // A path ('/target/variants/os/') is another build of this package, for
  // experiments that compare builds (benches/experiments/007-wasm-size.md);
  // with ' idb' after it, on IndexedDB storage.
  const options = isIdb(engine) ? { storage: 'idb' } : {};
  if (engine.startsWith('/')) return openResq(engine, (await import(`${engine.split(' ')[0]}index.js`)).open, name, options);
  if (!engine.startsWith('resq-wasm')) return (await import('../peers/client.js')).openPeer(engine, name);
  const opener = build ? (await import(`${build}index.js`)).open : open;
  return openResq(engine, opener, name, options);
}

async function openResq(engine, open, name, options = {}) {
  const db = await open(name, options);
  return {
    engine,
    db,
    exec: (sql, params) => db.execute(sql, params),
    query: (sql, params) => db.query(sql, params),
    batch: (sql, sets) => db.executeBatch(sql, sets),
    close: () => db.close(),
  };
}

/** Every benchmark database is throwaway: peers delete theirs on close (their pools are small). */
async function closeEngine(e) {
  await (e.engine === 'resq-wasm' ? e.close() : e.close({ drop: true }));
}

const same = (a, b) => {
  if (!(a instanceof Uint8Array) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};
const check = (ok, what) => {
  if (!ok) throw new Error(`wrong answer: ${what}`);
};

/** Median wall time, then the median main-thread busy time of a few more runs. */
async function measure(fn, n) {
  const wall = await time(fn, { n, warmup: 2 });
  const b = [];
  for (let i = 0; i < Math.max(3, Math.ceil(n / 3)); i++) b.push(await busy(fn));
  b.sort((x, y) => x - y);
  return { ...wall, busy: b[Math.floor(b.length / 2)] };
}

const unique = (engine, what) => `cmp-${engine.replace(/\W+/g, '-')}-${what}-${Math.random().toString(36).slice(2, 8)}.db`;

async function blobs(engine, rows, bytesBySize) {
  const e = await openEngine(engine, unique(engine, 'blobs'));
  await e.exec('CREATE TABLE w(id INTEGER PRIMARY KEY, data BLOB)');
  for (const size of BLOB_SIZES) {
    const bytes = bytesBySize.get(size);
    const n = iterations(size);
    let id = 0;
    const w1 = await measure(async () => {
      id = (await e.exec('INSERT INTO w(data) VALUES (?)', [bytes])).lastInsertRowid;
    }, n);
    const [{ data: written }] = await e.query('SELECT data FROM w WHERE id = ?', [id]);
    check(same(written, bytes), `${engine} W1 ${label(size)}`);
    rows.push({ workload: 'W1', row: `INSERT ${label(size)}`, engine, ...w1 });
    let read;
    const w2 = await measure(async () => {
      [{ data: read }] = await e.query('SELECT data FROM w WHERE id = ?', [id]);
    }, n);
    check(same(read, bytes), `${engine} W2 ${label(size)}`);
    rows.push({ workload: 'W2', row: `SELECT ${label(size)}`, engine, ...w2 });
  }
  await closeEngine(e);
}

const TEXT50 = 'resq-wasm benchmark row text, fifty characters...'.padEnd(50, '.');
const smallRows = (n, blob) => Array.from({ length: n }, (_, i) => [i, i * 0.25, TEXT50, blob, null]);

async function rowsWorkloads(engine, rows) {
  const e = await openEngine(engine, unique(engine, 'rows'));
  await e.exec('CREATE TABLE r(id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB, n NULL)');
  const blob = randomBytes(64);
  const sets = smallRows(10000, blob);
  // W4: 10,000 small mixed rows in one transaction, one request.
  const w4 = await measure(async () => {
    await e.exec('DELETE FROM r');
    const r = await e.batch('INSERT INTO r(i, f, s, b, n) VALUES (?, ?, ?, ?, ?)', sets);
    check(r.changes === 10000, `${engine} W4 changes ${r.changes}`);
  }, 3 * scale);
  rows.push({
    workload: 'W4',
    row: 'INSERT 10,000 rows, one transaction',
    engine,
    ...w4,
    note: 'includes a DELETE of the previous 10,000',
  });
  // W3: SELECT 1 / 100 / 10,000 rows into page objects.
  for (const count of [1, 100, 10000]) {
    const sql = `SELECT id, i, f, s, b, n FROM r ORDER BY id LIMIT ${count}`;
    let got;
    const m = await measure(
      async () => {
        got = await e.query(sql);
      },
      (count === 10000 ? 10 : 30) * scale,
    );
    check(got.length === count && got[count - 1].s === TEXT50 && same(got[0].b, blob) && got[0].n === null, `${engine} W3 ${count}`);
    rows.push({ workload: 'W3', row: `SELECT ${count.toLocaleString('en')} row${count > 1 ? 's' : ''}`, engine, ...m });
    if (engine === 'resq-wasm') {
      const row = `SELECT ${count.toLocaleString('en')} row${count > 1 ? 's' : ''}`;
      let bytes;
      const qb = await measure(
        async () => {
          bytes = await e.db.queryBytes(sql);
        },
        (count === 10000 ? 10 : 30) * scale,
      );
      check(JSON.parse(new TextDecoder().decode(bytes)).length === count, 'queryBytes');
      rows.push({ workload: 'W3', row, engine: 'resq-wasm queryBytes', ...qb });
      // Floors: the same rows as objects through a bare worker (what a
      // structured-clone design cannot beat), and the JSON bytes moved.
      const echo = echoWorker();
      const n = count === 10000 ? 10 : 30;
      rows.push({
        workload: 'W3',
        row,
        engine: 'floor: postMessage clone of the row objects',
        ...(await measure(() => echo.roundTrip({ rows: got, ack: true }), n)),
      });
      let pong = bytes.slice();
      rows.push({
        workload: 'W3',
        row,
        engine: 'floor: postMessage transfer of the JSON bytes',
        ...(await measure(async () => {
          pong = (await echo.roundTrip({ bytes: pong, transferBack: true }, [pong.buffer])).bytes;
        }, n)),
      });
      echo.close();
    }
  }
  // W3 1 row again once the engine's code is warm, as in an app that has
  // made its first few hundred calls: the row above (30 calls after 2)
  // times a path the browser is still compiling (experiment 028).
  let one;
  const warm = await time(
    async () => {
      one = await e.query('SELECT id, i, f, s, b, n FROM r ORDER BY id LIMIT 1');
    },
    { n: 200 * scale, warmup: 500 },
  );
  check(one.length === 1 && one[0].s === TEXT50, `${engine} W3 warm`);
  rows.push({ workload: 'W3', row: 'SELECT 1 row, after 500 calls', engine, ...warm });
  await closeEngine(e);
}

async function appendWorkload(engine, rows, chunks, whole) {
  const e = await openEngine(engine, unique(engine, 'append'));
  await e.exec('CREATE TABLE a(id INTEGER PRIMARY KEY, data BLOB)');
  // W5: everyone: an 8 MB value built by 128 appends of 64 KB.
  const t0 = performance.now();
  const { lastInsertRowid: id } = await e.exec("INSERT INTO a(data) VALUES (x'')");
  for (const c of chunks) await e.exec('UPDATE a SET data = CAST(data || ? AS BLOB) WHERE id = ?', [c, id]);
  const appendMs = performance.now() - t0;
  const [{ data }] = await e.query('SELECT data FROM a WHERE id = ?', [id]);
  check(same(data, whole), `${engine} W5 append`);
  rows.push({ workload: 'W5', row: '8 MB by 128 × data || ?', engine, median: appendMs, p95: appendMs, n: 1 });
  // The same bytes as 128 rows of 64 KB in one transaction: what every
  // engine can do (the peers have no incremental blob I/O).
  const batch = await time(
    () =>
      e.batch(
        'INSERT INTO a(data) VALUES (?)',
        chunks.map((c) => [c]),
      ),
    { n: 3 * scale, warmup: 0 },
  );
  rows.push({ workload: 'W5', row: '8 MB as 128 rows, one transaction', engine, ...batch });
  if (engine === 'resq-wasm') {
    // One value: the chunks go to the worker's temp space as they come
    // (piped, as a download or a recorder would), and one INSERT writes the
    // value into its row.
    const staged = await time(
      async () => {
        let i = 0;
        const source = new ReadableStream({ pull: (c) => (i < chunks.length ? c.enqueue(chunks[i++]) : c.close()) });
        const blob = await e.db.stageBlob();
        await source.pipeTo(blob.writable);
        const r = await e.exec('INSERT INTO a(data) VALUES (?)', [blob]);
        const [{ n }] = await e.query('SELECT length(data) AS n FROM a WHERE id = ?', [r.lastInsertRowid]);
        check(n === whole.length, 'W5 staged');
      },
      { n: 3 * scale, warmup: 0 },
    );
    rows.push({
      workload: 'W5',
      row: '8 MB as one value, staged',
      engine,
      ...staged,
      note: 'stageBlob: 128 chunks piped into staged.writable, then one INSERT of the 8 MB value (the peers cannot build one value without appends)',
    });
  }
  await closeEngine(e);
}

async function coldStart(engine, rows) {
  // resq-wasm's cold start is timed with the package as it ships
  // (benches/run.mjs serves pkg/ at /shipped/ too): the probe worker that
  // /pkg/ has for the other benchmarks would add a module and its hooks.
  const build = engine.startsWith('resq-wasm') ? '/shipped/' : undefined;
  const samples = [];
  for (let i = 0; i < 3 * scale; i++) {
    const t0 = performance.now();
    const e = await openEngine(engine, unique(engine, 'cold'), build);
    const [{ x }] = await e.query('SELECT 1 AS x');
    samples.push(performance.now() - t0);
    check(x === 1, 'W6');
    await closeEngine(e);
  }
  rows.push({ workload: 'W6', row: 'cold start: new Worker → first answer', engine, ...summary(samples) });
  // Reopen: a database made and closed before, opened again in a new
  // worker, to the first answer read from it (sql.js keeps nothing).
  if (engine === 'sql.js') return;
  const name = unique(engine, 'reopen');
  const made = await openEngine(engine, name, build);
  await made.exec('CREATE TABLE t(x)');
  await made.exec('INSERT INTO t VALUES (7)');
  await made.close();
  const again = [];
  for (let i = 0; i < 3 * scale; i++) {
    const t0 = performance.now();
    const e = await openEngine(engine, name, build);
    const [{ x }] = await e.query('SELECT x FROM t');
    again.push(performance.now() - t0);
    check(x === 7, 'W6 reopen');
    await (i < 3 * scale - 1 ? e.close() : closeEngine(e));
  }
  rows.push({ workload: 'W6', row: 'reopen: new Worker → first row of a database made before', engine, ...summary(again) });
}

async function floors(rows, bytesBySize) {
  const floor = floorWorker();
  const echo = echoWorker();
  for (const size of BLOB_SIZES) {
    const bytes = bytesBySize.get(size);
    const n = iterations(size);
    rows.push({
      workload: 'W1',
      row: `INSERT ${label(size)}`,
      engine: 'floor: raw OPFS write + flush',
      ...(await measure(() => floor.write(bytes.slice()), n)),
    });
    rows.push({
      workload: 'W1',
      row: `INSERT ${label(size)}`,
      engine: 'floor: postMessage clone',
      ...(await measure(() => echo.roundTrip({ bytes, ack: true }), n)),
    });
    rows.push({
      workload: 'W1',
      row: `INSERT ${label(size)}`,
      engine: 'floor: raw IndexedDB put, strict',
      ...(await measure(() => floor.idbWrite(bytes.slice()), n)),
    });
    check(same(await floor.idbRead(), bytes), 'IndexedDB floor read');
    rows.push({
      workload: 'W2',
      row: `SELECT ${label(size)}`,
      engine: 'floor: raw IndexedDB get',
      ...(await measure(() => floor.idbRead(), n)),
    });
    const back = await floor.read(size);
    check(same(back, bytes), 'floor read');
    rows.push({
      workload: 'W2',
      row: `SELECT ${label(size)}`,
      engine: 'floor: raw OPFS read',
      ...(await measure(() => floor.read(size), n)),
    });
    let pong = bytes.slice();
    rows.push({
      workload: 'W2',
      row: `SELECT ${label(size)}`,
      engine: 'floor: postMessage transfer',
      ...(await measure(async () => {
        pong = (await echo.roundTrip({ bytes: pong, transferBack: true }, [pong.buffer])).bytes;
      }, n)),
    });
  }
  const t = [];
  for (let i = 0; i < 3 * scale; i++) {
    const t0 = performance.now();
    const e = echoWorker();
    await e.roundTrip({ ack: true });
    t.push(performance.now() - t0);
    e.close();
  }
  rows.push({ workload: 'W6', row: 'cold start: new Worker → first answer', engine: 'floor: bare worker', ...summary(t) });
  await floor.close();
  echo.close();
}

/** Shipped wasm per engine: raw and gzip bytes (gzip -6 via CompressionStream). */
export const WASM_FILES = {
  'resq-wasm': '/pkg/wasm/resq_wasm_bg.wasm',
  'sqlite-wasm': '/node_modules/@sqlite.org/sqlite-wasm/dist/sqlite3.wasm',
  'wa-sqlite': '/node_modules/@journeyapps/wa-sqlite/dist/wa-sqlite.wasm',
  'sql.js': '/node_modules/sql.js/dist/sql-wasm-browser.wasm',
};

async function wasmSizes(rows, files) {
  for (const [engine, url] of Object.entries(files)) {
    const res = await fetch(url);
    check(res.ok, `fetch ${url}`);
    const raw = new Uint8Array(await res.arrayBuffer());
    const gz = await new Response(new Blob([raw]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer();
    rows.push({ workload: 'W6', row: 'wasm size', engine, raw: raw.byteLength, gzip: gz.byteLength, file: url });
  }
}

/** `samples`: a factor on every row's sample count (3 where the default's few samples leave a row unsettled). */
export async function run({ engines = ENGINES, wasmFiles = WASM_FILES, sizes = true, samples = 1 } = {}) {
  scale = samples;
  const rows = [];
  const bytesBySize = new Map(BLOB_SIZES.map((s) => [s, randomBytes(s)]));
  const chunks = Array.from({ length: 128 }, () => randomBytes(64 * KB));
  const whole = new Uint8Array(8 * MB);
  for (const [i, c] of chunks.entries()) whole.set(c, i * 64 * KB);
  // Progress on the console (benches/run.mjs prints it): a run takes minutes.
  const step = async (what, engine, fn) => {
    const t0 = performance.now();
    await fn();
    console.log(`${engine}: ${what} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  };
  await step('floors', 'floor', () => floors(rows, bytesBySize));
  for (const engine of engines) {
    await step('W6', engine, () => coldStart(engine, rows));
    await step('W1, W2', engine, () => blobs(engine, rows, bytesBySize));
    await step('W3, W4', engine, () => rowsWorkloads(engine, rows));
    if (!isIdb(engine)) await step('W5', engine, () => appendWorkload(engine, rows, chunks, whole));
  }
  if (sizes) await wasmSizes(rows, wasmFiles);
  return rows;
}

/**
 * Two passes in one session, the engines in opposite orders, each row with
 * three times its base sample count (experiment 035: with 3 samples, W1 8 MB,
 * W4, W5 and W6 moved by more than the 5 % the compare is asked to resolve).
 */
export const passes = [
  { engines: ENGINES, samples: 3 },
  { engines: [...ENGINES].reverse(), sizes: false, samples: 3 },
];
