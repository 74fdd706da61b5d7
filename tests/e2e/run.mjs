// The e2e layer's runner (scripts/test.sh): every test file of every pass
// named, several files at once. Each file is its own `node --test` process
// with its own browser, profile, server and origin (harness.mjs), so files
// share nothing but the machine. Files of different passes run side by
// side: a pass's last slow file does not leave the machine idle.
//
//   node tests/e2e/run.mjs [--jobs N] [--only name,…] pass…
//
// A pass is an engine (chromium, firefox, webkit, node) or an engine forced
// onto IndexedDB (chromium-idb, firefox-idb); passes.mjs says which files
// each runs. `--only` keeps the files whose names contain one of the words.
// `--jobs` (RESQ_E2E_JOBS) is how many files run at once; passes.mjs names
// the slow ones, started first (SLOW).
//
// As each file ends, its report is printed whole (spec on a terminal, TAP
// otherwise), with its time and the CPU its processes used; the closing
// lines give each pass's counts, time and slowest files. A file may take
// at most 10 minutes: a hang fails that file, with the last test it
// reported, and the rest go on. Exits 1 if any test failed.
// RESQ_E2E_RECORD=<file> writes each file's pass, time and CPU as JSON.

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { firefoxTemplate } from './harness.mjs';
import { SLOW, filesOf } from './passes.mjs';

const LIMIT_MS = 10 * 60_000;
const KILL_AFTER_MS = 30_000;

const { values, positionals: passes } = parseArgs({
  allowPositionals: true,
  options: { jobs: { type: 'string', default: process.env.RESQ_E2E_JOBS ?? '4' }, only: { type: 'string' } },
});
const jobs = Number(values.jobs);
if (!(jobs >= 1) || passes.length === 0) throw new Error('usage: node tests/e2e/run.mjs [--jobs N] [--only name,…] pass…');
const only = values.only?.split(',').filter(Boolean);

/** One test file in one pass, and what became of it. */
function job(pass, file) {
  return { pass, file, name: basename(file), slow: SLOW.indexOf(basename(file)) };
}

// Slow files first, the slowest at the head (SLOW's order), then the rest;
// the passes taken in turn within each, so engines mix.
const queue = passes
  .flatMap((pass) => filesOf(pass).map((file) => job(pass, file)))
  .filter((j) => !only || only.some((w) => j.name.includes(w)))
  .map((j, i) => ({ ...j, i }))
  .sort((a, b) => rank(a) - rank(b) || a.i - b.i);
function rank(j) {
  return j.slow >= 0 ? j.slow : SLOW.length;
}
if (queue.length === 0) throw new Error(`no test file of ${passes.join(', ')} has a name holding ${only.join(' or ')}`);

/**
 * The CPU each running file's processes use, sampled from /proc once a
 * second: a process counts for the file whose `node --test` it descends
 * from (a browser starts its own process group, so groups would miss it).
 * Each process's last reading counts, so a process's last second before
 * it ends is missed: a floor, not an exact count.
 */
const ticks = new Map(); // pid → [job, utime + stime in ticks]
function sampleCpu() {
  const parent = new Map();
  const used = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(f[1]));
      used.set(Number(entry), Number(f[11]) + Number(f[12]));
    } catch {
      // The process ended while we looked.
    }
  }
  const roots = new Map(running.map((j) => [j.pid, j]));
  for (const [pid, t] of used) {
    let p = pid;
    for (let depth = 0; p > 1 && !roots.has(p) && depth < 64; depth++) p = parent.get(p);
    const j = roots.get(p);
    if (j) ticks.set(pid, [j, t]);
  }
}
function cpuOf(j) {
  let t = 0;
  for (const [job, n] of ticks.values()) if (job === j) t += n;
  return t / 100;
}

// One Firefox profile started once, copied into each file's (harness.mjs, fromTemplate).
if (queue.some((j) => j.pass.startsWith('firefox'))) {
  const template = mkdtempSync(join(tmpdir(), 'resq-firefox-template-'));
  process.on('exit', () => rmSync(template, { recursive: true, force: true }));
  await firefoxTemplate(template);
  process.env.RESQ_FIREFOX_TEMPLATE = template;
}

const terminal = process.stdout.isTTY;
const began = Date.now();
let running = [];
setInterval(sampleCpu, 1000).unref();
const done = [];

