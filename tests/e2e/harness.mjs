// The e2e harness: packs the package (`npm pack`), installs the tarball into
// an empty folder as a user would, serves that folder on 127.0.0.1 and drives
// a browser: Debian's Chromium with playwright-core, Debian's Firefox ESR
// with puppeteer-core (WebDriver BiDi), or WebKitGTK's MiniBrowser over
// WebDriver (webkit.mjs), chosen by RESQ_ENGINE. Pages import
// 'resq-wasm' (and its entries such as 'resq-wasm/kysely') by their bare
// names through an import map pointing into node_modules, made from the
// packages' own `exports`; `start({ peers })` installs optional peers such
// as kysely beside it and maps them the same way.
//
// The tests are written against the Playwright page API they started with;
// for Firefox, `FirefoxPage` below adapts the few calls where Puppeteer's
// page differs, and `WebKitPage` (webkit.mjs) those WebDriver has, so a test
// runs unchanged in every engine. In the Node engine (node-page.mjs) a page
// is a Node process in the app's folder, and nothing is served.

import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { cpSync, mkdtempSync, readFileSync, readdirSync, renameSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { processTree, residentBytes } from './processes.mjs';
import { launchNode } from './node-page.mjs';
import { launchWebKit } from './webkit.mjs';

const repo = resolve(import.meta.dirname, '../..');

/**
 * The engine of this run: RESQ_ENGINE=chromium (the default), firefox,
 * webkit, or node (the package in Node, its pages Node processes:
 * node-page.mjs).
 */
export const ENGINE = process.env.RESQ_ENGINE || 'chromium';
if (!['chromium', 'firefox', 'webkit', 'node'].includes(ENGINE))
  throw new Error(`RESQ_ENGINE must be chromium, firefox, webkit or node, not ${ENGINE}`);

/** Why a test cannot run in the Node engine, or false: `{ skip: notInNode('a reason') }`. */
export const notInNode = (why) => ENGINE === 'node' && `Node: ${why}`;

/**
 * RESQ_NO_SYNC_HANDLES=1: every worker of the run is the probe worker with
 * `noSyncHandles`, so Chromium and Firefox have OPFS without sync access
 * handles, as WebKitGTK does, and file names open in IndexedDB.
 */
const NO_SYNC_HANDLES = Boolean(process.env.RESQ_NO_SYNC_HANDLES);

/** Why this run's engine cannot hold an OPFS database (see engines.mjs), or null: its file names open in IndexedDB. */
export const NO_OPFS =
  ENGINE === 'node'
    ? 'Node keeps databases in memory only'
    : ENGINE === 'webkit'
      ? "WebKitGTK's OPFS cannot open a sync access handle in a worker"
      : NO_SYNC_HANDLES
        ? 'RESQ_NO_SYNC_HANDLES: the workers have no OPFS sync access handles'
        : null;

/**
 * Why a test of a large value on IndexedDB storage cannot pass reliably in
 * Chromium, or false. Chromium gets IndexedDB storage only when it is
 * asked for (it always has OPFS sync access handles). There the segments
 * a commit makes are Blobs made from bytes in the worker, held in the
 * browser's memory until the commit's transaction stores them: about
 * the value's size (twice it before the WAL was stored in frame groups;
 * not tried again since). Past a few hundred MB made faster than Chromium pages them to
 * disk, now and then one cannot be read back or stored any more: the call
 * fails (SQLITE_IOERR_READ, or `DataError: Failed to write blobs`) and
 * stores nothing (docs/API.md, IndexedDB storage). Seen here every time
 * from 256 MB of Blobs made in the page (2026-12-07, the WAL in frame
 * groups: 5 runs of 5 failed, a 256 MB File and 100 Files of 3 MB; a 1 GiB
 * one, 3 of 3), never at 128 MiB (10 runs of 10).
 */
export const CHROMIUM_IDB_LARGE_VALUES =
  ENGINE === 'chromium' && 'Chromium on IndexedDB: a commit of hundreds of MB of segments fails now and then (docs/API.md)';

/** {@link CHROMIUM_IDB_LARGE_VALUES} in the runs where every database is on IndexedDB (RESQ_NO_SYNC_HANDLES). */
export const CHROMIUM_IDB_BLOB_LIMIT = NO_SYNC_HANDLES && CHROMIUM_IDB_LARGE_VALUES;

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

// Firefox's counterpart of the background-networking flags: the network is
// closed here, so nothing should try to reach it. (puppeteer-core writes its
// own test preferences into the profile too: no updates, no telemetry, no
// safe mode after a crash.)
const FIREFOX_PREFS = {
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'browser.safebrowsing.update.enabled': false,
  'extensions.blocklist.enabled': false,
  'toolkit.telemetry.enabled': false,
  // navigator.storage.persist() answers at once (granted), where Firefox
  // would show a prompt that no one is there to answer.
  'dom.storageManager.prompt.testing': true,
  'dom.storageManager.prompt.testing.allow': true,
};

/** Packs the repo (`npm pack`, as for publishing) into folder `dest`; returns the tarball's file name. */
export function packInto(dest) {
  return execFileSync('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: repo, encoding: 'utf8' }).trim().split('\n').pop();
}

/**
 * Packs the repo and installs the tarball into a fresh app folder, with
 * `peers` (package names such as 'kysely') at the versions the repo's
 * devDependencies pin, as a user adds an optional peer.
 *
 * With RESQ_PACKED_APP (scripts/test.sh: `node tests/e2e/packed-app.mjs`,
 * once a run), an app with no peers is a copy of that one, installed from
 * the same tarball: the repo does not change during a run, and a pack and
 * an install take about 3 s a test file in every engine.
 */
export function installPackedApp({ peers = [] } = {}) {
  const app = mkdtempSync(join(tmpdir(), 'resq-app-'));
  const packed = process.env.RESQ_PACKED_APP;
  if (packed && peers.length === 0) {
    cpSync(packed, app, { recursive: true });
    const tgz = readdirSync(app).find((f) => f.endsWith('.tgz'));
    return { app, tarball: join(app, tgz) };
  }
  const tgz = packInto(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  const pinned = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).devDependencies;
  const specs = peers.map((name) => `${name}@${pinned[name]}`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', '--prefer-offline', join(app, tgz), ...specs], {
    cwd: app,
    stdio: 'inherit',
  });
  const imports = importMap(app, ['resq-wasm', ...peers]);
  writeFileSync(
    join(app, 'index.html'),
    `<!doctype html><meta charset="utf-8"><title>resq-wasm test</title>
<script type="importmap">${JSON.stringify({ imports })}</script>
<body>resq-wasm test page</body>`,
  );
  return { app, tarball: join(app, tgz) };
}

/**
 * Import map entries for the installed packages `names`: each entry of a
 * package's `exports` (wildcards left out) to the ES module file a bundler
 * would pick (the `import` condition, else `default`).
 */
function importMap(app, names) {
  const esm = (target) => (typeof target === 'string' || target == null ? target : esm(target.import ?? target.default));
  const imports = {};
  for (const name of names) {
    const { exports } = JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8'));
    for (const [key, target] of Object.entries(exports)) {
      const file = esm(target);
      if (key.includes('*') || !file?.endsWith('.js')) continue;
      imports[name + key.slice(1)] = `./node_modules/${name}/${file.replace(/^\.\//, '')}`;
    }
  }
  return imports;
}

/**
 * Puts tests/e2e/probe-worker.js in place of the installed package's worker
 * (the real one becomes worker-real.js): test hooks live in the test app,
 * never in the package.
 */
export function installProbe(app, options) {
  const pkg = join(app, 'node_modules/resq-wasm/pkg');
  renameSync(join(pkg, 'worker.js'), join(pkg, 'worker-real.js'));
  const probe = readFileSync(join(import.meta.dirname, 'probe-worker.js'), 'utf8');
  // Imports are hoisted, so the options can come first.
  writeFileSync(join(pkg, 'worker.js'), `const PROBE_OPTIONS = ${JSON.stringify(options)};\n${probe}`);
}

/**
 * A Puppeteer page with the Playwright page calls the tests use. Everything
 * else is Puppeteer's own, reachable as `.puppeteer`.
 */
class FirefoxPage {
  constructor(page) {
    this.puppeteer = page;
  }
  evaluate(fn, arg) {
    return this.puppeteer.evaluate(fn, arg);
  }
  goto(url) {
    return this.puppeteer.goto(url);
  }
  reload() {
    return this.puppeteer.reload();
  }
  url() {
    return this.puppeteer.url();
  }
  close() {
    this.bindings?.server.closeAllConnections();
    this.bindings?.server.close();
    return this.puppeteer.close();
  }
  /**
   * As Playwright's: `window[name](...args)` runs `fn(...args)` here and
   * resolves with its result. Puppeteer's own exposeFunction (WebDriver BiDi
   * messages) was seen to lose a call in flight while a worker of the page
   * was terminated, leaving the page waiting forever; so each call travels
   * as an HTTP request to a small server of this page instead.
   */
  async exposeFunction(name, fn) {
    if (!this.bindings) {
      const fns = new Map();
      const server = createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', async () => {
          const reply = await Promise.resolve()
            .then(() => fns.get(decodeURIComponent(req.url.slice(1)))(...JSON.parse(body)))
            .then(
              (value) => ({ value }),
              (e) => ({ error: String(e?.message ?? e) }),
            );
          res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' }).end(JSON.stringify(reply));
        });
      });
      await new Promise((done) => server.listen(0, '127.0.0.1', done));
      server.unref();
      this.bindings = { fns, server, url: `http://127.0.0.1:${server.address().port}/` };
    }
    this.bindings.fns.set(name, fn);
    // A text/plain POST is a simple request: no CORS preflight.
    const install = (name, url) => {
      globalThis[name] = async (...args) => {
        const { value, error } = await (await fetch(url + encodeURIComponent(name), { method: 'POST', body: JSON.stringify(args) })).json();
        if (error !== undefined) throw new Error(error);
        return value;
      };
    };
    await this.puppeteer.evaluateOnNewDocument(install, name, this.bindings.url);
    await this.puppeteer.evaluate(install, name, this.bindings.url);
  }
  /** 'pageerror' as it is; 'console' messages typed as Playwright types them ('warning', not 'warn'). */
  on(event, listener) {
    if (event === 'console') {
      this.puppeteer.on('console', (m) => listener({ type: () => (m.type() === 'warn' ? 'warning' : m.type()), text: () => m.text() }));
    } else {
      this.puppeteer.on(event, listener);
    }
    return this;
  }
}

