// What a read-only worker would cost and whether the engine allows one
// (experiment 023). In the engine RESQ_ENGINE names (chromium, firefox):
//  1. what OPFS lets a second worker open beside a file a first worker holds:
//     with the package's exclusive handle ('readwrite', the default), and
//     with both on 'readwrite-unsafe';
//  2. the cost of one more worker running the package: open() of a fresh
//     OPFS database to the answer of SELECT 1 (a new worker, its wasm, a
//     connection), its wasm memory then, and after a 1 s CPU-bound query.
//   RESQ_ENGINE=chromium node benches/experiments/023-read-only-workers-probe.mjs <opens>
import { start } from '../../tests/e2e/harness.mjs';
import { inPage } from '../../tests/e2e/util.mjs';

const opens = Number(process.argv[2] ?? 11);
const h = await start({ probe: {} });
try {
  const handles = await inPage(h.page, async () => {
    const src = `onmessage = async ({ data: { mode, hold } }) => {
      const dir = await navigator.storage.getDirectory();
      const f = await dir.getFileHandle('023-probe.bin', { create: true });
      try {
        const a = await f.createSyncAccessHandle(mode ? { mode } : undefined);
        postMessage({ ok: true, mode: a.mode ?? '(no mode property)' });
        if (!hold) a.close();
      } catch (e) { postMessage({ ok: false, error: e.name + ': ' + e.message }); }
    };`;
    const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
    const ask = (w, msg) =>
      new Promise((r) => {
        w.onmessage = (e) => r(e.data);
        w.postMessage(msg);
      });
    const out = {};
    for (const [first, second] of [
      [undefined, 'readwrite-unsafe'],
      ['readwrite-unsafe', 'readwrite-unsafe'],
    ]) {
      const a = new Worker(url);
      const b = new Worker(url);
      const held = await ask(a, { mode: first, hold: true });
      const beside = await ask(b, { mode: second, hold: false });
      out[`${first ?? 'default'} held, then ${second}`] = { first: held, second: beside };
      a.terminate();
      b.terminate();
      await new Promise((r) => setTimeout(r, 100));
    }
    return out;
  });
  console.log(JSON.stringify({ engine: h.engine, handles }, null, 1));
  const costs = await inPage(
    h.page,
    async ({ open, probe }, { opens }) => {
      const rows = [];
      for (let i = 0; i < opens; i++) {
        const name = `ro-probe-${i}-${Math.random().toString(36).slice(2, 8)}.db`;
        const t0 = performance.now();
        const db = await open(name);
        await db.query('SELECT 1');
        const openMs = performance.now() - t0;
        const memOpen = await probe(name, 'memory');
        const t1 = performance.now();
        await db.query('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT sum(x) AS s FROM c');
        const queryMs = performance.now() - t1;
        const memQuery = await probe(name, 'memory');
        await db.close();
        rows.push({ openMs, memOpen, memQuery, queryMs });
      }
      return rows;
    },
    { opens },
  );
  const med = (k, from = 1) => {
    const xs = costs
      .slice(from)
      .map((r) => r[k])
      .sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)];
  };
  console.log(
    JSON.stringify({
      engine: h.engine,
      first: costs[0],
      medianOfRest: { openMs: med('openMs'), memOpen: med('memOpen'), memQuery: med('memQuery'), queryMs: med('queryMs') },
      n: costs.length - 1,
    }),
  );
} finally {
  await h.close();
}
