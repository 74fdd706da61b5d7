// Where a cold open() spends its time, for builds side by side (experiment
// 008). Each variant (a package in target/variants/<name>/, see
// benches/variants.sh) is copied with time stamps added: on the page when
// it starts the worker, and in the worker at module start, `open` received,
// its lock held, the wasm ready, the connection open and temp space
// claimed. One page then opens fresh OPFS databases, the variants taking
// turns (ABBA…), and prints the median of each step. The first open of each
// variant (fetching and compiling) is shown apart.
//   node benches/experiments/008-cold-start-probe.mjs <opens per variant> <variant>…
import { chromium } from 'playwright-core';
import { cpSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { CHROMIUM_ARGS } from '../../tests/e2e/harness.mjs';

const root = resolve(import.meta.dirname, '../..');
const [n, ...variants] = [Number(process.argv[2]), ...process.argv.slice(3)];

/** `text` with the line `anchor` (a statement, any indentation) followed, or preceded, by `add`; a clear failure if the build has no such line. */
function stamp(text, anchor, add, { before = false } = {}) {
  const line = new RegExp(`^([ \\t]*)${anchor.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm');
  if (!line.test(text)) throw new Error(`worker.js: no line ${JSON.stringify(anchor)} to stamp`);
  return text.replace(line, (all, indent) => (before ? `${indent}${add}\n${all}` : `${all}\n${indent}${add}`));
}
const now = 'performance.timeOrigin + performance.now()';
const mark = (label) => `self.__t.push(['${label}', ${now}]);`;
for (const v of variants) {
  const dir = `${root}/target/variants/${v}-trace`;
  rmSync(dir, { recursive: true, force: true });
  cpSync(`${root}/target/variants/${v}`, dir, { recursive: true });
  let w = readFileSync(`${dir}/worker.js`, 'utf8');
  // Module start: after its imports, or at the top of a worker in one file.
  const first = `self.__t = [['worker module start', ${now}]];\n`;
  w = w.includes('import init,') ? w.replace('import init,', `${first}import init,`) : first + w;
  w = stamp(w, 'async function open(req) {', mark('open received'));
  w = stamp(w, 'await ready;', mark('lock held'), { before: true });
  w = stamp(w, 'await ready;', mark('wasm ready'));
  w = stamp(w, 'conn = await openPatiently(req);', mark('connection open'));
  w = stamp(w, 'await stages.claim();', `${mark('temp space claimed')} console.log('TRACE ' + JSON.stringify(self.__t));`);
  writeFileSync(`${dir}/worker.js`, w);
  const link = readFileSync(`${dir}/link.js`, 'utf8');
  writeFileSync(`${dir}/link.js`, link.replace(/(\n\s*)const worker = /, `$1globalThis.__tw = ${now};$1const worker = `));
}

const server = await serve(root, 0, { isolated: true });
const profile = mkdtempSync(resolve(tmpdir(), 'cold-'));
const browser = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage();
  const traces = [];
  page.on('console', (m) => m.text().startsWith('TRACE ') && traces.push(JSON.parse(m.text().slice(6))));
  await page.goto(`${server.url}benches/page/index.html`);
  const opens = await page.evaluate(
    async ([variants, n]) => {
      const libs = await Promise.all(variants.map((v) => import(`/target/variants/${v}-trace/index.js`)));
      const out = [];
      for (let i = 0; i < n; i++) {
        const order = i % 2 ? [...variants.keys()].reverse() : [...variants.keys()];
        for (const k of order) {
          const t0 = performance.timeOrigin + performance.now();
          const db = await libs[k].open(`cold-${variants[k]}-${i}-${Math.random().toString(36).slice(2)}.db`);
          const t1 = performance.timeOrigin + performance.now();
          await db.query('SELECT 1');
          const t2 = performance.timeOrigin + performance.now();
          out.push({ variant: variants[k], i, t0, worker: globalThis.__tw, opened: t1, answered: t2 });
          await db.close();
        }
      }
      return out;
    },
    [variants, n],
  );
  await new Promise((r) => setTimeout(r, 300));
  const steps = [
    'page: open() to new Worker',
    'new Worker to worker module start',
    'to open received',
    'to lock held',
    'to wasm ready',
    'to connection open',
    'to temp space claimed',
    'to open() resolved',
    'SELECT 1',
    'total',
  ];
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const rows = new Map(variants.map((v) => [v, { first: null, steps: steps.map(() => []) }]));
  for (const o of opens) {
    const trace = traces.find((t) => t[0][1] >= o.worker && t[0][1] <= o.opened);
    if (!trace) throw new Error(`no trace for ${o.variant} open ${o.i}`);
    const at = [o.t0, o.worker, ...trace.map(([, t]) => t), o.opened, o.answered];
    const d = at.slice(1).map((t, j) => t - at[j]);
    d.push(o.answered - o.t0);
    const row = rows.get(o.variant);
    if (o.i === 0) row.first = d;
    else for (const [j, x] of d.entries()) row.steps[j].push(x);
  }
  console.log(`| step (ms) | ${variants.map((v) => `${v}: first open | ${v}: median of ${n - 1}`).join(' | ')} |`);
  console.log(`|---|${variants.map(() => '---:|---:').join('|')}|`);
  for (const [j, s] of steps.entries())
    console.log(
      `| ${s} | ${variants.map((v) => `${rows.get(v).first[j].toFixed(1)} | ${median(rows.get(v).steps[j]).toFixed(1)}`).join(' | ')} |`,
    );
} finally {
  await browser.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
