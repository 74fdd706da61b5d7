// How the page starts its database worker: a browser's module `Worker`, or
// one a runtime's entry puts behind the same interface (node.ts: a
// `worker_threads` Worker running the same worker code).

/** Starts the database worker, named `name` (worker.ts reads the name). */
export type WorkerStarter = (name: string) => Worker;

let starter: WorkerStarter | null = null;

/** Starts workers with `start` from now on (node.ts). */
export function installWorkerStarter(start: WorkerStarter): void {
  starter = start;
}

/** Whether this runtime can start the database worker. */
export function canStartWorkers(): boolean {
  return starter !== null || typeof Worker !== 'undefined';
}

export function spawnWorker(name: string): Worker {
  // The URL in place, as bundlers look for it to emit the worker.
  return starter ? starter(name) : new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name });
}