/** The `-contentproc` processes of Firefox `pid` that render web pages ("… tab" on their command line). */
function webContentProcesses(pid) {
  return processTree(pid).filter((p) => {
    try {
      // Children of Firefox's fork server rewrite their argv as one string.
      const command = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      return / -contentproc /.test(command) && / tab$/.test(command);
    } catch {
      return false;
    }
  });
}

/**
 * RESQ_FIREFOX_TEMPLATE (run.mjs: `firefoxTemplate()`, once a run): a
 * Firefox profile started once and closed, copied into each new profile.
 * Firefox's first start on an empty profile makes its files and caches;
 * on a copy it starts in about half the time and half the CPU (1.4 s, not
 * 3.0, on this project's machines). Nothing of any site is in it.
 */
function fromTemplate(profile) {
  const template = process.env.RESQ_FIREFOX_TEMPLATE;
  if (template && readdirSync(profile).length === 0) cpSync(template, profile, { recursive: true });
}

/** Makes a Firefox profile template in the empty folder `profile`: Firefox started on it and closed. */
export async function firefoxTemplate(profile) {
  const browser = await launch(profile, { engine: 'firefox' });
  await (await browser.newPage()).goto('about:blank');
  await browser.close();
}

/**
 * Starts the browser of `engine` on the profile folder `profile` (kept: a
 * second launch on it sees the first one's OPFS; WebKit's automation
 * profile is private, and `profile` is not used). Returns
 * { context, newPage, kill, close }: `context.newPage()` opens a blank page,
 * `kill()` SIGKILLs every process of this browser (no shutdown, no flush).
 * `privateWindow` (Firefox only): every page is in private browsing.
 * `quota` (Firefox only, bytes): the storage limit of each site; Chromium
 * sets an origin's quota per page instead (`lowQuota` of `start()`).
 * `fakeMedia`: getUserMedia gets the browser's fake camera and microphone,
 * without asking (headless browsers have no devices).
 * `backgroundTimers: false` (benches): a tab in the background keeps its
 * timers at full rate, where the browser may run them once a second (a bench
 * with its gallery in another tab times the path between tabs, not the
 * browser's policy for tabs no one looks at).
 */
