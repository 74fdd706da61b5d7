// Experiment 007's look at where a cold open() spends its time: a copy of
// a variant's package (benches/variants.sh) whose worker.js stamps the
// time at module start, lock, wasm ready, connection open and stage
// claim; then seven opens of fresh databases from one page. One run, for
// orientation, not a benchmark.
//   node benches/experiments/007-cold-start-probe.mjs <variant>
import { chromium } from 'playwright-core';
import { cpSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
const root = resolve(import.meta.dirname, '../..');
const { serve } = await import(`${root}/scripts/serve.mjs`);
const { CHROMIUM_ARGS } = await import(`${root}/tests/e2e/harness.mjs`);
const variant = process.argv[2] ?? 'o3';
const dir = `${root}/target/variants/${variant}-trace`;
rmSync(dir, { recursive: true, force: true });
cpSync(`${root}/target/variants/${variant}`, dir, { recursive: true });
let w = readFileSync(`${dir}/worker.js`, 'utf8');
const mark = (l) => `self.__t.push(['${l}', performance.timeOrigin + performance.now()]);`;
w = w.replace("import init,", "self.__t = [['worker module start', performance.timeOrigin + performance.now()]];\nimport init,");
w = w.replace('    ready ??= init();', `    ${mark('lock held, init starts')}\n    ready ??= init();`);
w = w.replace('    conn = await openPatiently(req);', `    ${mark('wasm ready')}\n    conn = await openPatiently(req);\n    ${mark('connection open')}`);
w = w.replace('    await stages.claim();', `    await stages.claim();\n    ${mark('stage claimed')}\n    console.log('TRACE ' + JSON.stringify(self.__t));`);
writeFileSync(`${dir}/worker.js`, w);
const server = await serve(root, 0, { isolated: true });
const profile = mkdtempSync(resolve(tmpdir(), 'cold-'));
const browser = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
const page = await browser.newPage();
const traces = [];
page.on('console', (m) => { if (m.text().startsWith('TRACE ')) traces.push(JSON.parse(m.text().slice(6))); });
page.on('worker', (wk) => wk.on('console', (m) => { if (m.text().startsWith('TRACE ')) traces.push(JSON.parse(m.text().slice(6))); }));
await page.goto(`${server.url}benches/page/index.html`);
const starts = await page.evaluate(async (d) => {
  const { open } = await import(`/target/variants/${d}/index.js`);
  const out = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.timeOrigin + performance.now();
    const db = await open(`cold-${i}-${Math.random()}.db`);
    const t1 = performance.timeOrigin + performance.now();
    await db.query('SELECT 1');
    const t2 = performance.timeOrigin + performance.now();
    await db.close();
    out.push([t0, t1, t2]);
  }
  return out;
}, `${variant}-trace`);
await new Promise((r) => setTimeout(r, 500));
for (const [i, [t0, t1, t2]] of starts.entries()) {
  const tr = traces.find((x) => x[0][1] >= t0 && x[0][1] <= t1) ?? [];
  console.log(`#${i} total ${(t2 - t0).toFixed(1)} ms (open ${(t1 - t0).toFixed(1)}): ` + tr.map(([l, t]) => `${l} +${(t - t0).toFixed(1)}`).join(', '));
}
await browser.close(); server.close(); rmSync(profile, { recursive: true, force: true });
