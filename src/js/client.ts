// Requests to a worker and their replies, over anything that speaks
// `postMessage` (the Worker this tab started, or a MessagePort to the
// worker of the tab that leads the database). Replies come back in request
// order; live-query results, sent unasked, go to `onPush`. A dead worker
// rejects every pending and future call with its `death`, one error object
// (link.ts tells it apart from an error reply). A worker whose tab closed
// the database says so (`onClosing`) and answers nothing after. Starting
// one of the package's workers is here too (`startWorker`).

import { ResqError } from './errors.js';
import type { Closing, Expired, Fatal, Op, Push, Rekeyed, Replies, Reply, Requests, WireError } from './protocol.js';

/** The part of a Worker or MessagePort the client needs. */
export interface Port {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (e: MessageEvent) => void): void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: ResqError): void;
}

/** What a client tells its owner besides replies. */
export interface ClientEvents {
  onPush?(push: Push): void;
  onClosing?(): void;
  /** This tab's transaction was rolled back by its `transactionTimeout`. */
  onExpired?(): void;
  /** Another tab changed the database's key. */
  onRekeyed?(): void;
  /** The worker is gone (after every pending call rejected with `death`). */
  onDeath?(): void;
}

export class Client {
  #port: Port;
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #death: ResqError | null = null;
  #events: ClientEvents;

  constructor(port: Port, events: ClientEvents = {}) {
    this.#port = port;
    this.#events = events;
    port.addEventListener('message', (e) => this.#receive(e.data as Reply | Fatal | Push | Closing | Expired));
  }

  get dead(): boolean {
    return this.#death !== null;
  }

  /** The error every call pending when the worker died rejected with (`null` while it lives). */
  get death(): ResqError | null {
    return this.#death;
  }

  call<K extends Op>(op: K, fields: Requests[K], transfer: Transferable[] = []): Promise<Replies[K]> {
    if (this.#death) return Promise.reject(this.#death);
    const id = this.#nextId++;
    try {
      this.#port.postMessage({ ...fields, id, op }, transfer);
    } catch (err) {
      // Nothing was sent: a value the structured clone cannot carry.
      return this.fail(
        new ResqError('RESQ_BAD_PARAM', `a parameter cannot be sent to the worker: ${(err as Error).message}`),
      ) as Promise<never>;
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
    if (this.#death) return;
    this.#death = new ResqError('RESQ_WORKER_DIED', `the database worker died: ${reason}`);
    for (const p of this.#pending.values()) p.reject(this.#death);
    this.#pending.clear();
    this.#events.onDeath?.();
  }

  #receive(msg: Reply | Fatal | Push | Closing | Expired | Rekeyed): void {
    if (this.#death) return;
    if ('fatal' in msg) return this.die(msg.fatal);
    if ('push' in msg) return this.#events.onPush?.(msg);
    if ('closing' in msg) return this.#events.onClosing?.();
    if ('expired' in msg) return this.#events.onExpired?.();
    if ('rekeyed' in msg) return this.#events.onRekeyed?.();
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.value);
    else p.reject(new ResqError(msg.error.code as ResqError['code'], msg.error.message, msg.error.errno));
  }
}

/**
 * Starts one of the package's workers. A page can refuse that at once: one
 * that enforces Trusted Types with no policy for the worker's URL throws
 * here. The page cannot run the package as it is, so that is
 * RESQ_UNSUPPORTED, not a worker that died.
 */
export function startWorker<W>(start: () => W): W {
  try {
    return start();
  } catch (err) {
    throw new ResqError(
      'RESQ_UNSUPPORTED',
      `this page cannot start the database worker (${String(err)}); a page that enforces Trusted Types needs a policy that lets the package's worker URLs through (see the README, "Bundlers and serving")`,
    );
  }
}