/** Runs job `j`: its file in a process group of its own, so a hang's whole tree can go. */
function run(j) {
  return new Promise((resolve) => {
    j.began = Date.now();
    const env = { ...process.env, RESQ_ENGINE: j.pass.replace(/-idb$/, ''), RESQ_NO_SYNC_HANDLES: j.pass.endsWith('-idb') ? '1' : '' };
    const reporter = terminal ? 'spec' : 'tap';
    const child = spawn(
      process.execPath,
      [
        '--test',
        '--test-concurrency=1',
        `--test-reporter=${reporter}`,
        '--test-reporter-destination=stdout',
        '--test-reporter=tap',
        '--test-reporter-destination=stderr',
        j.file,
      ],
      { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    j.pid = child.pid;
    let shown = '';
    let tap = '';
    child.stdout.on('data', (c) => (shown += c));
    child.stderr.on('data', (c) => (tap += c));
    let hung = false;
    const limit = setTimeout(() => {
      hung = true;
      kill(child.pid, 'SIGTERM');
      setTimeout(() => kill(child.pid, 'SIGKILL'), KILL_AFTER_MS).unref();
    }, LIMIT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      // Whatever the file left behind (a browser it did not close) goes with it.
      kill(child.pid, 'SIGKILL');
      j.seconds = (Date.now() - j.began) / 1000;
      if (hung) {
        const last = tap.match(/^(not )?ok .*$/gm)?.at(-1);
        const why = `not ok - ${j.name} stopped after ${LIMIT_MS / 60_000} minutes (a test hangs); the last test it reported: ${last ?? 'none'}`;
        tap += `\n${why}\n  ---\n  ...\n# fail 1\n`;
        shown += `\n${why}\n`;
      }
      j.tap = tap;
      j.failed = hung || code !== 0 || signal !== null;
      resolve({ shown });
    });
  });
}

function kill(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}

/** The counts of the TAP summaries in `tap` (one per file): { pass, fail, skipped }; cancelled counts as failed. */
function counts(tap) {
  const n = { pass: 0, fail: 0, cancelled: 0, skipped: 0 };
  for (const [, key, value] of tap.matchAll(/^# (pass|fail|cancelled|skipped) (\d+)$/gm)) n[key] += Number(value);
  return { pass: n.pass, fail: n.fail + n.cancelled, skipped: n.skipped };
}

/** Resolves once every job has ended (set below). */
let allDone;

/** Starts jobs while there is room; resolves allDone after the last. */
function next() {
  if (queue.length === 0 && running.length === 0) return allDone();
  while (queue.length > 0 && running.length < jobs) {
    const j = queue.shift();
    running.push(j);
    run(j).then(({ shown }) => {
      j.cpu = cpuOf(j);
      running = running.filter((r) => r !== j);
      done.push(j);
      process.stdout.write(shown);
      const state = j.failed ? 'FAILED' : 'ok';
      const left = `${done.length}/${done.length + running.length + queue.length}`;
      console.log(`-- ${j.name} in ${j.pass}: ${Math.round(j.seconds)} s (CPU ${Math.round(j.cpu)} s), ${state} (${left})`);
      next();
    });
  }
}

await new Promise((resolve) => {
  allDone = resolve;
  next();
});

const minutes = (s) => `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
console.log(`== e2e, per pass (${jobs} files at once; ${minutes((Date.now() - began) / 1000)} in all)`);
let failed = false;
for (const pass of passes) {
  const mine = done.filter((j) => j.pass === pass);
  if (mine.length === 0) continue;
  const n = counts(mine.map((j) => j.tap).join('\n'));
  const files = mine.filter((j) => j.failed).length;
  failed ||= files > 0 || n.fail > 0;
  const span = (Math.max(...mine.map((j) => j.began + j.seconds * 1000)) - Math.min(...mine.map((j) => j.began))) / 1000;
  const busy = mine.reduce((s, j) => s + j.seconds, 0);
  const cpu = mine.reduce((s, j) => s + j.cpu, 0);
  console.log(
    `${pass}: ${n.pass} passed, ${n.fail} failed, ${n.skipped} skipped; ${mine.length} files, ${minutes(busy)} of file time and ${minutes(cpu)} of CPU, from first start to last end ${minutes(span)}`,
  );
  for (const j of [...mine].sort((a, b) => b.seconds - a.seconds).slice(0, 5))
    console.log(`  ${String(Math.round(j.seconds)).padStart(4)} s  ${j.name} (CPU ${Math.round(j.cpu)} s)`);
}
if (process.env.RESQ_E2E_RECORD)
  writeFileSync(
    process.env.RESQ_E2E_RECORD,
    JSON.stringify(done.map(({ pass, name, seconds, cpu, failed }) => ({ pass, name, seconds, cpu, failed }))),
  );
const failures = done.filter((j) => j.failed);
if (failures.length > 0) {
  console.log('== e2e, what failed');
  // Each failed or cancelled test with its diagnostics (TAP, from "not ok" to the YAML's closing "...").
  for (const j of failures) {
    if (!/^ *not ok /m.test(j.tap)) console.log(`[${j.pass}] ${j.name} failed with no failed test in its report: it exited with an error`);
    let on = false;
    for (const line of j.tap.split('\n')) {
      if (/^ *not ok /.test(line)) on = true;
      if (on) console.log(`[${j.pass}] ${line}`);
      if (on && /^ *\.\.\.$/.test(line)) on = false;
    }
  }
}
process.exit(failed ? 1 : 0);
