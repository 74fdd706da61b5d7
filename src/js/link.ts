// A tab's line to its database. Any number of same-origin tabs may open one
// OPFS database: one of them leads and the others follow, sending their
// calls straight to the leader's worker (election.ts). When the leader goes
// (its tab closes, reloads, crashes or freezes), the next tab leads, and
// the followers connect to it:
//
// - no call fails because the leader went: a call this tab sent to it and
//   has no answer for is sent to the next leader again, in its turn, before
//   the calls made since, and runs there exactly once (ledger.ts); calls
//   made meanwhile wait, and go in order;
// - what lived in the old worker (a transaction, a blob stream, a staged
//   blob, an export) is gone: a call that refers to it rejects with
//   RESQ_WORKER_DIED (`generation` tells them apart), never reaching the
//   new worker; a transaction's COMMIT sent before is looked up, and
//   resolves if it committed;
// - live queries are registered with each new leader again (watchers.ts).
//
// The calls of this tab's own worker are not carried over: they die with
// it (its tab froze or went away, or the browser stopped it).

import { Client } from './client.js';
import { Election, type ElectionOptions } from './election.js';
import { ResqError } from './errors.js';
import { holdKey, keyBytes } from './keyproof.js';
import { Ledger, gone } from './ledger.js';
import type { Op, Replies, Requests, Storage } from './protocol.js';
import { Watchers, type Watcher } from './watchers.js';

export type { Watcher } from './watchers.js';

export interface LinkOptions extends ElectionOptions {
  /** The key in its one form (keyproof.ts `keyBytes`): the link holds it, and zeroes these bytes. */
  key?: Uint8Array;
}

/** How long `open()` waits to reach a database another tab holds, then RESQ_LOCKED. */
const OPEN_WAIT_MS = 10_000;

export class Link {
  /** Resolves once connected the first time; rejects if `open()` fails. */
  readonly ready: Promise<void>;
  readonly #name: string;
  readonly #election: Election;
  readonly #ledger = new Ledger<Client>();
  readonly #watchers: Watchers;
  #client: Client | null = null;
  #dead: ResqError | null = null;
  /** Told when the worker rolled back this tab's transaction (transactionTimeout). */
  onExpired: (() => void) | null = null;
  #settle!: { resolve(): void; reject(e: unknown): void };