export async function launch(
  profile,
  { engine = ENGINE, privateWindow = false, quota = null, fakeMedia = false, backgroundTimers = true } = {},
) {
  if (engine === 'chromium') {
    if (privateWindow || quota !== null) throw new Error('privateWindow and a launch-time quota are for Firefox runs');
    const fake = fakeMedia ? ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream'] : [];
    const timers = backgroundTimers ? [] : ['--disable-background-timer-throttling', '--disable-renderer-backgrounding'];
    // Imported here: loading playwright-core costs each test file about
    // 0.45 CPU-s, which the passes of the other engines need not pay.
    const { chromium } = await import('playwright-core');
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: [...CHROMIUM_ARGS, ...fake, ...timers],
      headless: true,
    });
    const pids = () => {
      const found = execFileSync('pgrep', ['-f', '--', `user-data-dir=${profile}`], { encoding: 'utf8' });
      return found
        .split('\n')
        .filter(Boolean)
        .flatMap((p) => processTree(Number(p)));
    };
    return {
      context,
      newPage: () => context.newPage(),
      resident: () => residentBytes(pids()),
      kill: () => execFileSync('pkill', ['-KILL', '-f', '--', `user-data-dir=${profile}`]),
      close: () => context.close(),
    };
  }
  if (engine === 'webkit') {
    if (privateWindow || quota !== null || fakeMedia) throw new Error('privateWindow, quota and fakeMedia are not for WebKit runs');
    return launchWebKit(profile);
  }
  const { default: puppeteer } = await import('puppeteer-core');
  fromTemplate(profile);
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: process.env.FIREFOX ?? '/usr/bin/firefox-esr',
    headless: true,
    userDataDir: profile,
    extraPrefsFirefox: {
      ...FIREFOX_PREFS,
      // An experiment's own prefs (benches/experiments/), as JSON.
      ...JSON.parse(process.env.RESQ_FIREFOX_PREFS ?? '{}'),
      'browser.privatebrowsing.autostart': privateWindow,
      // Firefox gives each site (eTLD+1) a fifth of the whole temporary
      // storage limit, which this pref fixes (in KB).
      ...(quota === null ? {} : { 'dom.quotaManager.temporaryStorage.fixedLimit': Math.round((quota * 5) / 1024) }),
      ...(fakeMedia ? { 'media.navigator.streams.fake': true, 'media.navigator.permission.disabled': true } : {}),
      ...(backgroundTimers
        ? {}
        : {
            'dom.min_background_timeout_value': 4,
            'dom.min_background_timeout_value_without_budget_throttling': 4,
            'dom.timeout.enable_budget_throttling': false,
          }),
    },
    // Playwright has no time limit on a call such as evaluate(); a test's
    // own timeout applies instead.
    protocolTimeout: 0,
    // Nor does it resize pages.
    defaultViewport: null,
  });
  const pid = browser.process().pid;
  const context = {
    browser,
    newPage: async () => new FirefoxPage(await browser.newPage()),
    close: () => browser.close(),
  };
  return {
    context,
    newPage: context.newPage,
    resident: () => residentBytes(processTree(pid)),
    kill() {
      // Stop the tree first so no child outlives its parent long enough to
      // flush anything, then kill it.
      const tree = processTree(pid);
      execFileSync('kill', ['-STOP', ...tree.map(String)]);
      execFileSync('kill', ['-KILL', ...tree.map(String)]);
    },
    /**
     * SIGKILLs every web content process: the page's renderer, with its
     * workers, dies at once, as with Chromium's Page.crash. (Nothing maps a
     * page to its content process from outside, so other tabs go too.)
     */
    crashRenderers() {
      const pids = webContentProcesses(pid);
      if (pids.length) execFileSync('kill', ['-KILL', ...pids.map(String)]);
    },
    close: () => browser.close(),
  };
}

