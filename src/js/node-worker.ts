// The database worker in Node (node.ts starts it): the worker code a
// browser runs (worker.js), given the parts of a dedicated worker's scope
// it uses, over `worker_threads`' parent port.

import { readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

const port = parentPort!;
const scope = globalThis as Record<string, unknown>;
scope.self = globalThis;
scope.name = (workerData as { name: string }).name;
scope.navigator ??= {};
scope.postMessage = (message: unknown, transfer?: Transferable[]) => port.postMessage(message, transfer);
scope.close = () => (globalThis as unknown as { process: { exit(code: number): never } }).process.exit(0);

// The wasm is read from the package's files: Node's fetch has no file: URLs.
const fetchOver = globalThis.fetch;
globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
  const url = input instanceof URL ? input : new URL(String(input));
  if (url.protocol !== 'file:') return fetchOver(input, init);
  return new Response(readFileSync(url), { headers: { 'content-type': 'application/wasm' } });
};

// A browser holds messages until the worker's script has run; so does this.
const early: unknown[] = [];
let started = false;
const deliver = (data: unknown) => (scope.onmessage as ((e: MessageEvent) => void) | null)?.(new MessageEvent('message', { data }));
port.on('message', (data) => (started ? deliver(data) : early.push(data)));
await import('./worker.js');
started = true;
for (const data of early.splice(0)) deliver(data);
