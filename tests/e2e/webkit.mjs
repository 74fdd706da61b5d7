// The e2e layer's third engine: WebKitGTK (the WebKit and JavaScriptCore of
// Safari) in a small browser of ours (webkit-browser.py), driven by
// WebKitWebDriver over W3C WebDriver, on a virtual display of its own
// (Xvfb). `launchWebKit()` gives the same { context, newPage, kill, close }
// as the other engines in harness.mjs, and `WebKitPage` the few Playwright
// page calls the tests use.
//
// WebDriver runs one command at a time per session, and acts on the current
// window: each page is a window of the one session, and a page's command
// switches to its window first, under a lock. An `evaluate()` starts its
// function and polls for the result, so two pages' calls run at once, as
// two tabs do.

import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listeningPorts, portOf, processTree, residentBytes, until } from './processes.mjs';

// The browser the driver starts: WebKitGTK with a persistent profile
// (webkit-browser.py; MiniBrowser's automation sessions are private).
const BROWSER = fileURLToPath(new URL('./webkit-browser.py', import.meta.url));
// The web platform features the package uses that WebKitGTK has but does
// not turn on by itself (navigator.storage, OPFS, its access handles).
const FEATURES = '--features=+StorageAPI,+StorageAPIEstimate,+FileSystem,+AccessHandle,+FileSystemWritableStream';

/** Starts Xvfb on a display it picks (-displayfd); resolves with { display, process }. */
function startXvfb() {
  return new Promise((resolve, reject) => {
    const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    });
    let out = '';
    xvfb.on('error', reject);
    xvfb.on('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it named its display`)));
    xvfb.stdio[3].on('data', (chunk) => {
      out += chunk;
      if (!out.includes('\n')) return;
      xvfb.stdio[3].destroy();
      xvfb.removeAllListeners('exit');
      xvfb.unref();
      resolve({ display: `:${out.trim()}`, process: xvfb });
    });
  });
}

/**
 * A port for the browser's inspector server (what the driver connects to),
 * outside the kernel's ephemeral range. A port in that range, picked and
 * freed before the browser binds it (as WebKitWebDriver picks one when it
 * starts the browser itself), can meanwhile go to any bind(0) on the machine
 * (another file's server): the browser then has no inspector server, and the
 * driver waits for it for ever. Out here only another launch can pick the
 * same port, and startBrowser() sees that the port is not its browser's.
 */
function inspectorPort() {
  const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const [from, to] = low - 1025 >= 65535 - high ? [1025, low - 1] : [high + 1, 65535];
  return from + Math.floor(Math.random() * (to - from + 1));
}

/**
 * Starts the browser (a process group of its own, with its web processes)
 * with its inspector server on a port it owns; resolves with { browser, port }.
 */
async function startBrowser(profile, display) {
  const log = join(profile, 'browser.log');
  for (let attempt = 1; ; attempt++) {
    const port = inspectorPort();
    const out = openSync(log, 'w');
    const browser = spawn(BROWSER, ['--automation', `--data-dir=${profile}`, FEATURES], {
      stdio: ['ignore', out, out],
      env: { ...process.env, DISPLAY: display, WEBKIT_INSPECTOR_SERVER: `127.0.0.1:${port}` },
      detached: true,
    });
    closeSync(out);
    browser.unref();
    const taken = () => readFileSync(log, 'utf8').includes('Failed to start remote inspector server');
    const state = await until(
      () => (listeningPorts(browser.pid).includes(port) ? 'listening' : taken() ? 'taken' : null),
      browser,
      `WebKit's inspector server on port ${port}`,
      () => readFileSync(log, 'utf8'),
      30,
    ).catch((e) => {
      killGroup(browser);
      throw e;
    });
    if (state === 'listening') return { browser, port };
    // Another launch, or another program, has this port: this browser is of no use.
    killGroup(browser);
    if (attempt === 5) throw new Error(`WebKit's inspector server found ${attempt} ports taken in a row`);
  }
}