/**
 * Starts the packed app, a server and a browser with a fresh profile.
 * Returns { page, newPage, context, url, app, tarball, errors, close }. With
 * `isolated`, pages are cross-origin isolated (SharedArrayBuffer exists).
 * With `probe` (options of tests/e2e/probe-worker.js, `{}` for none),
 * databases run in the probe worker: see `probe()` in util.mjs.
 * `privateWindow`: see `launch()`. With `quota` (bytes), `lowQuota(page)`
 * gives the page's origin that storage quota (see below). `peers`: see
 * `installPackedApp()`. `headers` go with every response (a
 * Content-Security-Policy, say).
 */
export async function start({
  isolated = false,
  probe = null,
  engine = ENGINE,
  privateWindow = false,
  quota = null,
  peers = [],
  headers = {},
} = {}) {
  if (engine === 'node' && (probe || privateWindow || quota !== null))
    throw new Error('the Node engine has no probe worker, private window or quota: skip this test there (notInNode)');
  const { app, tarball } = installPackedApp({ peers });
  if (NO_SYNC_HANDLES) probe = { ...probe, noSyncHandles: true };
  if (probe) installProbe(app, probe);
  const server = engine === 'node' ? { url: 'node:', close() {} } : await serve(app, 0, { isolated, headers });
  // Node keeps no profile: its databases live in memory.
  const profile = engine === 'node' ? null : mkdtempSync(join(tmpdir(), 'resq-profile-'));
  const browser =
    engine === 'node' ? launchNode(app) : await launch(profile, { engine, privateWindow, quota: engine === 'firefox' ? quota : null });
  const errors = [];
  const newPage = async () => {
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(e));
    await page.goto(server.url);
    return page;
  };
  const page = await newPage();
  return {
    engine,
    app,
    tarball,
    url: server.url,
    context: browser.context,
    page,
    newPage,
    errors,
    /** The browser's resident memory: its processes' VmRSS together, in bytes. */
    resident: () => browser.resident(),
    /**
     * Gives `page`'s origin the `quota` of start(): in Chromium now, through
     * CDP (Storage.overrideQuotaForOrigin); in Firefox it was set at launch,
     * and this checks the page sees it. Returns { release() }.
     */
    async lowQuota(page) {
      if (quota === null) throw new Error('lowQuota() needs start({ quota })');
      if (engine === 'chromium') {
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(page.url()).origin, quotaSize: quota });
        return { release: () => cdp.detach() };
      }
      if (engine !== 'firefox') throw new Error('lowQuota() is for Chromium and Firefox runs');
      const seen = await page.evaluate(async () => (await navigator.storage.estimate()).quota);
      if (seen !== quota) throw new Error(`the page's storage quota is ${seen} bytes, not ${quota}`);
      return { release: async () => {} };
    },
    /**
     * A function that crashes `page`'s renderer, with its workers, and
     * resolves once it is down: Chromium's CDP Page.crash (the session is
     * made now, so the crash is immediate; CDP may never answer it, so the
     * page's 'crash' event is what resolves, within 30 s or it rejects), or
     * in Firefox a SIGKILL of its web content processes (see launch()).
     */
    async crasher(page) {
      if (engine === 'chromium') {
        const cdp = await page.context().newCDPSession(page);
        return () => {
          const crashed = page.waitForEvent('crash', { timeout: 30_000 });
          void cdp.send('Page.crash').catch(() => {});
          return crashed;
        };
      }
      if (engine === 'firefox') return async () => browser.crashRenderers();
      throw new Error('crasher() is for Chromium and Firefox runs');
    },
    /**
     * Chromium: collects garbage in `page` and in every dedicated worker
     * (CDP HeapProfiler.collectGarbage), so what they no longer hold is let go.
     */
    async collectGarbage(page) {
      if (engine !== 'chromium') throw new Error('collectGarbage() is for Chromium runs');
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('HeapProfiler.collectGarbage');
      const { targetInfos } = await cdp.send('Target.getTargets');
      for (const { targetId } of targetInfos.filter((t) => t.type === 'worker')) {
        const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: false });
        const message = JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' });
        await cdp.send('Target.sendMessageToTarget', { sessionId, message });
      }
      await cdp.detach();
    },
    /**
     * Chromium: the browser's Blobs by kind, as chrome://blob-internals
     * lists them: { [type]: { count, bytes } }. Blobs made from bytes are
     * 'data'; IndexedDB's are 'readable data handle' (read from its files).
     */
    async blobs() {
      if (engine !== 'chromium') throw new Error('blobs() is for Chromium runs');
      const p = await browser.newPage();
      try {
        await p.goto('chrome://blob-internals');
        const text = await p.evaluate(() => document.body.innerText);
        const by = {};
        for (const [, type, length] of text.matchAll(/Type: ([^\n]+)\n(?:[^\n]*\n)*?Length: ([\d,]+)/g)) {
          by[type] ??= { count: 0, bytes: 0 };
          by[type].count += 1;
          by[type].bytes += Number(length.replaceAll(',', ''));
        }
        return by;
      } finally {
        await p.close();
      }
    },
    /**
     * Ends the origin's broker (the package's SharedWorker) as a browser
     * may, with what it knew: Chromium only, by CDP Target.closeTarget.
     * Tabs' ports to it are never answered after that.
     */
    async stopBroker(page) {
      if (engine !== 'chromium') throw new Error('stopBroker() is for Chromium runs');
      const cdp = await page.context().newCDPSession(page);
      const { targetInfos } = await cdp.send('Target.getTargets');
      const broker = targetInfos.find((t) => t.type === 'shared_worker' && t.title === 'resq-wasm broker');
      if (!broker) throw new Error('no broker is running');
      await cdp.send('Target.closeTarget', { targetId: broker.targetId });
      await cdp.detach();
    },
    /**
     * The page's JS heap in bytes after a full GC, as { measure(), release() }:
     * through CDP in Chromium. Firefox lets nothing outside chrome code
     * collect or read a page's JS heap, nor does WebDriver (WebKit), so there measure() gives null.
     */
    async heapMeter(page) {
      if (engine === 'chromium') {
        const cdp = await page.context().newCDPSession(page);
        return {
          measure: async () => {
            await cdp.send('HeapProfiler.collectGarbage');
            return (await cdp.send('Runtime.getHeapUsage')).usedSize;
          },
          release: () => cdp.detach(),
        };
      }
      return { measure: async () => null, release: async () => {} };
    },
    async close() {
      await browser.close();
      server.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
      rmSync(app, { recursive: true, force: true });
    },
  };
}

