// Timing helpers that run in the page.

/**
 * Runs `fn` `warmup` times, then `n` times; returns { median, p95 } in ms.
 * `after`, if given, runs after each call, outside the timing (a pause
 * that lets the worker's idle work finish, say).
 */
export async function time(fn, { n = 30, warmup = 5, after } = {}) {
  for (let i = 0; i < warmup; i++) {
    await fn();
    await after?.();
  }
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
    await after?.();
  }
  return summary(samples);
}

/** The median and p95 of timed samples (sorts them). */
export function summary(samples) {
  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  return { median: at(0.5), p95: at(0.95), n: samples.length };
}

/** A bare worker echoing messages back: the floor of any worker round trip. */
export function echoWorker() {
  const w = new Worker(new URL('./echo-worker.js', import.meta.url));
  const roundTrip = (msg, transfer = []) =>
    new Promise((resolve) => {
      w.onmessage = (e) => resolve(e.data);
      w.postMessage(msg, transfer);
    });
  return { roundTrip, close: () => w.terminate() };
}

/**
 * Main-thread busy time during `fn`, in ms: a MessageChannel probe pings
 * itself continuously; any gap between pings longer than `3 ×` the idle
 * ping interval counts, minus that interval. What it sees is everything
 * that blocks the page: structured-clone (de)serialization, JSON.parse, our
 * own JS.
 */
export async function busy(fn) {
  const ch = new MessageChannel();
  let last = performance.now();
  let blocked = 0;
  let running = true;
  const gaps = [];
  ch.port1.onmessage = () => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    if (running) ch.port2.postMessage(0);
  };
  ch.port2.postMessage(0);
  // Calibrate: the idle ping interval.
  await new Promise((r) => setTimeout(r, 20));
  const idle = [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length / 2)] ?? 0.01;
  gaps.length = 0;
  last = performance.now();
  await fn();
  const now = performance.now();
  gaps.push(now - last);
  running = false;
  ch.port1.close();
  for (const g of gaps) if (g > 3 * idle + 0.02) blocked += g - idle;
  return blocked;
}

/** Like `time`, and the median main-thread busy time of a second series. */
export async function timeAndBusy(fn, { n = 20, warmup = 3 } = {}) {
  const wall = await time(fn, { n, warmup });
  const b = [];
  for (let i = 0; i < Math.max(5, Math.floor(n / 2)); i++) b.push(await busy(fn));
  b.sort((x, y) => x - y);
  return { ...wall, busy: b[Math.floor(b.length / 2)] };
}

export function floorWorker() {
  const w = new Worker(new URL('./floor-worker.js', import.meta.url));
  const call = (msg, transfer = []) =>
    new Promise((resolve) => {
      w.onmessage = (e) => resolve(e.data);
      w.postMessage(msg, transfer);
    });
  return {
    write: (bytes) => call({ op: 'write', bytes }, [bytes.buffer]),
    append: (bytes, at) => call({ op: 'append', bytes, at }, [bytes.buffer]),
    read: (size) => call({ op: 'read', size }),
    flush: () => call({ op: 'flush' }),
    readAt: (at, size) => call({ op: 'readAt', at, size }),
    idbWrite: (bytes) => call({ op: 'idbWrite', bytes }, [bytes.buffer]),
    idbRead: () => call({ op: 'idbRead' }),
    close: async () => {
      await call({ op: 'close' });
      w.terminate();
    },
  };
}

export const KB = 1024;
export const MB = 1024 * 1024;
export const label = (n) => (n >= MB ? `${n / MB} MB` : n >= KB ? `${n / KB} KB` : `${n} B`);

/** Incompressible bytes (getRandomValues fills at most 64 KB a call). */
export function randomBytes(n) {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

/** The engine alone, in a worker of its own (see engine-worker.js). */
export async function engineWorker(name) {
  const w = new Worker(new URL('./engine-worker.js', import.meta.url), { type: 'module' });
  const call = (msg, transfer = []) =>
    new Promise((resolve) => {
      w.onmessage = (e) => resolve(e.data);
      w.postMessage(msg, transfer);
    });
  await call({ op: 'open', name });
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    insert: async (bytes, n) => median(await call({ op: 'insert', bytes, n })),
    select: async (n) => median(await call({ op: 'select', n })),
    close: async () => {
      await call({ op: 'close' });
      w.terminate();
    },
  };
}

/**
 * Asks the probe worker of database `name` (benches/run.mjs serves
 * tests/e2e/probe-worker.js in place of the package's worker): `written`
 * (bytes written to OPFS) or `memory` (the wasm instance's bytes).
 */
export function probe(name, what) {
  return new Promise((resolve, reject) => {
    const channel = new BroadcastChannel('resq-wasm-probe');
    const id = Math.random();
    channel.onmessage = ({ data }) => {
      if (data.id !== id) return;
      channel.close();
      // null: the probe worker has no wasm instance to look at.
      if (data.value === null) reject(new Error(`the probe worker of ${name} could not answer ${what}: it saw no wasm instance`));
      else resolve(data.value);
    };
    channel.postMessage({ probe: what, worker: `resq-wasm: ${name}`, id });
  });
}

/** Another tab of this page's origin, once it has loaded: its window. */
export async function anotherTab() {
  const w = window.open(location.href);
  if (!w) throw new Error('the page could not open another tab');
  await new Promise((r) => w.addEventListener('load', r, { once: true }));
  return w;
}
