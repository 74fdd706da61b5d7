// Requests to a worker and their replies, over anything that speaks
// `postMessage` (a Worker today; a MessagePort to a worker in another tab
// later). Replies come back in request order; a dead worker rejects every
// pending and future call with RESQ_WORKER_DIED.

import { ResqError } from './errors.js';
import type { Fatal, Op, Replies, Reply, Requests, WireError } from './protocol.js';

/** The part of a Worker or MessagePort the client needs. */
export interface Port {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (e: MessageEvent) => void): void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: ResqError): void;
}

export class Client {
  #port: Port;
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #dead: ResqError | null = null;

  constructor(port: Port) {
    this.#port = port;
    port.addEventListener('message', (e) => this.#receive(e.data as Reply | Fatal));
  }

  call<K extends Op>(op: K, fields: Requests[K], transfer: Transferable[] = []): Promise<Replies[K]> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#nextId++;
    try {
      this.#port.postMessage({ ...fields, id, op }, transfer);
    } catch (err) {
      // Nothing was sent: a value the structured clone cannot carry.
      return this.fail(new ResqError('RESQ_BAD_PARAM', `a parameter cannot be sent to the worker: ${(err as Error).message}`)) as Promise<never>;
    }
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject }));
  }

  /**
   * A call refused before it reached the worker: it rejects with `error` in
   * its turn, after the calls made before it (the worker echoes it back), so
   * calls still complete in the order they were made.
   */
  fail(error: ResqError): Promise<never> {
    const wire: WireError = { code: error.code, message: error.message };
    if (error.errno !== undefined) wire.errno = error.errno;
    return this.call('fail', { error: wire });
  }

  /** Rejects everything pending and everything after with RESQ_WORKER_DIED. */
  die(reason: string): void {
    if (this.#dead) return;
    this.#dead = new ResqError('RESQ_WORKER_DIED', `the database worker died: ${reason}`);
    for (const p of this.#pending.values()) p.reject(this.#dead);
    this.#pending.clear();
  }

  #receive(msg: Reply | Fatal): void {
    if ('fatal' in msg) return this.die(msg.fatal);
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.value);
    else p.reject(new ResqError(msg.error.code as ResqError['code'], msg.error.message, msg.error.errno));
  }
}
