// Experiment 029: does a worker that gives up its thread by a message to
// itself (turn.ts) let the page's messages in between its steps? A long
// task of `steps` × `stepMs` runs in a worker while the page pings it
// every `everyMs`; each ping's round trip is timed. If the worker's own
// messages go first, a ping waits for the whole task.
import { time } from './measure.js';

async function once(how, { steps, stepMs, everyMs, port }) {
  const w = new Worker(new URL('./turn-worker.js', import.meta.url));
  const pings = new Map();
  const times = [];
  let done;
  const finished = new Promise((r) => (done = r));
  const pong = (e) => times.push(performance.now() - pings.get(e.data.pong));
  w.onmessage = (e) => {
    if (e.data.pong !== undefined) pong(e);
    else done(e.data.done);
  };
  // `port`: the pings go on a MessagePort handed to the worker.
  let pinger = w;
  if (port) {
    const channel = new MessageChannel();
    channel.port1.onmessage = pong;
    w.postMessage({ port: channel.port2 }, [channel.port2]);
    pinger = channel.port1;
  }
  await new Promise((r) => setTimeout(r, 50));
  w.postMessage({ how, steps, stepMs });
  let over = false;
  finished.then(() => (over = true));
  for (let i = 0; !over; i++) {
    pings.set(i, performance.now());
    pinger.postMessage({ ping: i });
    await new Promise((r) => setTimeout(r, everyMs));
  }
  const taskMs = await finished;
  w.terminate();
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return {
    workload: `ping while ${steps} × ${stepMs} ms steps run`,
    config: `yield by ${how}`,
    median: at(0.5),
    p95: at(0.95),
    n: times.length,
    note: `worst ${times.at(-1).toFixed(1)} ms; task ${taskMs.toFixed(0)} ms`,
  };
}

export async function run({ steps = 200, stepMs = 2, everyMs = 5, port = false, ways = ['channel', 'timeout'] } = {}) {
  await time(async () => {}, { n: 1, warmup: 0 });
  const rows = [];
  const via = port ? ', pings on a MessagePort' : '';
  for (const pass of [1, 2]) {
    for (const how of pass === 1 ? ways : [...ways].reverse())
      rows.push({ ...(await once(how, { steps, stepMs, everyMs, port })), config: `yield by ${how}${via}, pass ${pass}` });
  }
  return rows;
}
