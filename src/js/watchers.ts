// The live queries of one tab's link (link.ts), kept as this tab made them:
// what lived in a worker that went is gone, so each is registered again
// with every new worker, with the hash of the last result it delivered (the
// new worker sends nothing when the rows came out the same). Their results,
// pushed unasked, come here and go to their watcher.

import { ResqError } from './errors.js';
import type { Push, Replies, Requests, WatchResult } from './protocol.js';

/** A live query as this tab keeps it, to register again with each new leader. */
export interface Watcher {
  sql: string;
  params: unknown;
  bytes: boolean;
  /** Hash of the last result delivered ('' before the first). */
  hash: string;
  /** It reads through a session of its own (a binding's; see protocol.ts). */
  own?: boolean;
  deliver(result: WatchResult): void;
  fail(error: ResqError): void;
}

/** What the watchers need of their link. */
export interface WatchLine {
  /** Sends a `watch` call, in its turn. */
  watch(fields: Requests['watch']): Promise<Replies['watch']>;
  /** The link has ended (closed, or failed for good). */
  dead(): boolean;
}

export class Watchers {
  #line: WatchLine;
  #watchers = new Map<number, Watcher>();
  #nextWatch = 1;
  /** Watches whose registration is on its way (sent again itself if its leader goes). */
  #registering = new Set<number>();

  constructor(line: WatchLine) {
    this.#line = line;
  }

  /** Registers a live query; its results go to `w` until {@link remove}. */
  add(w: Watcher): { id: number; registered: Promise<void> } {
    const id = this.#nextWatch++;
    this.#watchers.set(id, w);
    return { id, registered: this.#register(id, w) };
  }

  /** Forgets the watch `id`; whether it was there. */
  remove(id: number): boolean {
    return this.#watchers.delete(id);
  }

  /** Connected to a new worker: every watch not on its way already registers with it. */
  registerAll(): void {
    for (const [id, w] of this.#watchers) if (!this.#registering.has(id)) void this.#register(id, w);
  }

  #register(id: number, w: Watcher): Promise<void> {
    const { sql, params, bytes, hash, own } = w;
    this.#registering.add(id);
    return this.#line.watch({ watch: id, sql, params, bytes, previous: hash, ...(own ? { own: true } : {}) }).then(
      (r) => {
        this.#registering.delete(id);
        if (r && this.#watchers.has(id)) w.deliver(r);
      },
      (err) => {
        this.#registering.delete(id);
        // This tab's own worker went before answering: the next one gets it again.
        if (!(err instanceof ResqError && err.code === 'RESQ_WORKER_DIED' && !this.#line.dead())) throw err;
      },
    );
  }

  /** A result, or the error of a re-run, pushed by the worker. */
  push(p: Push): void {
    const w = this.#watchers.get(p.push);
    if (!w) return;
    if ('result' in p) w.deliver(p.result);
    else w.fail(new ResqError(p.error.code as ResqError['code'], p.error.message, p.error.errno));
  }
}
