// Where a large streamed write holds the worker in one piece (experiment
// 024). On OPFS, in WAL mode, in the engine RESQ_ENGINE names, each of
// these is timed as one call the package cannot split, with a second
// session pinging (SELECT 1, every 2 ms) beside it and its longest wait
// recorded:
//  1. the placeholder alone: INSERT of zeroblob(n), in a transaction (SQLite
//     allocates and zero-fills every overflow page in one statement), and
//     its commit;
//  2. a streamed File of n bytes, in a transaction (the placeholder, then
//     the bytes in steps), and its commit (which re-reads every frame the
//     steps wrote over, to rewrite the WAL's checksums);
//  3. the same File as one call (execute outside a transaction);
//  4. the floor: a bare worker's OPFS sync access handle writing 256 MiB
//     in 1 MiB and 256 KiB calls, flushing, and reading it back in the
//     same sizes (each call's median and worst, and the throughput), as
//     a step of a long call can be no shorter than one such call.
//   RESQ_ENGINE=chromium node benches/experiments/024-large-write-probe.mjs <MiB> [idle s]
// (idle s: the wait before each call, 20 by default, for the last one's
// checkpoint to end)
import { start } from '../../tests/e2e/harness.mjs';
import { inPage } from '../../tests/e2e/util.mjs';

const mib = Number(process.argv[2] ?? 1024);
const idleS = Number(process.argv[3] ?? 20);
const h = await start();
try {
  const out = await inPage(
    h.page,
    async ({ open }, { mib, idleS }) => {
      const n = mib * 1024 * 1024;
      const name = `probe-024-${Math.random().toString(36).slice(2, 8)}.db`;
      const db = await open(name);
      const pinger = await open(name);
      await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, b BLOB)');
      await db.execute("INSERT INTO m(b) VALUES (x'00')");
      const idle = () => new Promise((r) => setTimeout(r, idleS * 1000));
      /** Runs `fn` with the pinger beside it; its longest wait between answers. */
      async function beside(fn) {
        let over = false;
        let worst = 0;
        const ping = (async () => {
          while (!over) {
            const t0 = performance.now();
            await pinger.query('SELECT 1 AS x');
            worst = Math.max(worst, performance.now() - t0);
            await new Promise((r) => setTimeout(r, 2));
          }
        })();
        const t0 = performance.now();
        const marks = await fn();
        const ms = performance.now() - t0;
        over = true;
        await ping;
        return { ms, worstPing: worst, ...marks };
      }
      /** One INSERT in a transaction: the statement's time, then the commit's. */
      const inTx = (sql, params) =>
        beside(async () => {
          const t0 = performance.now();
          let statement = 0;
          await db.transaction(async (tx) => {
            await tx.execute(sql, params);
            statement = performance.now() - t0;
          });
          return { statement, commit: performance.now() - t0 - statement };
        });
      const rows = {};
      await idle();
      rows.placeholder = await inTx('INSERT INTO m(b) VALUES (zeroblob(?))', [n]);
      // The Files are made before the pinger starts: filling and copying
      // 1 GiB holds the page's own thread for seconds.
      const v = new File([new Uint8Array(n).fill(7)], 'v.bin');
      const w = new File([new Uint8Array(n).fill(9)], 'w.bin');
      await idle();
      rows.fileInTransaction = await inTx('INSERT INTO m(b) VALUES (?)', [v]);
      await idle();
      rows.fileOneCall = await beside(() => db.execute('INSERT INTO m(b) VALUES (?)', [w]));
      await pinger.close();
      await db.close();
      return rows;
    },
    { mib, idleS },
  );
  const floor = await h.page.evaluate(async () => {
    const src = `onmessage = async () => {
      const dir = await navigator.storage.getDirectory();
      const f = await dir.getFileHandle('024-floor.bin', { create: true });
      const a = await f.createSyncAccessHandle();
      const total = 256 << 20;
      const out = {};
      for (const size of [1 << 20, 256 << 10]) {
        const buf = new Uint8Array(size).fill(3);
        const time = (fn) => {
          const ms = [];
          const t0 = performance.now();
          for (let at = 0; at < total; at += size) {
            const t = performance.now();
            fn(at);
            ms.push(performance.now() - t);
          }
          const all = performance.now() - t0;
          ms.sort((x, y) => x - y);
          return { median: ms[ms.length >> 1], worst: ms[ms.length - 1], mbps: total / 1e3 / all };
        };
        a.truncate(0);
        const write = time((at) => a.write(buf, { at }));
        const t = performance.now();
        a.flush();
        const flush = performance.now() - t;
        const read = time((at) => a.read(buf, { at }));
        out[(size >> 10) + ' KiB'] = { write, flush, read };
      }
      a.close();
      await dir.removeEntry('024-floor.bin');
      postMessage(out);
    };`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    const got = await new Promise((r) => {
      w.onmessage = (e) => r(e.data);
      w.postMessage(null);
    });
    w.terminate();
    return got;
  });
  const r = (x) => Math.round(x);
  console.log(`engine ${h.engine}, ${mib} MiB, ${idleS} s idle before each call`);
  for (const [k, v] of Object.entries(out)) {
    console.log(
      `${k}: call ${r(v.ms)} ms` +
        (v.statement !== undefined ? ` (statement ${r(v.statement)}, commit ${r(v.commit)})` : '') +
        `, worst ping ${r(v.worstPing)} ms`,
    );
  }
  for (const [size, f] of Object.entries(floor)) {
    const call = (x) => `median ${x.median.toFixed(2)} ms, worst ${x.worst.toFixed(1)} ms, ${r(x.mbps)} MB/s`;
    console.log(`floor, ${size} calls: write ${call(f.write)}; flush ${r(f.flush)} ms; read ${call(f.read)}`);
  }
} finally {
  await h.close();
}
