// node run-node.js chromium|firefox|firefox-private
const which = process.argv[2];
const M = require('path').resolve(__dirname, '../../../node_modules') + '/';
const fs = require('fs');
const URLB = 'http://localhost:8765/index.html?phase=';
async function runPhase(page, phase) {
  await page.goto(URLB + phase);
  const t0 = Date.now();
  while (Date.now() - t0 < 240000) {
    const r = await page.evaluate(() => window.__result);
    if (r) return r;
    await new Promise((ok) => setTimeout(ok, 250));
  }
  return { fatal: 'timeout' };
}
(async () => {
  const dir = fs.mkdtempSync(require('path').join(require('os').tmpdir(), 'idb-probe-' + which + '-'));
  let close, page, out = { engine: which };
  if (which === 'chromium') {
    const { chromium } = require(M + 'playwright-core');
    const ctx = await chromium.launchPersistentContext(dir, { executablePath: '/usr/bin/chromium', headless: true,
      args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
    page = ctx.pages()[0] || await ctx.newPage(); close = () => ctx.close();
    out.version = ctx.browser() ? ctx.browser().version() : null;
  } else {
    const puppeteer = require(M + 'puppeteer-core');
    const opts = { browser: 'firefox', executablePath: '/usr/bin/firefox-esr', headless: true, userDataDir: dir };
    if (which === 'firefox-private') opts.extraPrefsFirefox = { 'browser.privatebrowsing.autostart': true };
    const b = await puppeteer.launch(opts);
    page = await b.newPage(); close = () => b.close(); out.version = await b.version();
  }
  out.write = await runPhase(page, 'write');
  // fresh page load + fresh worker for the read phase
  await page.goto('about:blank');
  out.read = await runPhase(page, 'read');
  await close();
  fs.writeFileSync('result-' + which + '.json', JSON.stringify(out, null, 1));
  console.log(JSON.stringify(out, null, 1));
})().catch((e) => { console.error(e); process.exit(1); });
