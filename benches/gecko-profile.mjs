// Reads a Gecko profile that Firefox wrote at shutdown (experiment 034):
// each thread's CPU time per second within windows of the profile's time,
// and how long messages took from a sending thread to a receiving one
// (each send paired with the next receipt after it: for a loop that waits
// for each answer before its next call).
//
// Record one (no stack sampling needed; IPC markers and CPU):
//   MOZ_PROFILER_STARTUP=1 MOZ_PROFILER_STARTUP_ENTRIES=16000000 \
//   MOZ_PROFILER_STARTUP_FEATURES=cpu,ipcmessages \
//   MOZ_PROFILER_STARTUP_FILTERS='GeckoMain,DOM Worker,IPC I/O Parent,IPC I/O Child,Timer' \
//   MOZ_PROFILER_SHUTDOWN=/tmp/ff.json RESQ_ENGINE=firefox node benches/run.mjs export-tab-diag '[{"mode":"calls"}]'
// then: node benches/gecko-profile.mjs /tmp/ff.json 32000-51000,56000-96000
//
// Times are ms since the parent process's start. Threads are named
// `<pid>/<name>/<tid>`; `hops` takes two tids of one process.

import { readFileSync } from 'node:fs';

const [file, windowsArg, hopsArg] = process.argv.slice(2);
if (!file || !windowsArg) {
  console.error('usage: node benches/gecko-profile.mjs <profile.json> <from-to,...> [hops <sendTid>:<recvTid>,...]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const windows = windowsArg.split(',').map((w) => w.split('-').map(Number));
const processes = [profile, ...(profile.processes ?? [])];
// Each thread with the offset of its process's clock from the parent's.
const threads = processes.flatMap((pr) =>
  pr.threads.map((th) => ({ th, off: pr.meta.startTime - profile.meta.startTime, label: `${th.pid}/${th.name}/${th.tid}` })),
);

console.log(`CPU ms per second, in each window (${windowsArg}):`);
const rows = [];
for (const { th, off, label } of threads) {
  const S = th.samples.schema;
  if (S.threadCPUDelta === undefined) continue;
  const cpu = windows.map(([a, b]) => {
    let ns = 0;
    for (const s of th.samples.data) {
      const t = s[S.time] + off;
      if (t >= a && t < b) ns += s[S.threadCPUDelta] ?? 0;
    }
    return ns / 1e6 / ((b - a) / 1000);
  });
  if (cpu.some((x) => x >= 1)) rows.push([label, cpu]);
}
rows.sort((x, y) => Math.max(...y[1]) - Math.max(...x[1]));
for (const [label, cpu] of rows) console.log(`  ${label.padEnd(40)}${cpu.map((x) => x.toFixed(1).padStart(9)).join('')}`);

/** A thread's IPC markers of `type`, `direction` and `phase`, in order, in the parent's time. */
function ipc(tid, type, direction, phase = 'endpoint') {
  const { th, off } = threads.find((t) => t.th.tid === tid);
  const M = th.markers.schema;
  const out = [];
  for (const m of th.markers.data) {
    const d = m[M.data];
    if (d?.type === 'IPC' && d.messageType === type && d.direction === direction && d.phase === phase) out.push(d.startTime + off);
  }
  return out.sort((a, b) => a - b);
}

const quantiles = (l) => {
  l.sort((a, b) => a - b);
  const q = (x) => l[Math.floor(x * (l.length - 1))]?.toFixed(2);
  return `n ${l.length}, p10 ${q(0.1)}, p50 ${q(0.5)}, p90 ${q(0.9)} ms`;
};

// MessagePort messages between threads (Firefox routes them through the
// parent process): each send paired with the next receipt after it.
for (const pair of (hopsArg ?? '').split(',').filter(Boolean)) {
  const [from, to] = pair.split(':').map(Number);
  const sends = ipc(from, 'PMessagePort::Msg_PostMessages', 'sending');
  const receipts = ipc(to, 'PMessagePort::Msg_ReceiveData', 'receiving');
  for (const [a, b] of windows) {
    const lat = [];
    let j = 0;
    for (const s of sends.filter((t) => t >= a && t < b)) {
      while (j < receipts.length && receipts[j] < s) j++;
      if (j < receipts.length) lat.push(receipts[j++] - s);
    }
    if (lat.length) console.log(`MessagePort ${from} → ${to}, ${a}-${b}: ${quantiles(lat)}`);
  }
}

// And on each thread of a pair, from a receipt to its next send: the
// time the thread took to answer (the worker) or to ask again (the page).
for (const pair of (hopsArg ?? '').split(',').filter(Boolean)) {
  const [tid] = pair.split(':').map(Number);
  const receipts = ipc(tid, 'PMessagePort::Msg_ReceiveData', 'receiving');
  const sends = ipc(tid, 'PMessagePort::Msg_PostMessages', 'sending');
  for (const [a, b] of windows) {
    const lat = [];
    let j = 0;
    for (const r of receipts.filter((t) => t >= a && t < b)) {
      while (j < sends.length && sends[j] < r) j++;
      if (j < sends.length) lat.push(sends[j] - r);
    }
    if (lat.length) console.log(`on ${tid}, a receipt to its next send, ${a}-${b}: ${quantiles(lat)}`);
  }
}