/**
 * The UI steps demo.test.mjs takes, in each engine's own API (Playwright's
 * locators in Chromium, Puppeteer's handles and real input in Firefox):
 *   waitForText(text | RegExp, { timeout })   some rendered text shows it
 *   setInputFiles(selector, { name, mimeType, buffer })   a file chosen in a file input
 *   element(selector, { hasText, timeout })   waits for the first match; → { evaluate(fn), textContent() }
 *   clickButton(name, { within })   clicks the button of that name, in the element `within` ([selector, hasText]) or anywhere
 *   click(selector)   clicks the first element that matches
 *   fill(selector, text)   types `text` into the field, in place of what it held
 *   press(selector, key)   presses `key` ('Enter', …) in the field
 */
export function ui(page) {
  return page instanceof FirefoxPage ? firefoxUi(page.puppeteer) : chromiumUi(page);
}

function chromiumUi(page) {
  const locate = (selector, hasText) => page.locator(selector, hasText === undefined ? {} : { hasText }).first();
  return {
    waitForText: (text, options) => page.getByText(text).waitFor(options),
    setInputFiles: (selector, file) => page.setInputFiles(selector, file),
    async element(selector, { hasText, timeout } = {}) {
      const found = locate(selector, hasText);
      await found.waitFor({ timeout });
      return found;
    },
    clickButton: (name, { within } = {}) => (within ? locate(...within) : page).getByRole('button', { name }).click(),
    click: (selector) => locate(selector).click(),
    fill: (selector, text) => locate(selector).fill(text),
    press: (selector, key) => locate(selector).press(key),
  };
}

