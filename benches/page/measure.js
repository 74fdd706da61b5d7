// Timing helpers that run in the page.

/** Runs `fn` `warmup` times, then `n` times; returns { median, p95 } in ms. */
export async function time(fn, { n = 30, warmup = 5 } = {}) {
  for (let i = 0; i < warmup; i++) await fn();
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  return { median: at(0.5), p95: at(0.95), n };
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