/** SIGKILLs the process group `child` leads. */
function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** A session of WebKitWebDriver: `command(method, path, body)` → its value, or throws its error. */
class Session {
  constructor(base, id) {
    this.base = base;
    this.id = id;
    this.queue = Promise.resolve();
    /** The current window, as far as this side knows (null: switch first). */
    this.window = null;
    // Windows that pages hold; and one no page holds yet (the session's
    // first, or the one opened so that closing the last page's window does
    // not end the session).
    this.windows = new Set();
    this.spare = null;
  }
  /** A window for a new page: the spare one, or a new one. */
  async openWindow() {
    const handle = this.spare ?? (await this.newWindow());
    this.spare = null;
    this.windows.add(handle);
    return handle;
  }
  /** A new window's handle, opened from window `from` (WebDriver refuses to open one from a closed current window). */
  async newWindow(from = this.window ?? this.spare ?? [...this.windows][0]) {
    return (await this.command(from, 'POST', '/window/new', { type: 'window' })).handle;
  }
  /** Closes window `handle`; a session with no window would end, so the last one is replaced by a spare first. */
  async closeWindow(handle) {
    if (!this.windows.delete(handle)) return;
    if (this.windows.size === 0 && !this.spare) this.spare = await this.newWindow(handle);
    await this.command(handle, 'DELETE', '/window');
    this.window = null;
  }
  async raw(method, path, body) {
    const response = await fetch(`${this.base}/session/${this.id}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const { value } = await response.json();
    if (!response.ok) throw new Error(`WebDriver ${method} ${path}: ${value?.error}: ${value?.message}`);
    return value;
  }
  /** Runs `method path` in window `handle` (or the current one), after every command queued before it. */
  command(handle, method, path, body) {
    const run = this.queue.then(async () => {
      if (handle && handle !== this.window) {
        await this.raw('POST', '/window', { handle });
        this.window = handle;
      }
      return this.raw(method, path, body);
    });
    this.queue = run.catch(() => {});
    return run;
  }
}

// Starts the page function of evaluate() on its argument, in slot `id` of
// the page's resqEvals, which holds { value } or { error } as JSON text once
// it settles: WebDriver's own serialization of an object does not keep the
// order of its keys. `undefined` travels as UNDEFINED, so a key whose value
// is undefined stays, as in Playwright. The function's source is part of
// the script (not eval'd in the page), so a page's
// Content-Security-Policy cannot stop it. The script returns at once, and
// the slot is polled: WebDriver runs one command at a time per session, so
// waiting in /execute/async would hold every other window's commands (two
// tabs that wait for each other would never finish). The polls come at 1,
// 2, 4, … ms, then every 100 ms: each costs the driver, the browser and
// the page some CPU, which a long call would otherwise spend on polls.
const UNDEFINED = '\u0000resq:undefined';
const startScript = (src) => `const [arg, id] = arguments;
const json = (reply) => JSON.stringify(reply, (k, v) => (v === undefined ? ${JSON.stringify(UNDEFINED)} : v));
const slots = (window.resqEvals ??= {});
slots[id] = null;
Promise.resolve().then(() => (${src})(arg)).then(
  (value) => { slots[id] = json({ value }); },
  (e) => { slots[id] = json({ error: e instanceof Error ? e.name + ': ' + e.message : String(e) }); },
);`;
// The slot's JSON and frees it; null while it runs; MISSING if the page has
// no such slot (it navigated or reloaded meanwhile).
const MISSING = '\u0000resq:missing';
const pollScript = `const [id] = arguments;
const slots = window.resqEvals;
if (!slots || !(id in slots)) return ${JSON.stringify(MISSING)};
const reply = slots[id];
if (reply !== null) delete slots[id];
return reply;`;
let evaluations = 0;

/** `value` parsed from the page, with UNDEFINED turned back into undefined. */
function revive(value) {
  if (value === UNDEFINED) return undefined;
  if (value && typeof value === 'object') for (const k of Object.keys(value)) value[k] = revive(value[k]);
  return value;
}

// Collects the page's uncaught errors and unhandled rejections, for the
// 'pageerror' listeners (WebDriver has no events: they are fetched).
const COLLECT_ERRORS = `if (!window.resqPageErrors) {
  window.resqPageErrors = [];
  addEventListener('error', (e) => resqPageErrors.push(String(e.error?.message ?? e.message)));
  addEventListener('unhandledrejection', (e) => resqPageErrors.push(String(e.reason?.message ?? e.reason)));
}`;

/**
 * A window of the WebKit session with the Playwright page calls the tests
 * use: evaluate, goto, reload, url, close, and on('pageerror'), whose
 * errors are collected in the page and handed over after each navigation
 * and each evaluate(). Playwright's others are not here, and
 * exposeFunction and 'console' throw, so that no test silently waits on them.
 */
export class WebKitPage {
  constructor(session, handle) {
    this.session = session;
    this.handle = handle;
    this.listeners = [];
  }
  command(method, path, body) {
    return this.session.command(this.handle, method, path, body);
  }
  async evaluate(fn, arg) {
    const id = ++evaluations;
    await this.command('POST', '/execute/sync', { script: startScript(fn.toString()), args: [arg ?? null, id] });
    let text = null;
    for (let wait = 1; text === null; wait = Math.min(wait * 2, 100)) {
      await new Promise((r) => setTimeout(r, wait));
      text = await this.command('POST', '/execute/sync', { script: pollScript, args: [id] });
    }
    if (text === MISSING) throw new Error('Execution context was destroyed: the page navigated while evaluate() ran');
    const reply = JSON.parse(text);
    await this.drainErrors();
    if ('error' in reply) throw new Error(reply.error);
    return revive(reply.value);
  }
  async drainErrors() {
    if (!this.listeners.length) return;
    const errors = await this.command('POST', '/execute/sync', { script: `${COLLECT_ERRORS}\nreturn resqPageErrors.splice(0);`, args: [] });
    for (const message of errors) for (const listener of this.listeners) listener(new Error(message));
  }
  async goto(url) {
    await this.command('POST', '/url', { url });
    await this.command('POST', '/execute/sync', { script: COLLECT_ERRORS, args: [] });
  }
  async reload() {
    await this.drainErrors();
    await this.command('POST', '/refresh', {});
    await this.command('POST', '/execute/sync', { script: COLLECT_ERRORS, args: [] });
  }
  url() {
    return this.command('GET', '/url');
  }
  close() {
    return this.session.closeWindow(this.handle);
  }
  on(event, listener) {
    if (event !== 'pageerror') throw new Error(`WebKit runs have no '${event}' events (WebDriver has no events)`);
    this.listeners.push(listener);
    return this;
  }
  exposeFunction() {
    throw new Error('WebKit runs have no exposeFunction()');
  }
}

/**
 * Starts the WebKitGTK browser (webkit-browser.py: a persistent profile)
 * under its own Xvfb, and a WebKitWebDriver connected to it. Returns
 * { context, newPage, kill, close } as launch() in harness.mjs does.
 */
export async function launchWebKit(profile) {
  const xvfb = await startXvfb();
  const children = [];
  // The browser and the driver each lead a process group: one signal ends
  // each, web processes included. A test that fails before its close()
  // leaves them to this process's exit, which they must not outlive or
  // hold up.
  const stop = () => {
    for (const child of children) killGroup(child);
    xvfb.process.kill('SIGKILL');
    process.off('exit', stop);
  };
  process.on('exit', stop);
  try {
    const { browser, port: inspector } = await startBrowser(profile, xvfb.display);
    children.push(browser);
    // The driver picks its own port (0): one it holds from the start.
    const log = join(profile, 'driver.log');
    const out = openSync(log, 'w');
    const driver = spawn('WebKitWebDriver', ['--port=0', `--target=127.0.0.1:${inspector}`], {
      stdio: ['ignore', out, out],
      detached: true,
    });
    closeSync(out);
    driver.unref();
    children.push(driver);
    const port = await portOf(driver, 'WebKitWebDriver listening', () => readFileSync(log, 'utf8'), 30);
    const base = `http://127.0.0.1:${port}`;
    const response = await fetch(`${base}/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // Playwright has no time limit on evaluate(); a test's own timeout applies instead.
      body: JSON.stringify({ capabilities: { alwaysMatch: { timeouts: { script: null } } } }),
      signal: AbortSignal.timeout(60_000),
    }).catch((e) => {
      throw new Error(`WebKitWebDriver gave no session: ${e.message}\n${readFileSync(log, 'utf8').trim()}`);
    });
    const { value } = await response.json();
    if (!response.ok) throw new Error(`WebKitWebDriver refused a session: ${value?.message}`);
    const session = new Session(base, value.sessionId);
    session.spare = await session.raw('GET', '/window');
    const newPage = async () => new WebKitPage(session, await session.openWindow());
    const close = async () => {
      await session.raw('DELETE', '').catch(() => {});
      stop();
    };
    const resident = () => residentBytes([...processTree(browser.pid), ...processTree(driver.pid)]);
    return { context: { newPage, close }, newPage, resident, kill: stop, close };
  } catch (e) {
    stop();
    throw e;
  }
}
