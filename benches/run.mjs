// Runs a benchmark page module in headless Chromium (cross-origin isolated,
// for 5 µs timers), prints its tables and saves the raw figures.
// RESQ_ENGINE=firefox runs it in Firefox ESR instead, as the e2e tests
// drive it (the stall bench, say; the peers' builds are timed in Chromium).
//
//   node benches/run.mjs <name> [args as JSON [label]]
//   names: compare (default), query-roundtrip, blob-transfer, staging,
//   ranged-read, media-paths, file-limit, backup (one module each in
//   benches/page/)
//
// A module exports `run(args)` returning rows { workload, config?, median,
// p95, n, busy? }, and optionally `passes`: the args of each pass (an
// order-flipped pair, say), all run in the same browser session. Args on
// the command line replace `passes`; a compare run given args (some
// engines only, say) leaves the report (latest.md and charts) alone. The
// raw figures go to benches/results/<date>-<label>.json; the label is the
// name, or <name>-args for a run given args.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { serveWithProbe } from './probe-server.mjs';
import { ENGINE, launch } from '../tests/e2e/harness.mjs';

const name = process.argv[2] ?? 'compare';
const label = process.argv[4] ?? (process.argv[3] ? `${name}-args` : name);
const root = resolve(import.meta.dirname, '..');
// The package as it ships is mounted too, without the probe (compare.js
// times its cold start).
const server = await serveWithProbe(root, { '/shipped/': resolve(root, 'pkg') });
// A real on-disk profile: a launch() without one is off the record, and
// Chromium then keeps OPFS in memory, far slower for large files than disk.
const profile = mkdtempSync(resolve(tmpdir(), 'resq-bench-'));
const browser = await launch(profile, { engine: ENGINE, backgroundTimers: false });
const fmt = (x) => (x === undefined ? '' : x < 1 ? x.toFixed(3) : x < 100 ? x.toFixed(2) : x.toFixed(0));

try {
  const page = await browser.newPage();
  page.on('console', (m) => console.error(`[page] ${m.text()}`));
  await page.goto(`${server.url}benches/page/index.html`);
  if (!(await page.evaluate(() => crossOriginIsolated))) throw new Error('the bench page must be cross-origin isolated');
  // Args on the command line: one pass's, or (an array) each pass's.
  const passes = process.argv[3]
    ? [JSON.parse(process.argv[3])].flat()
    : await page.evaluate(async (n) => (await import(`./${n}.js`)).passes ?? [{}], name);
  const results = [];
  for (const [i, args] of passes.entries()) {
    const rows = await page.evaluate(async ([n, a]) => (await import(`./${n}.js`)).run(a), [name, args]);
    results.push({ pass: i + 1, args, rows });
    console.log(`\n### ${name}, pass ${i + 1} ${JSON.stringify(args)}\n`);
    console.log('| workload | config | median ms | p95 ms | main-thread busy ms | n |\n|---|---|---:|---:|---:|---:|');
    for (const r of rows) {
      const workload = r.row ? `${r.workload} ${r.row}` : r.workload;
      const extra = r.raw
        ? ` raw ${r.raw} B, gzip ${r.gzip} B`
        : r.written !== undefined
          ? ` (OPFS bytes written ${r.written})`
          : r.mbps !== undefined
            ? ` (${r.mbps.toFixed(0)} MB/s)`
            : '';
      console.log(
        `| ${workload}${extra} | ${r.config ?? r.engine ?? ''} | ${fmt(r.median)} | ${fmt(r.p95)} | ${fmt(r.busy)} | ${r.n ?? ''} |`,
      );
    }
  }
  const out = resolve(root, 'benches/results');
  mkdirSync(out, { recursive: true });
  const file = resolve(out, `${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}-${label}.json`);
  const ua = await page.evaluate(() => navigator.userAgent);
  writeFileSync(file, JSON.stringify({ name, date: new Date().toISOString(), userAgent: ua, results }, null, 1));
  console.log(`\nraw figures: ${file}`);
  if (name === 'compare' && !process.argv[3]) {
    const { execFileSync } = await import('node:child_process');
    execFileSync(process.execPath, [resolve(root, 'benches/report.mjs'), file], { stdio: 'inherit' });
  }
} finally {
  await browser.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
