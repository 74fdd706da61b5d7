// The calls of one tab's link (link.ts), from when each is made until it is
// answered: their numbers, their order, and what becomes of each when the
// worker it went to goes. No call fails because the leader went: a call
// this tab sent to another tab's worker and has no answer for is sent to
// the next worker again, in its turn, before the calls made since, and runs
// there exactly once (each call carries a number, and a following tab's
// writes commit with a record of their answer: worker/record.ts).
//
// Plain data and promises: the link says which worker to send to and when
// one went; nothing here needs a browser.

import { ResqError } from './errors.js';
import { transfersOf, type Op, type Requests } from './protocol.js';

/** A worker's client as the ledger sends through it (client.ts's Client). */
export interface Sender {
  call(op: Op, fields: never, transfer: Transferable[]): Promise<unknown>;
  /** The error its calls rejected with when its worker went (`null` while it lives). */
  readonly death: unknown;
}

/** A call of this tab, from when it is made until it is answered. */
interface Call<S> {
  op: Op;
  fields: Record<string, unknown>;
  transfer: Transferable[];
  /** Bound to the worker of this generation (its transaction, stream, staged blob). */
  generation?: number;
  /** A transaction's COMMIT: sent again, it is only looked up. */
  commit: boolean;
  seq: number;
  /** The worker it was sent to, while it waits for the answer there. */
  on: S | null;
  /** Sent over a port to another tab's worker: sent again if that one goes. */
  carried: boolean;
  /** Sent before, to a worker that went. */
  again: boolean;
  /** Workers that went while it waited on them. */
  losses: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Leaders a call may see go before it rejects with RESQ_WORKER_DIED: a call
 * that makes every worker it reaches end (one that traps the wasm) must not
 * take down every tab in turn.
 */
export const MAX_LOSSES = 5;

export class Ledger<S extends Sender> {
  /** Changes whenever the worker calls go to changes (a new one connected). */
  generation = 0;
  /** The calls not answered yet, in the order they were made. */
  #calls: Call<S>[] = [];
  #seq = 0;

  /** No call waits for its answer. */
  get empty(): boolean {
    return this.#calls.length === 0;
  }

  /** A call bound to `generation` whose worker has been replaced since. */
  stale(generation: number | undefined): boolean {
    return generation !== undefined && generation !== this.generation;
  }

  /** Numbers a call and keeps it, unsent, until it is answered: the promise settles with its answer. */
  add(op: Op, fields: Record<string, unknown>, transfer: Transferable[], generation?: number): Promise<unknown> {
    const commit = op === 'execute' && (fields as Requests['execute']).txn === 'commit';
    return new Promise((resolve, reject) => {
      this.#calls.push({
        op,
        fields,
        transfer,
        generation,
        commit,
        seq: ++this.#seq,
        on: null,
        carried: false,
        again: false,
        losses: 0,
        resolve,
        reject,
      });
    });
  }

  /**
   * Sends the calls waiting for a worker, in order, to `to` (`carried`: it
   * is another tab's worker). They are the tail of the list: every call
   * before them was sent to the current worker (those of a worker that went
   * become waiting ones together, and the link hands on those of any other),
   * so the walk back stops at the first sent one instead of visiting every
   * call in flight.
   */
  flush(to: S, carried: boolean): void {
    let first = this.#calls.length;
    while (first > 0 && this.#calls[first - 1].on === null) first -= 1;
    for (const c of this.#calls.slice(first)) this.#send(to, c, carried);
  }

  #send(to: S, c: Call<S>, carried: boolean): void {
    // Bound to a worker that went; a COMMIT sent before is looked up instead.
    if (this.stale(c.generation) && !(c.commit && c.again)) return this.#answer(c, false, gone());
    // `below`: the lowest number still unanswered, under which the worker
    // forgets the answers it recorded for this tab.
    const fields = { ...c.fields, seq: c.seq, below: this.#calls[0].seq, ...(c.again ? { again: true } : {}) };
    const transfer = c.transfer;
    if (carried && transfer.length > 0) {
      // The buffers move to the worker (the caller's are detached, as
      // without a follower); this tab keeps a copy until the answer, to
      // send again if that worker goes.
      c.fields = structuredClone(c.fields);
      c.transfer = transfersOf(c.fields);
    }
    c.on = to;
    c.carried = carried;
    to.call(c.op, fields as never, transfer).then(
      (v) => this.#answer(c, true, v),
      (err) => {
        // The worker went: `lost` decides what becomes of the call.
        if (err !== to.death) this.#answer(c, false, err);
      },
    );
  }

  #answer(c: Call<S>, ok: boolean, value: unknown): void {
    const i = this.#calls.indexOf(c);
    if (i < 0) return;
    this.#calls.splice(i, 1);
    c.on = null;
    if (ok) c.resolve(value);
    else c.reject(value);
  }

  /**
   * The workers other than `to` that calls still wait on, each as the walk
   * reaches it: the link ends each one, and its calls go on (see
   * {@link lost}) before the next is looked at.
   */
  *waitingOn(to: S): Generator<S> {
    for (const c of [...this.#calls]) if (c.on && c.on !== to) yield c.on;
  }

  /** The calls waiting on `from` are sent again if it goes, as if it were another tab's worker. */
  carry(from: S): void {
    for (const c of this.#calls) if (c.on === from) c.carried = true;
  }

  /**
   * The worker behind `from` is gone. Its calls still unanswered that
   * another tab's worker had wait for the next worker, marked as sent
   * before; the others (this tab's own worker's, those bound to the worker
   * that went, and one that every leader it reached went away on) reject
   * with the worker's death (RESQ_WORKER_DIED).
   */
  lost(from: S): void {
    for (const c of [...this.#calls]) {
      if (c.on !== from) continue;
      c.on = null;
      c.losses += 1;
      if (c.carried && (c.generation === undefined || c.commit) && c.losses < MAX_LOSSES) c.again = true;
      else this.#answer(c, false, from.death);
    }
  }

  /** Every call still waiting rejects with `reason` (the link ended). */
  rejectAll(reason: unknown): void {
    for (const c of this.#calls.splice(0)) c.reject(reason);
  }
}

/** What a call bound to a worker that went rejects with. */
export const gone = () =>
  new ResqError('RESQ_WORKER_DIED', 'the worker that held this (a transaction, a blob stream, a staged blob) is gone');
