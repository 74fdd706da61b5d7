// Runs a benchmark page in headless Chromium and prints its table.
//   node benches/run.mjs query-roundtrip
import { chromium } from 'playwright-core';
import { resolve } from 'node:path';
import { serve } from '../scripts/serve.mjs';
import { CHROMIUM_ARGS } from '../tests/e2e/harness.mjs';

const name = process.argv[2] ?? 'query-roundtrip';
const server = await serve(resolve(import.meta.dirname, '..'), 0, { isolated: true });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}benches/page/index.html`);
  if (!(await page.evaluate(() => crossOriginIsolated))) throw new Error('the bench page must be cross-origin isolated');
  const rows = await page.evaluate(async (n) => (await import(`./${n}.js`)).run(), name);
  console.log(`| workload | median ms | p95 ms | n |\n|---|---:|---:|---:|`);
  for (const r of rows) console.log(`| ${r.workload} | ${r.median.toFixed(3)} | ${r.p95.toFixed(3)} | ${r.n} |`);
} finally {
  await browser.close();
  server.close();
}
