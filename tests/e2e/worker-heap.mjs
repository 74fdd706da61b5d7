// What a page's dedicated workers hold alive, in Chromium: every
// `every` ms, a heap snapshot of each worker over CDP (a snapshot collects
// garbage first, so it holds only what is reachable), and the sum of its
// objects' own sizes: the JS heap, and the ArrayBuffers' bytes, the wasm
// memory among them.
//
// Not `Runtime.getHeapUsage`: its `backingStorageSize` still counts the
// ArrayBuffers a collection has freed until V8 lets their bytes go, which
// a worker busy in one long synchronous call does late. Beside a 1 GiB
// `File` going into IndexedDB storage it read 193–329 MiB where snapshots
// taken at those moments held 57–60 MiB (the floor's own worker read 197
// MiB where it held 10).
//
// Firefox and WebKit let nothing outside chrome code read a worker's heap,
// nor do their drivers: there is no such meter for them.

/** The bytes a V8 heap snapshot holds: the sum of its nodes' `self_size`. */
function liveBytes(snapshot) {
  const { snapshot: head, nodes } = JSON.parse(snapshot);
  const fields = head.meta.node_fields;
  const at = fields.indexOf('self_size');
  let sum = 0;
  for (let i = at; i < nodes.length; i += fields.length) sum += nodes[i];
  return sum;
}

/**
 * Starts sampling `page`'s dedicated workers (those there now and those
 * made later). `stop()` ends it and gives each worker's
 * `{ url, peak, samples }`: the most bytes one snapshot held, and how
 * many snapshots were taken.
 */
export async function sampleWorkerHeaps(page, { every = 200 } = {}) {
  const cdp = await page.context().newCDPSession(page);
  const workers = new Map();
  let id = 0;
  cdp.on('Target.attachedToTarget', ({ sessionId, targetInfo }) => {
    if (targetInfo.type === 'worker') workers.set(sessionId, { url: targetInfo.url, peak: 0, samples: 0, chunks: [], asked: 0 });
  });
  cdp.on('Target.detachedFromTarget', ({ sessionId }) => {
    const w = workers.get(sessionId);
    if (w) w.gone = true;
    w?.answered?.();
  });
  cdp.on('Target.receivedMessageFromTarget', ({ sessionId, message }) => {
    const w = workers.get(sessionId);
    if (!w) return;
    const msg = JSON.parse(message);
    if (msg.method === 'HeapProfiler.addHeapSnapshotChunk') w.chunks.push(msg.params.chunk);
    if (msg.id !== w.asked) return;
    if (!msg.error && w.chunks.length) {
      w.peak = Math.max(w.peak, liveBytes(w.chunks.join('')));
      w.samples += 1;
    }
    w.chunks = [];
    w.asked = 0;
    w.answered?.();
  });
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  const ask = (sessionId, w) => {
    w.asked = ++id;
    const message = JSON.stringify({ id: w.asked, method: 'HeapProfiler.takeHeapSnapshot', params: { reportProgress: false } });
    cdp.send('Target.sendMessageToTarget', { sessionId, message }).catch(() => w.answered?.());
  };
  const timer = setInterval(() => {
    for (const [sessionId, w] of workers) if (!w.asked && !w.gone) ask(sessionId, w);
  }, every);
  return {
    async stop() {
      clearInterval(timer);
      // The snapshots under way are waited for (a worker that ended answers none).
      const pending = [...workers.values()].filter((w) => w.asked && !w.gone);
      await Promise.all(pending.map((w) => new Promise((resolve) => (w.answered = resolve))));
      await cdp.detach().catch(() => {});
      return [...workers.values()].map(({ url, peak, samples }) => ({ url, peak, samples }));
    },
  };
}
