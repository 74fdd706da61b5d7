// Experiment 034: the stall bench's missed row (030: in Firefox, an
// export() read at 50 MB/s took 2.05× its time alone with the gallery in
// another tab) cut down to its parts. A database holding one value of
// `mb` MiB, copied into its file first; a second tab of this origin; the
// export read at 50 MB/s alone, then beside a loop in the other tab, every
// 20 ms on this page's timer, that is one of:
// - `calls`: a one-row query through the package (the other tab's session);
// - `idle`: nothing, with the other tab's session open;
// - `none`: nothing, with no session in the other tab;
// - `bare`: a round trip to a bare worker of the other tab's, no session.
// `ranged`: the value read in 4 MiB `readBlob`s at the same pace instead
// of the export.
// `probe`: each window's main thread kept busy by a MessageChannel ping
// loop, which reports the gaps in it over 10 ms.
import { open } from 'resq-wasm';
import { MB, anotherTab } from './measure.js';

/** The export at 50 MB/s; with `ranged`, the value read instead in 4 MiB `readBlob`s at the same pace. */
async function exportAt50(db, ranged, mb) {
  const t0 = performance.now();
  const chunks = ranged
    ? (async function* () {
        for (let at = 0; at < mb * MB; at += 4 * MB) yield await db.readBlob('m', 'data', 1, { offset: at, length: 4 * MB });
      })()
    : db.export();
  for await (const chunk of chunks) await new Promise((r) => setTimeout(r, chunk.byteLength / 50e3));
  return performance.now() - t0;
}

/** A worker of `realm`'s that answers each message with it. */
function bareWorker(realm) {
  const url = realm.URL.createObjectURL(new realm.Blob(['onmessage = (e) => postMessage(e.data);'], { type: 'text/javascript' }));
  const worker = new realm.Worker(url);
  const ask = () =>
    new Promise((resolve) => {
      worker.onmessage = resolve;
      worker.postMessage(1);
    });
  return { ask, close: () => worker.terminate() };
}

/** The other tab's loop until `done` settles: its mean lap in ms. */
async function loop(call, done) {
  let over = false;
  done.finally(() => (over = true));
  let laps = 0;
  const t0 = performance.now();
  while (!over) {
    await call();
    laps++;
    await new Promise((r) => setTimeout(r, 20));
  }
  return (performance.now() - t0) / laps;
}

/** A ping loop on `realm`'s main thread; the function it returns stops it and sums its gaps over 10 ms. */
function gaps(realm) {
  const { port1, port2 } = new realm.MessageChannel();
  let last = performance.now();
  let on = true;
  const big = [];
  port1.onmessage = () => {
    const t = performance.now();
    if (t - last > 10) big.push(t - last);
    last = t;
    if (on) port2.postMessage(0);
  };
  port2.postMessage(0);
  return () => {
    on = false;
    return `${big.length} gaps over 10 ms, ${big.reduce((a, b) => a + b, 0).toFixed(0)} ms in all`;
  };
}

export async function run({ mode = 'calls', mb = 1024, probe = false, ranged = false } = {}) {
  const name = `export-tab-${Math.random().toString(36).slice(2, 8)}.db`;
  const db = await open(name);
  await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, data BLOB)');
  await db.execute('INSERT INTO m(data) VALUES (?)', [new File([new Uint8Array(mb * MB).fill(5)], 'v.bin')]);
  await db.query('PRAGMA wal_checkpoint(TRUNCATE)');
  const w = await anotherTab();
  const lib = await w.eval("import('resq-wasm')");
  const other = mode === 'none' || mode === 'bare' ? null : await lib.open(name);
  const bare = mode === 'bare' ? bareWorker(w) : null;
  const alone = await exportAt50(db, ranged, mb);
  const stops = probe ? [gaps(window), gaps(w)] : [];
  const done = exportAt50(db, ranged, mb);
  const call = mode === 'calls' ? () => other.query('SELECT id FROM m WHERE id = 1') : mode === 'bare' ? bare.ask : async () => {};
  const lap = await loop(call, done);
  const beside = await done;
  const busy = stops.map((s) => s()).join('; ');
  await other?.close();
  bare?.close();
  w.close();
  await db.close();
  const config = `the other tab: ${mode}${probe ? ', both main threads kept busy' : ''}${ranged ? '; the value read in 4 MiB readBlobs, not exported' : ''}`;
  return [
    { workload: `export of ${mb} MiB at 50 MB/s, alone`, config, median: alone, n: 1 },
    { workload: `export of ${mb} MiB at 50 MB/s, beside the other tab's loop`, config, median: beside, n: 1 },
    { workload: "the other tab's 20 ms loop, ms per lap", config: `${config}${busy ? `; ${busy}` : ''}`, median: lap, n: 1 },
  ];
}

export const passes = [{ mode: 'calls' }, { mode: 'idle' }, { mode: 'none' }, { mode: 'calls', probe: true }];
