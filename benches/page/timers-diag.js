// Experiment 034's floor for the stall bench's one missed row (030: in
// Firefox, an export read at 50 MB/s took 2.05× its time alone with the
// gallery in another tab): the same two loops with no database at all. A
// "reader" takes 4 MiB chunks from a bare worker (moved, as export()'s
// are) and sleeps each chunk's share of 50 MB/s on a timer; a "gallery"
// makes one small round trip to a worker of its own every 20 ms, in this
// page or in another tab of this origin; `chunks` of them in all.
// `opfs`: the reader's chunks are read from an OPFS file; `leader`: this
// page holds what a leading tab of the package does; `work`: with
// `opfs`, ms the reader's thread computes for each chunk. Reported: the
// reader's time alone and beside the gallery, and the gallery's pace.
import { MB, anotherTab } from './measure.js';

const EVERY_MS = 20;

/**
 * A worker that answers each message with a fresh 4 MiB chunk, moved
 * (`chunk`), or with its message; on a port handed to it too, as the
 * leading tab's worker answers another tab's calls (link.ts).
 */
const WORKER = `const answer = (to) => (e) => {
  if (e.data === 'chunk') { const b = new Uint8Array(${4 * MB}); b[0] = 1; to.postMessage(b, [b.buffer]); }
  else to.postMessage(e.data);
};
self.onmessage = (e) => {
  if (e.ports[0]) e.ports[0].onmessage = answer(e.ports[0]);
  else answer(self)(e);
};`;

/**
 * With `opfs`: a reader whose chunks are read from an OPFS file through a
 * sync access handle, as the package's worker reads its database (the
 * file is written first, `open`, and read round and round).
 */
const OPFS_WORKER = `let h, size, at = 0;
self.onmessage = async (e) => {
  if (e.data === 'chunk' || e.data.chunk !== undefined) {
    const b = new Uint8Array(${4 * MB});
    h.read(b, { at });
    // \`work\`: ms of the worker's thread spent on each chunk, as SQLite's page reads take it.
    for (const end = performance.now() + (e.data.chunk ?? 0); performance.now() < end; );
    at = (at + b.length) % size;
    return self.postMessage(b, [b.buffer]);
  }
  const dir = await navigator.storage.getDirectory();
  const f = await dir.getFileHandle('timers-diag.bin', { create: true });
  h = await f.createSyncAccessHandle();
  size = e.data.open;
  const piece = new Uint8Array(${4 * MB}).fill(5);
  for (let o = 0; o < size; o += piece.length) h.write(piece, { at: o });
  h.flush();
  self.postMessage('ready');
};`;

function asker(target) {
  return (msg) =>
    new Promise((resolve) => {
      target.onmessage = (e) => resolve(e.data);
      target.postMessage(msg);
    });
}

function worker(realm, source = WORKER) {
  const url = realm.URL.createObjectURL(new realm.Blob([source], { type: 'text/javascript' }));
  const w = new realm.Worker(url);
  return {
    ask: asker(w),
    /** A port of `other`'s realm on which this worker answers. */
    port: (other) => {
      const { port1, port2 } = new other.MessageChannel();
      w.postMessage(null, [port2]);
      return port1;
    },
    close: () => w.terminate(),
  };
}

async function reader(w, chunks, work) {
  const t0 = performance.now();
  for (let i = 0; i < chunks; i++) {
    const chunk = await w.ask(work ? { chunk: work } : 'chunk');
    await new Promise((r) => setTimeout(r, chunk.byteLength / 50e3));
  }
  return performance.now() - t0;
}

/** The gallery's loop in `realm` (this window or another) until `done` settles: its laps. */
async function gallery(ask, done) {
  let over = false;
  done.finally(() => (over = true));
  let laps = 0;
  const t0 = performance.now();
  while (!over) {
    await ask(laps);
    laps++;
    // This page's timer, as the stall bench's gallery uses, whichever tab owns the worker.
    await new Promise((r) => setTimeout(r, EVERY_MS));
  }
  return { laps, msPerLap: (performance.now() - t0) / laps };
}

/**
 * `tab`: the gallery's worker in another tab; `port`: the gallery asks the
 * reader's worker through a port of its tab's, as a following tab asks
 * the leader's worker.
 */
/**
 * What a leading tab of the package holds beside its worker: a Web Lock
 * held, a SharedWorker (its broker) and a BroadcastChannel, each open
 * until the function returned is called.
 */
function leadLike() {
  let release;
  navigator.locks.request('timers-diag-lead', () => new Promise((r) => (release = r)));
  const url = URL.createObjectURL(new Blob(['onconnect = (e) => e.ports[0].postMessage(1);'], { type: 'text/javascript' }));
  const shared = new SharedWorker(url);
  shared.port.start();
  const channel = new BroadcastChannel('timers-diag');
  return () => {
    release?.();
    shared.port.close();
    channel.close();
  };
}

export async function run({ tab = true, port = false, chunks = 128, opfs = false, leader = false, work = 0 } = {}) {
  const realm = tab ? await anotherTab() : window;
  const unlead = leader ? leadLike() : null;
  const w = worker(window, opfs ? OPFS_WORKER : WORKER);
  if (opfs && (await w.ask({ open: 64 * 4 * MB })) !== 'ready') throw new Error('the OPFS reader did not start');
  const g0 = port ? null : worker(realm);
  const ask = port ? asker(w.port(realm)) : g0.ask;
  const alone = await reader(w, chunks, work);
  const done = reader(w, chunks, work);
  const g = await gallery(ask, done);
  const beside = await done;
  const idle = await gallery(ask, new Promise((r) => setTimeout(r, 2000)));
  w.close();
  g0?.close();
  unlead?.();
  if (tab) realm.close();
  const where = `gallery in ${tab ? 'another tab' : 'this page'}, ${port ? "through a port to the reader's worker" : 'its own worker'}${opfs ? ', the reader reading OPFS' : ''}${leader ? ", a leading tab's lock, broker and channel held" : ''}${work ? `, ${work} ms of work a chunk` : ''}`;
  return [
    { workload: 'reader at 50 MB/s, alone', config: where, median: alone, n: 1 },
    { workload: 'reader at 50 MB/s, beside the gallery', config: where, median: beside, n: 1 },
    { workload: `gallery ms per lap (a ${EVERY_MS} ms timer), beside the reader`, config: where, median: g.msPerLap, n: g.laps },
    { workload: `gallery ms per lap (a ${EVERY_MS} ms timer), alone`, config: where, median: idle.msPerLap, n: idle.laps },
  ];
}

export const passes = [{ tab: true, port: true }, { tab: true }, { tab: false, port: true }, { tab: false }];
