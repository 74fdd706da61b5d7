// resq-wasm in Node (≥ 20), for an app's unit tests: the `node` export
// condition picks this entry. It runs the same wasm and the same worker
// code as a browser, in a `worker_threads` Worker (node-worker.ts) behind
// the interface of a browser's `Worker`, with the same API, errors and
// values. Node has no OPFS and no IndexedDB: databases live in memory.

import { Worker as Thread } from 'node:worker_threads';
import type { Database } from './database.js';
import { ResqError } from './errors.js';
import { importDatabase as importInto, open as openIn, type OpenOptions } from './index.js';
import type { ImportSource } from './backup.js';
import { installWorkerStarter } from './spawn.js';

export * from './index.js';

/**
 * A `worker_threads` Worker as the page's code uses a browser's `Worker`.
 * It keeps Node's process alive only while a call waits for its answer: a
 * script that never closes its database still ends, as a page would.
 */
class ThreadWorker extends EventTarget {
  onmessage: ((e: MessageEvent) => void) | null = null;
  #thread: Thread;
  /** Requests sent and not yet answered. */
  #waiting = 0;

  constructor(name: string) {
    super();
    this.#thread = new Thread(new URL('./node-worker.js', import.meta.url), { workerData: { name } });
    this.#thread.unref();
    this.#thread.on('message', (data) => {
      if (isAnswer(data) && this.#waiting > 0 && --this.#waiting === 0) this.#thread.unref();
      const e = new MessageEvent('message', { data });
      this.onmessage?.(e);
      this.dispatchEvent(e);
    });
    this.#thread.on('messageerror', () => this.dispatchEvent(new Event('messageerror')));
    this.#thread.on('error', (err) => this.dispatchEvent(Object.assign(new Event('error'), { message: String(err) })));
  }

  postMessage(message: unknown, transfer: Transferable[] = []): void {
    if (isAnswer(message) && this.#waiting++ === 0) this.#thread.ref();
    this.#thread.postMessage(message, transfer);
  }

  terminate(): void {
    void this.#thread.terminate();
  }
}

/** A request (it has an id), or its answer (the same id). */
const isAnswer = (m: unknown) => typeof m === 'object' && m !== null && typeof (m as { id?: unknown }).id === 'number';

const startThread = (name: string) => new ThreadWorker(name) as unknown as Worker;

/** What Node refuses: a database kept anywhere but in memory. */
const storedRefused = () =>
  new ResqError(
    'RESQ_UNSUPPORTED',
    `in Node, resq-wasm keeps databases in memory only: open(':memory:') or open(name, { storage: 'memory' }) (OPFS and IndexedDB are a browser's)`,
  );

/** As the browser's `open()`; in Node, `':memory:'` or `storage: 'memory'` only. */
export async function open(name: string, options: OpenOptions = {}): Promise<Database> {
  if (typeof name === 'string' && options !== null && typeof options === 'object') {
    const storage = options.storage ?? (name === ':memory:' ? 'memory' : undefined);
    // A storage no browser knows is refused as in a browser (RESQ_BAD_PARAM).
    if (storage === undefined || storage === 'opfs' || storage === 'idb') throw storedRefused();
  }
  installWorkerStarter(startThread);
  return openIn(name, options);
}

/** As the browser's `importDatabase()`; in Node, into an open memory `Database` only. */
export async function importDatabase(
  target: string | Database,
  source: ImportSource,
  options: Parameters<typeof importInto>[2] = {},
): Promise<void> {
  if (typeof target === 'string') throw storedRefused();
  return importInto(target, source, options);
}
