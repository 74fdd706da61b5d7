// The few Node APIs the Node entries use (node.ts, node-worker.ts), typed
// here rather than through @types/node, whose globals (setTimeout's return,
// say) would change the browser code's types.

declare module 'node:worker_threads' {
  interface ThreadPort {
    postMessage(value: unknown, transfer?: readonly unknown[]): void;
    on(event: 'message', listener: (value: unknown) => void): this;
  }
  export class Worker {
    constructor(url: URL, options?: { workerData?: unknown });
    postMessage(value: unknown, transfer?: readonly unknown[]): void;
    on(event: 'message' | 'messageerror', listener: (value: unknown) => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
    on(event: 'exit', listener: (code: number) => void): this;
    terminate(): Promise<number>;
    unref(): void;
    ref(): void;
  }
  export const parentPort: ThreadPort | null;
  export const workerData: unknown;
}

declare module 'node:fs' {
  export function readFileSync(path: URL): Uint8Array<ArrayBuffer>;
}