function firefoxUi(page) {
  // The first visible element matching `selector` whose text has `hasText`,
  // as a handle, once there is one.
  const waitForElement = async (selector, hasText, timeout = 30000) =>
    (
      await page.waitForFunction(
        (selector, hasText) =>
          [...document.querySelectorAll(selector)].find((e) => (hasText == null || e.textContent.includes(hasText)) && e.checkVisibility()),
        { timeout },
        selector,
        hasText ?? null,
      )
    ).asElement();
  return {
    waitForText: (text, { timeout = 30000 } = {}) =>
      page.waitForFunction(
        (source, flags, literal) =>
          literal ? document.body.innerText.includes(source) : new RegExp(source, flags).test(document.body.innerText),
        { timeout },
        text instanceof RegExp ? text.source : text,
        text instanceof RegExp ? text.flags : '',
        !(text instanceof RegExp),
      ),
    async setInputFiles(selector, { name, mimeType, buffer }) {
      // WebDriver BiDi chooses files by path, and Firefox types them by
      // their extension: write the bytes under their name, check the type.
      // The page reads the file from disk whenever it likes (the package's
      // worker, after a thumbnail, say), so it stays until this process ends.
      const dir = mkdtempSync(join(tmpdir(), 'resq-upload-'));
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      writeFileSync(join(dir, name), buffer);
      const input = await page.waitForSelector(selector);
      // The type is read as the change event begins (capture, on the
      // window): the page's own handler may then empty the input.
      await input.evaluate((el) => {
        globalThis.resqChosenType = new Promise((resolve) => {
          addEventListener(
            'change',
            function chosen(e) {
              if (e.target !== el) return;
              removeEventListener('change', chosen, { capture: true });
              resolve(el.files[0]?.type);
            },
            { capture: true },
          );
        });
      });
      await input.uploadFile(join(dir, name));
      const type = await page.evaluate(() => globalThis.resqChosenType);
      if (type !== mimeType) throw new Error(`${name} was chosen as ${type}, not ${mimeType}`);
    },
    async element(selector, { hasText, timeout } = {}) {
      const found = await waitForElement(selector, hasText, timeout);
      return { evaluate: (fn) => found.evaluate(fn), textContent: () => found.evaluate((e) => e.textContent) };
    },
    async clickButton(name, { within } = {}) {
      const scope = within ? await waitForElement(...within) : await page.$('body');
      // As Playwright's getByRole name: a case-insensitive substring of the button's text.
      const button = await page.waitForFunction(
        (scope, name) =>
          [...scope.querySelectorAll('button')].find(
            (b) => b.textContent.toLowerCase().includes(name.toLowerCase()) && b.checkVisibility(),
          ),
        {},
        scope,
        name,
      );
      await button.asElement().click();
    },
    async click(selector) {
      await (await waitForElement(selector)).click();
    },
    async fill(selector, text) {
      const field = await waitForElement(selector);
      // Emptied as a user's delete would: with an input event.
      await field.evaluate((el) => {
        el.value = '';
        el.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'deleteContentBackward' }));
      });
      await field.type(text);
    },
    async press(selector, key) {
      await (await waitForElement(selector)).press(key);
    },
  };
}
