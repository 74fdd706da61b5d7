// The e2e layer's fourth engine, Node (issue 31; RESQ_ENGINE=node): the
// packed package as an app's unit tests import it, for the tests that need
// only memory storage. A "page" is a Node process in the packed app's
// folder; `evaluate(fn, arg)` runs `fn` there as a browser page runs it,
// and `import('resq-wasm')` resolves through the package's `node` export
// condition, as in an app's own module.
//
// Node keeps databases in memory only, and refuses a name without
// `storage: 'memory'`. A test's database name opens in memory here
// (node-page-lib.mjs, the page's `resq-wasm`): a test that opens a name
// once proves the same behaviour in Node's storage. The tests that need a
// stored database, a browser page or the probe worker are listed in
// passes.mjs with the reason, and left out of this engine's pass.

import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { residentBytes } from './processes.mjs';

/** The page's process: runs each evaluate() and answers it. */
const HOST = `// A Node "page" of the e2e layer (tests/e2e/node-page.mjs).
process.on('message', async ({ id, src, arg }) => {
  try {
    const fn = (0, eval)('(' + src + ')');
    const value = typeof fn === 'function' ? await fn(arg) : await fn;
    process.send({ id, ok: true, value });
  } catch (e) {
    process.send({ id, ok: false, error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : { message: String(e) } });
  }
});
// What a browser reports as a page error.
const report = (e) => process.send({ pageerror: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : { message: String(e) } });
process.on('uncaughtException', report);
process.on('unhandledRejection', report);
`;

/** The page's 'resq-wasm': the package, a database name opened in memory. */
const LIB = `export * from 'resq-wasm';
import { open as openIn } from 'resq-wasm';
/** A file name opens in memory, Node's storage; a storage asked for is passed on as asked. */
export function open(name, options = {}) {
  return openIn(name, name === ':memory:' || options?.storage !== undefined ? options : { ...options, storage: 'memory' });
}
`;

/** The packed app at `app` as a browser of Node pages: launch()'s shape (harness.mjs). */
export function launchNode(app) {
  const host = join(app, 'node-page-host.mjs');
  writeFileSync(host, HOST);
  writeFileSync(join(app, 'node-page-lib.mjs'), LIB);
  const pages = new Set();
  return {
    context: null,
    newPage: async () => {
      const page = new NodePage(host);
      pages.add(page);
      return page;
    },
    resident: () => residentBytes([...pages].map((p) => p.pid).filter(Boolean)),
    close: async () => {
      for (const page of pages) await page.close();
    },
  };
}

/** The part of a Playwright page the e2e tests use, over a Node process. */
export class NodePage {
  #child;
  #calls = new Map();
  #next = 0;
  #listeners = { pageerror: [] };
  #gone = null;

  constructor(host) {
    this.#child = fork(host, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.#child.on('message', (m) => {
      if (m.pageerror) {
        for (const f of this.#listeners.pageerror) f(Object.assign(new Error(m.pageerror.message), m.pageerror));
        return;
      }
      const call = this.#calls.get(m.id);
      this.#calls.delete(m.id);
      if (m.ok) call?.resolve(m.value);
      else call?.reject(Object.assign(new Error(m.error.message), m.error));
    });
    this.#child.on('exit', (code, signal) => {
      this.#gone = new Error(`the Node page's process ended (${signal ?? `exit code ${code}`})`);
      for (const { reject } of this.#calls.values()) reject(this.#gone);
      this.#calls.clear();
    });
  }

  get pid() {
    return this.#child.pid;
  }

  /** Runs `fn(arg)` (or the expression `fn`) in the page's process; its result, structured-cloned. */
  evaluate(fn, arg) {
    if (this.#gone) return Promise.reject(this.#gone);
    const src = (typeof fn === 'function' ? fn.toString() : fn).replaceAll("import('resq-wasm')", "import('./node-page-lib.mjs')");
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject });
      this.#child.send({ id, src, arg }, (err) => {
        if (err && this.#calls.delete(id)) reject(err);
      });
    });
  }

  on(event, f) {
    if (!(event in this.#listeners)) throw new Error(`a Node page has no '${event}' event`);
    this.#listeners[event].push(f);
  }

  async goto() {}

  url() {
    return 'node:';
  }

  async close() {
    if (this.#gone) return;
    const ended = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.kill();
    await ended;
  }
}
