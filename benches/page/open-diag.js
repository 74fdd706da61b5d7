// Where W6's cold start and reopen went slower than before issue 29
// (experiment 032; this probe is experiment 034's): in each build given (a
// package path), the compare run's two rows with more samples, the builds
// taking turns sample by sample, beside what a new worker takes to compile
// that build's wasm and nothing else. Two passes, the builds' turns in
// opposite orders.

const N = 11;
const unique = (what) => `open-diag-${what}-${Math.random().toString(36).slice(2, 8)}.db`;

/** A new worker that compiles `url` and answers: the wasm's share of a start. */
function compileOnly(url) {
  const src = `WebAssembly.compileStreaming(fetch(${JSON.stringify(url)})).then(() => postMessage(1), (e) => postMessage(String(e)));`;
  const blobUrl = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
  return new Promise((resolve, reject) => {
    const w = new Worker(blobUrl);
    w.onmessage = (e) => {
      w.terminate();
      URL.revokeObjectURL(blobUrl);
      if (e.data === 1) resolve();
      else reject(new Error(e.data));
    };
  });
}

/** Open and the first answer, as the compare run times them; the close is not timed. */
async function timed(fn) {
  const t0 = performance.now();
  const db = await fn();
  const t = performance.now() - t0;
  await db?.close();
  return t;
}

export async function run({ builds = ['/shipped/'], flip = false } = {}) {
  const order = flip ? [...builds].reverse() : builds;
  const mods = new Map();
  const names = new Map();
  for (const b of order) {
    mods.set(b, await import(`${b}index.js`));
    const name = unique('made');
    const made = await mods.get(b).open(name);
    await made.execute('CREATE TABLE t(x)');
    await made.execute('INSERT INTO t VALUES (7)');
    names.set(b, name);
    await made.close();
  }
  const times = new Map(order.flatMap((b) => ['compile', 'cold start', 'reopen'].map((w) => [`${b}|${w}`, []])));
  for (let i = 0; i < N; i++)
    for (const b of order) {
      const { open } = mods.get(b);
      times.get(`${b}|compile`).push(await timed(() => compileOnly(new URL(`${b}wasm/resq_wasm_bg.wasm`, location.href).href)));
      times.get(`${b}|cold start`).push(
        await timed(async () => {
          const db = await open(unique('cold'));
          await db.query('SELECT 1 AS x');
          return db;
        }),
      );
      times.get(`${b}|reopen`).push(
        await timed(async () => {
          const db = await open(names.get(b));
          const [{ x }] = await db.query('SELECT x FROM t');
          if (x !== 7) throw new Error('reopen read a wrong row');
          return db;
        }),
      );
    }
  const rows = [];
  for (const [key, t] of times) {
    const [build, what] = key.split('|');
    t.sort((a, b) => a - b);
    rows.push({ workload: `W6 ${what}`, config: build, median: t[N >> 1], p95: t[N - 2], n: N });
  }
  return rows;
}

export const passes = [{}, { flip: true }];