  constructor(opts: LinkOptions) {
    const { key, ...rest } = opts;
    this.#name = opts.name;
    this.#election = new Election(rest, {
      client: (port) => this.#newClient(port),
      connect: (client) => this.#connect(client),
      connected: () => this.#client !== null,
      fatal: (err) => this.#fatal(err),
    });
    this.#watchers = new Watchers({
      watch: (fields) => this.call('watch', fields),
      dead: () => this.#dead !== null,
    });
    this.ready = new Promise((resolve, reject) => (this.#settle = { resolve, reject }));
    this.ready.catch(() => {});
    void (key ? holdKey(key) : Promise.resolve(null)).then((k) => this.#election.start(k)).catch((err) => this.#fatal(err));
    if (this.#election.shared) {
      const timer = setTimeout(
        () =>
          this.#fatal(
            new ResqError(
              'RESQ_LOCKED',
              `${opts.name} is held by another tab or worker that did not let this one in within ${OPEN_WAIT_MS / 1000} s`,
            ),
          ),
        OPEN_WAIT_MS,
      );
      this.ready.finally(() => clearTimeout(timer)).catch(() => {});
    }
  }

  /** Where the database lives, as the worker that opened it placed it. */
  get storage(): Storage {
    return this.#election.storage ?? 'memory';
  }

  /** Changes whenever the worker behind this link changes. */
  get generation(): number {
    return this.#ledger.generation;
  }

  call<K extends Op>(op: K, fields: Requests[K], transfer: Transferable[] = [], generation?: number): Promise<Replies[K]> {
    if (this.#dead) return Promise.reject(this.#dead);
    const client = this.#client;
    if (client && !client.dead && this.#ledger.stale(generation)) return Promise.reject(gone());
    const answer = this.#ledger.add(op, fields as Record<string, unknown>, transfer, generation);
    this.#flush();
    return answer as Promise<Replies[K]>;
  }

  /** Sends the calls waiting for a worker, in order, to the current one. */
  #flush(): void {
    const client = this.#client;
    if (!client || client.dead) return;
    this.#ledger.flush(client, this.#election.carries(client));
  }

  /** A call refused in the page: rejects in its turn, after the calls before it. */
  fail(error: ResqError): Promise<never> {
    const wire = { code: error.code, message: error.message, ...(error.errno !== undefined ? { errno: error.errno } : {}) };
    return this.call('fail', { error: wire }) as Promise<never>;
  }

  /**
   * Changes the key (`rekey` hands on what it was given: its one check is
   * here); every other tab that has it open is told (RESQ_BAD_KEY).
   */
  async rekey(key: unknown): Promise<void> {
    const bytes = key === null ? null : keyBytes(key, true);
    try {
      const next = bytes && (await holdKey(bytes.slice()));
      const moved = await this.call('rekey', { key: bytes });
      this.#election.key = next;
      if (moved === 'moved') await this.#moveToCiphers();
    } finally {
      bytes?.fill(0);
    }
  }

  /**
   * `rekey(key)` of a plain database (worker/ops.ts): this tab's next worker,
   * with ciphers, encrypts it as it opens it, within the same lead, and the
   * calls refused meanwhile go there. Resolves once it has.
   */
  #moveToCiphers(): Promise<void> {
    const client = this.#client;
    if (client) {
      this.#ledger.carry(client);
      this.#lose(client, 'the database moved to a worker with ciphers');
    }
    return this.#election.encryptNext();
  }

  /** Registers a live query; its results go to `w` until {@link unwatch}. */
  watch(w: Watcher): { id: number; registered: Promise<void> } {
    return this.#watchers.add(w);
  }

  unwatch(id: number): void {
    if (!this.#watchers.remove(id)) return;
    if (this.#client && !this.#client.dead) this.call('unwatch', { watch: id }).catch(() => {});
  }

  /**
   * The close call, in its turn. It resolves when there is nothing left to
   * close, too: between leaders with nothing waiting; once this link can go
   * no further, whatever the reason (another tab changed the key, a memory
   * database's worker died); or when the worker it went to died before
   * answering. The `Database` is finished either way.
   */
  async closeCall(): Promise<void> {
    if (this.#dead || (!this.#client && this.#ledger.empty)) return;
    try {
      await this.call('close', {});
    } catch (err) {
      if (!this.#dead && !(err instanceof ResqError && err.code === 'RESQ_WORKER_DIED')) throw err;
    }
  }

  /** Stops this tab's part: its worker if it leads (after its close call), its locks, its port. */
  close(): void {
    this.#shutDown(new ResqError('RESQ_CLOSED', 'the database is closed'));
  }

  /** Ends this link; calls waiting and made later reject with `reason`. */
  #shutDown(reason: ResqError): void {
    if (this.#dead) return;
    this.#dead = reason;
    this.#election.stop();
    this.#ledger.rejectAll(reason);
  }

  /** A client on `port`, whose pushes and notices come here. */
  #newClient(port: Worker | MessagePort): Client {
    const client: Client = new Client(port, {
      onPush: (p) => this.#watchers.push(p),
      // The leader's page closed the database: its worker answers nothing
      // more (the answers to calls before the notice came first), so the
      // calls still waiting on it go to the next leader.
      onClosing: () => this.#lose(client, 'the tab that held the database closed it'),
      onExpired: () => this.onExpired?.(),
      onRekeyed: () =>
        this.#fatal(new ResqError('RESQ_BAD_KEY', `another tab changed the key of ${this.#name}: open it again with the new key`)),
      onDeath: () => this.#lost(client),
    });
    return client;
  }

  /**
   * Connected to a worker. A worker that holds the file means every worker
   * before it has let go of it: calls still waiting on an earlier one go
   * here, before those made since. Live queries register again.
   */
  #connect(client: Client): void {
    for (const earlier of this.#ledger.waitingOn(client)) this.#lose(earlier, 'the tab that held the database went away');
    this.#ledger.generation += 1;
    this.#client = client;
    this.#watchers.registerAll();
    this.#flush();
    this.#settle.resolve();
  }

  /** The worker behind `client` is gone, or to be treated so: see {@link #lost}. */
  #lose(client: Client, reason: string): void {
    client.die(reason);
  }

  /**
   * The worker behind `client` is gone: its calls go to the next worker,
   * or reject, as the ledger says (Ledger.lost).
   */
  #lost(client: Client): void {
    if (this.#client === client) this.#client = null;
    this.#ledger.lost(client);
    this.#flush();
  }

  /** This link can go no further: everything waiting rejects with `err`. */
  #fatal(err: unknown): void {
    if (this.#dead) return;
    const error = err instanceof ResqError ? err : new ResqError('RESQ_WORKER_DIED', String(err));
    this.#settle.reject(error);
    this.#election.fail(error);
    this.#shutDown(error);
    this.#client?.die(error.message);
  }
}
