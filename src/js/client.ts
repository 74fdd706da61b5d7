// Requests to a worker and their replies, over anything that speaks
// `postMessage` (the Worker this tab started, or a MessagePort to the
// worker of the tab that leads the database). Replies come back in request
// order; live-query results, sent unasked, go to `onPush`. A dead worker
// rejects every pending and future call with RESQ_WORKER_DIED. A worker
// whose tab closed the database says so (`onClosing`) and hands back the
// requests that reach it afterwards, unrun (`onRetry`), for the next one.

import { ResqError } from './errors.js';
import { transfersOf, type Bounced, type Closing, type Fatal, type Op, type Push, type Replies, type Reply, type Requests, type WireError } from './protocol.js';

/** The part of a Worker or MessagePort the client needs. */
export interface Port {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (e: MessageEvent) => void): void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: ResqError): void;
  /** What the caller passed along with the call, given back on a retry. */
  tag: unknown;
}

/** What a client tells its owner besides replies. */
export interface ClientEvents {
  onPush?(push: Push): void;
  onClosing?(): void;
  /** A request handed back unrun: send it on elsewhere; its promise settles with that. */
  onRetry?(op: Op, fields: Record<string, unknown>, transfer: Transferable[], tag: unknown): Promise<unknown>;
}

export class Client {
  #port: Port;
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #dead: ResqError | null = null;

  #events: ClientEvents;

  constructor(port: Port, events: ClientEvents = {}) {
    this.#port = port;
    this.#events = events;
    port.addEventListener('message', (e) => this.#receive(e.data as Reply | Fatal | Push | Closing | Bounced));
  }

  get dead(): boolean {
    return this.#dead !== null;
  }

  call<K extends Op>(op: K, fields: Requests[K], transfer: Transferable[] = [], tag?: unknown): Promise<Replies[K]> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#nextId++;
    try {
      this.#port.postMessage({ ...fields, id, op }, transfer);
    } catch (err) {
      // Nothing was sent: a value the structured clone cannot carry.
      return this.fail(new ResqError('RESQ_BAD_PARAM', `a parameter cannot be sent to the worker: ${(err as Error).message}`)) as Promise<never>;
    }
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject, tag }));
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

  #receive(msg: Reply | Fatal | Push | Closing | Bounced): void {
    if ('fatal' in msg) return this.die(msg.fatal);
    if ('push' in msg) return this.#events.onPush?.(msg);
    if ('closing' in msg) return this.#events.onClosing?.();
    if ('retry' in msg) {
      const p = this.#pending.get(msg.id);
      if (!p || !this.#events.onRetry) return;
      this.#pending.delete(msg.id);
      const { id: _, op, ...fields } = msg.retry;
      this.#events.onRetry(op, fields, transfersOf(msg.retry), p.tag).then(p.resolve, p.reject);
      return;
    }
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.value);
    else p.reject(new ResqError(msg.error.code as ResqError['code'], msg.error.message, msg.error.errno));
  }
}

