// A tab's line to its database. Any number of same-origin tabs may open one
// OPFS database: one of them leads (its worker holds the file), chosen with
// a Web Lock, and the others follow, sending their calls over a MessagePort
// straight to the leader's worker. The port broker (broker.ts, a
// SharedWorker) introduces them. When the leader goes (its tab closes,
// reloads, crashes or freezes), the next tab in the lock's queue leads, and
// the followers connect to it:
//
// - no call fails because the leader went: a call this tab sent to it and
//   has no answer for is sent to the next leader again, in its turn, before
//   the calls made since, and runs there exactly once (each call carries a
//   number, and a following tab's writes commit with a record of their
//   answer: worker/record.ts); calls made meanwhile wait, and go in order;
// - what lived in the old worker (a transaction, a blob stream, a staged
//   blob, an export) is gone: a call that refers to it rejects with
//   RESQ_WORKER_DIED (`generation` tells them apart), never reaching the
//   new worker; a transaction's COMMIT sent before is looked up, and
//   resolves if it committed;
// - live queries are registered with each new leader again.
//
// The calls of this tab's own worker are not carried over: they die with
// it (its tab froze or went away, or the browser stopped it). A memory
// database is private to its tab: its link leads alone, and when its
// worker dies so does the database.

import { Client, startWorker } from './client.js';
import { ResqError } from './errors.js';
import { answerChallenge, linkKey, type LinkKey } from './keyproof.js';
import {
  ENCRYPTED_WORKER_NAME,
  WORKER_NAME,
  transfersOf,
  type BrokerReply,
  type BrokerRequest,
  type Hello,
  type Op,
  type Push,
  type Replies,
  type Requests,
  type Storage,
  type WatchResult,
} from './protocol.js';

export interface LinkOptions {
  name: string;
  storage: Storage;
  /** As `open` takes it: bytes, or -1 for never. */
  blobTransferThreshold: number;
  /** `transactionTimeout`, ms. */
  timeout: number;
  /** `key`, as `open` took it: the link holds it (keyproof.ts) and keeps no reference to it. */
  key?: unknown;
}

/** A live query as this tab keeps it, to register again with each new leader. */
export interface Watcher {
  sql: string;
  params: unknown;
  bytes: boolean;
  /** Hash of the last result delivered ('' before the first). */
  hash: string;
  deliver(result: WatchResult): void;
  fail(error: ResqError): void;
}

/** A call of this tab, from when it is made until it is answered. */
interface Call {
  op: Op;
  fields: Record<string, unknown>;
  transfer: Transferable[];
  /** Bound to the worker of this generation (its transaction, stream, staged blob). */
  generation?: number;
  /** A transaction's COMMIT: sent again, it is only looked up. */
  commit: boolean;
  seq: number;
  /** The client it was sent to, while it waits for the answer there. */
  on: Client | null;
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
 * How long a worker whose page closed the database lives on, handing back
 * the requests following tabs sent it meanwhile.
 */
const CLOSE_GRACE_MS = 250;

/** Between asking the broker again after a leader that went (it may not have heard yet). */
const RETRY_MS = 20;

/**
 * Leaders a call may see go before it rejects with RESQ_WORKER_DIED: a call
 * that makes every worker it reaches end (one that traps the wasm) must not
 * take down every tab in turn.
 */
const MAX_LOSSES = 5;

/** How long `open()` waits to reach a database another tab holds, then RESQ_LOCKED. */
const OPEN_WAIT_MS = 10_000;

const uuid = () => crypto.randomUUID?.() ?? `${Date.now()}-${Math.random()}`;

export class Link {
  /** Changes whenever the worker behind this link changes. */
  generation = 0;
  /** Resolves once connected the first time; rejects if `open()` fails. */
  readonly ready: Promise<void>;
  readonly #opts: Omit<LinkOptions, 'key'>;
  /** Its presence picks the wasm with ciphers. */
  #key: LinkKey = null;
  /** A `rekey(key)` of a plain database, until this tab's next worker has encrypted it. */
  #encrypting: { resolve(): void; reject(e: unknown): void } | null = null;
  /** The lead ends to start again with another worker (see #moveToCiphers). */
  #relead = false;
  readonly #shared: boolean;
  #client: Client | null = null;
  /** The calls not answered yet, in the order they were made. */
  #calls: Call[] = [];
  #seq = 0;
  /** The client of this tab's own worker, while it leads. */
  #own: Client | null = null;
  #dead: ResqError | null = null;
  #closed = false;
  #watchers = new Map<number, Watcher>();
  #nextWatch = 1;
  /** Watches whose registration is on its way (sent again itself if its leader goes). */
  #registering = new Set<number>();
  /** Told when the worker rolled back this tab's transaction (transactionTimeout). */
  onExpired: (() => void) | null = null;
  /** Ends every lock wait of this link (on close). */
  #stop = new AbortController();
  /** Bumped by each new attempt to connect: older ones give up. */
  #attempt = 0;
  #settle!: { resolve(): void; reject(e: unknown): void };
  // Leading.
  #worker: Worker | null = null;
  /** From the lock's grant to the end of the lead (the worker may be starting). */
  #leading = false;
  #endLead: (() => void) | null = null;
  /** Withdraws this tab from the queue for the lead (while frozen). */
  #candidacy: AbortController | null = null;
  /** The page is hidden or frozen: it neither leads nor queues to. */
  #down = false;
  // Following.
  #broker: MessagePort | null = null;
  #onLeader: ((lock: string) => void) | null = null;
  /** A request for a port is out (one at a time). */
  #following = false;
  #tabLock = `resq-wasm-tab:${uuid()}`;

  constructor(opts: LinkOptions) {
    const { key, ...rest } = opts;
    this.#opts = rest;
    this.#shared = opts.storage === 'opfs' && typeof navigator.locks?.request === 'function';
    this.ready = new Promise((resolve, reject) => (this.#settle = { resolve, reject }));
    this.ready.catch(() => {});
    void linkKey(key)
      .then((k) => {
        this.#key = k;
        return this.#start();
      })
      .catch((err) => this.#fatal(err));
    if (this.#shared) {
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

  call<K extends Op>(op: K, fields: Requests[K], transfer: Transferable[] = [], generation?: number): Promise<Replies[K]> {
    if (this.#dead) return Promise.reject(this.#dead);
    const client = this.#client;
    if (client && !client.dead && this.#stale(generation)) return Promise.reject(gone());
    // Between leaders, with nothing waiting, there is nothing to close.
    if (op === 'close' && !client && this.#calls.length === 0) return Promise.resolve(null as Replies[K]);
    const commit = op === 'execute' && (fields as Requests['execute']).txn === 'commit';
    return new Promise((resolve, reject) => {
      const c: Call = {
        op,
        fields: fields as Record<string, unknown>,
        transfer,
        generation,
        commit,
        seq: ++this.#seq,
        on: null,
        carried: false,
        again: false,
        losses: 0,
        resolve: resolve as (v: unknown) => void,
        reject,
      };
      this.#calls.push(c);
      this.#flush();
    });
  }

  /**
   * Sends the calls waiting for a worker, in order, to the current one.
   * They are the tail of the list: every call before them was sent to
   * the current worker (those of a worker that went become waiting ones
   * together, and #connect hands on those of any other), so the walk back
   * stops at the first sent one instead of visiting every call in flight.
   */
  #flush(): void {
    const client = this.#client;
    if (!client || client.dead) return;
    let first = this.#calls.length;
    while (first > 0 && this.#calls[first - 1].on === null) first -= 1;
    for (const c of this.#calls.slice(first)) this.#send(client, c);
  }

  #send(client: Client, c: Call): void {
    // Bound to a worker that went; a COMMIT sent before is looked up instead.
    if (this.#stale(c.generation) && !(c.commit && c.again)) return this.#answer(c, false, gone());
    const carried = this.#shared && client !== this.#own;
    const fields = { ...c.fields, seq: c.seq, below: this.#calls[0].seq, ...(c.again ? { again: true } : {}) };
    let transfer = c.transfer;
    if (carried && transfer.length > 0) {
      // The buffers move to the worker (the caller's are detached, as
      // without a follower); this tab keeps a copy until the answer, to
      // send again if that worker goes.
      c.fields = structuredClone(c.fields);
      c.transfer = transfersOf(c.fields);
    } else if (carried) {
      transfer = [];
    }
    c.on = client;
    c.carried = carried;
    client.call(c.op, fields as never, transfer).then(
      (v) => this.#answer(c, true, v),
      (err) => {
        // The worker went: #lost decides what becomes of the call.
        if (err !== client.death) this.#answer(c, false, err);
      },
    );
  }

  #answer(c: Call, ok: boolean, value: unknown): void {
    const i = this.#calls.indexOf(c);
    if (i < 0) return;
    this.#calls.splice(i, 1);
    c.on = null;
    if (ok) c.resolve(value);
    else c.reject(value);
  }

  /** A call refused in the page: rejects in its turn, after the calls before it. */
  fail(error: ResqError): Promise<never> {
    const wire = { code: error.code, message: error.message, ...(error.errno !== undefined ? { errno: error.errno } : {}) };
    return this.call('fail', { error: wire }) as Promise<never>;
  }

  /** Changes the key; every other tab that has it open is told (RESQ_BAD_KEY). */
  async rekey(key: unknown): Promise<void> {
    const next = key === null ? null : await linkKey(key);
    const moved = await this.call('rekey', { key });
    this.#key = next;
    if (moved === 'moved') await this.#moveToCiphers();
  }

  /**
   * `rekey(key)` of a plain database (worker/ops.ts): this tab's next worker,
   * with ciphers, encrypts it as it opens it, within the same lead, and the
   * calls refused meanwhile go there. Resolves once it has.
   */
  #moveToCiphers(): Promise<void> {
    const done = new Promise<void>((resolve, reject) => (this.#encrypting = { resolve, reject }));
    const client = this.#client;
    if (client) {
      for (const c of this.#calls) if (c.on === client) c.carried = true;
      this.#lose(client, 'the database moved to a worker with ciphers');
    }
    this.#relead = true;
    this.#endLead?.();
    return done;
  }

  /** Registers a live query; its results go to `w` until {@link unwatch}. */
  watch(w: Watcher): { id: number; registered: Promise<void> } {
    const id = this.#nextWatch++;
    this.#watchers.set(id, w);
    return { id, registered: this.#register(id, w) };
  }

  unwatch(id: number): void {
    if (!this.#watchers.delete(id)) return;
    if (this.#client && !this.#client.dead) this.call('unwatch', { watch: id }).catch(() => {});
  }

  /** Stops this tab's part: its worker if it leads (after its close call), its locks, its port. */
  close(): void {
    this.#shutDown(new ResqError('RESQ_CLOSED', 'the database is closed'));
  }

  /** Ends this link; calls waiting and made later reject with `reason`. */
  #shutDown(reason: ResqError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#dead = reason;
    this.#stop.abort();
    this.#candidacy?.abort();
    this.#endLead?.();
    this.#broker?.close();
    removeEventListener('pagehide', this.#stepDown);
    removeEventListener('pageshow', this.#stepUp);
    globalThis.document?.removeEventListener('freeze', this.#stepDown);
    globalThis.document?.removeEventListener('resume', this.#stepUp);
    for (const c of this.#calls.splice(0)) c.reject(this.#dead);
  }

  async #start(): Promise<void> {
    if (!this.#shared) return this.#lead();
    // This tab's own lock, held while the link lives: a leader's worker
    // waits on it to clean up after this tab.
    await new Promise<void>((held) => {
      navigator.locks
        .request(this.#tabLock, { signal: this.#stop.signal }, () => {
          held();
          return new Promise<void>((r) => this.#stop.signal.addEventListener('abort', () => r()));
        })
        .catch(() => held());
    });
    if (typeof SharedWorker === 'function') {
      const broker = startWorker(
        () => new SharedWorker(new URL('./broker.js', import.meta.url), { type: 'module', name: 'resq-wasm broker' }),
      );
      this.#broker = broker.port;
      broker.port.onmessage = (e: MessageEvent<BrokerReply>) => this.#fromBroker(e.data, e.ports[0]);
    }
    // Page Lifecycle: `pagehide`/`pageshow` on the window, `freeze`/`resume`
    // on the document (absent in a worker that opens a database).
    addEventListener('pagehide', this.#stepDown);
    addEventListener('pageshow', this.#stepUp);
    globalThis.document?.addEventListener('freeze', this.#stepDown);
    globalThis.document?.addEventListener('resume', this.#stepUp);
    // Lead now if nobody does; otherwise follow, and queue for the lead.
    const leading = await this.#candidate(true);
    if (!leading) this.#stepUp();
  }

  /**
   * Asks for the lead (`now`: only if free). Resolves whether it was taken;
   * while it is held this tab leads, until its leadership ends.
   */
  #candidate(now: boolean): Promise<boolean> {
    const lock = `resq-wasm-leader:${this.#opts.name}`;
    return new Promise<boolean>((taken) => {
      const leadWhileHeld = async (held: Lock | null) => {
        taken(held !== null);
        if (held && !this.#closed) await this.#lead().catch((err) => this.#fatal(err));
      };
      // `ifAvailable` and `signal` do not go together.
      const options: LockOptions = now ? { ifAvailable: true } : { signal: this.#candidacy!.signal };
      navigator.locks.request(lock, options, leadWhileHeld).catch(() => taken(false));
    });
  }

  /** Follows the leader, and queues for the lead (after start, and on `resume` or `pageshow`). */
  #stepUp = (): void => {
    this.#down = false;
    if (this.#closed || this.#leading) return;
    this.#candidacy?.abort();
    this.#candidacy = new AbortController();
    void this.#candidate(false);
    if (!this.#client) void this.#follow();
  };

  /**
   * A page that is going away or freezing lets go at once: a frozen
   * leader would hold every other tab up, and a reloading page's next
   * load wants the file. Its worker stops (committed work is durable;
   * SQLite rolls back anything in flight at the next open) and it leaves
   * the queue for the lead.
   */
  #stepDown = (): void => {
    this.#down = true;
    this.#candidacy?.abort();
    this.#candidacy = null;
    this.#endLead?.();
  };

  /** Leads: starts the worker, opens the file, serves until the lead ends. */
  async #lead(): Promise<void> {
    // Leading wins over following: attempts to follow give up.
    this.#leading = true;
    this.#attempt += 1;
    try {
      // Led again at once after #moveToCiphers: no other tab opens it plain.
      do {
        this.#relead = false;
        await this.#leadWhileHeld();
      } while (this.#relead && !this.#closed);
    } finally {
      this.#leading = false;
    }
    if (!this.#shared) this.#fatal(new ResqError('RESQ_WORKER_DIED', 'the database worker died'));
    else if (!this.#closed && !this.#down) queueMicrotask(this.#stepUp);
  }

  async #leadWhileHeld(): Promise<void> {
    // The name tells the worker which wasm to load as it starts (see worker.ts).
    const name = `${this.#key === null ? WORKER_NAME : ENCRYPTED_WORKER_NAME}${this.#opts.name}`;
    const worker = startWorker(() => new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name }));
    const client = this.#newClient(worker);
    let ended!: () => void;
    const end = new Promise<void>((r) => (ended = r));
    const die = (reason: string) => {
      client.die(reason);
      ended();
    };
    worker.addEventListener('error', (e) => die(e.message || 'the worker script failed to load or threw'));
    worker.addEventListener('messageerror', () => die('a reply could not be deserialized'));
    // The worker holds this lock while it lives: when the page gets it, the
    // worker has ended, even if nothing told the page (a browser stopping
    // it under memory pressure, `terminate()` from outside).
    const lock = `resq-wasm-worker:${uuid()}`;
    let graceful = false;
    try {
      const { name, storage, blobTransferThreshold, timeout } = this.#opts;
      const key = this.#key === null ? {} : 'held' in this.#key ? { heldKey: this.#key.held } : { key: this.#key.invalid };
      await client.call('open', {
        name,
        storage,
        blobTransferThreshold,
        timeout,
        lock,
        tab: this.#tabLock,
        ...key,
        ...(this.#encrypting ? { encrypt: true } : {}),
      });
      this.#encrypting?.resolve();
      this.#encrypting = null;
    } catch (err) {
      worker.terminate();
      throw err;
    }
    navigator.locks
      ?.request(lock, { signal: this.#stop.signal }, () => die('the worker was stopped (by the browser, or from outside)'))
      .catch(() => {});
    if (this.#closed) {
      worker.terminate();
      return;
    }
    this.#worker = worker;
    this.#endLead = () => {
      // Followers' requests that reach the worker after this tab's close
      // are handed back to them: give those a moment to come back.
      graceful = this.#closed;
      die('this tab let go of the database');
    };
    // Leading now: the worker this tab followed has let go of the file, and
    // its calls still unanswered come here (see #connect).
    this.#own = client;
    this.#connect(client);
    this.#tell({ kind: 'lead', name: this.#opts.name, lock });
    await end;
    // The lead is over: the worker stops, the lock goes to the next tab.
    if (graceful) setTimeout(() => worker.terminate(), CLOSE_GRACE_MS);
    else worker.terminate();
    this.#worker = null;
    this.#endLead = null;
    this.#tell({ kind: 'resign', name: this.#opts.name, lock });
    this.#lose(client, 'its worker stopped');
    if (this.#own === client) this.#own = null;
  }

  /** Follows: a port to the leader's worker, through the broker. */
  async #follow(): Promise<void> {
    // Without SharedWorker this tab can only wait for the lead.
    if (!this.#broker || this.#following || this.#leading) return;
    this.#following = true;
    const attempt = ++this.#attempt;
    const { port1, port2 } = new MessageChannel();
    const leader = new Promise<string>((r) => (this.#onLeader = r));
    this.#tell({ kind: 'connect', name: this.#opts.name, lock: this.#tabLock }, [port2]);
    const lock = await leader;
    // A live leader's worker says hello first. One that is closing says so
    // instead, and a dead one says nothing: either way this tab waits for
    // that worker's end (its lifetime lock), then asks again.
    let ended = false;
    let client: Client | null = null;
    let leaderEnded!: () => void;
    const leaderGone = new Promise<null>((r) => (leaderEnded = () => r(null)));
    const hello = new Promise<Hello | false>((r) => {
      port1.onmessage = (e) => {
        if ((e.data as Hello)?.hello === true) r(e.data as Hello);
      };
      navigator.locks
        .request(lock, { signal: this.#stop.signal }, () => {
          ended = true;
          r(false);
          leaderEnded();
          port1.close();
          if (client) this.#lose(client, 'the tab that held the database closed, reloaded or crashed');
          if (!this.#client && !this.#closed && !this.#down) setTimeout(() => void this.#follow(), RETRY_MS);
        })
        .catch(() => r(false));
    });
    const alive = await hello;
    // A follow overtaken (this tab leads now, or tries again) proves nothing:
    // the worker that answered may be one that is still opening.
    const current = () => !ended && !this.#closed && !this.#leading && attempt === this.#attempt;
    const keyed = alive && current() && (await this.#proveKey(alive, port1, leaderGone, current));
    this.#following = false;
    if (!keyed || !current()) return port1.close();
    port1.onmessage = null;
    client = this.#newClient(port1);
    port1.start();
    this.#connect(client);
  }

  /**
   * Whether this tab may follow the leader that said `hello` on `port`: a
   * plain database for a tab without a key, or an encrypted one whose
   * challenge this tab's key answers (keyproof.ts). Otherwise this link
   * fails with RESQ_BAD_KEY (if the follow is still `current`), and none
   * of its calls runs.
   */
  async #proveKey(hello: Hello, port: MessagePort, leaderGone: Promise<null>, current: () => boolean): Promise<boolean> {
    const answer = await answerChallenge(hello, port, this.#key, this.#opts.name, leaderGone);
    if (typeof answer === 'object' && current()) this.#fatal(new ResqError('RESQ_BAD_KEY', answer.refusal));
    return answer === 'ok';
  }

  /** A client on `port`, whose pushes and notices come here. */
  #newClient(port: Worker | MessagePort): Client {
    const client: Client = new Client(port, {
      onPush: (p) => this.#push(p),
      // The leader's page closed the database: its worker answers nothing
      // more (the answers to calls before the notice came first), so the
      // calls still waiting on it go to the next leader.
      onClosing: () => this.#lose(client, 'the tab that held the database closed it'),
      onExpired: () => this.onExpired?.(),
      onRekeyed: () =>
        this.#fatal(new ResqError('RESQ_BAD_KEY', `another tab changed the key of ${this.#opts.name}: open it again with the new key`)),
      onDeath: () => this.#lost(client),
    });
    return client;
  }

  /** A call bound to `generation` whose worker has been replaced since. */
  #stale(generation: number | undefined): boolean {
    return generation !== undefined && generation !== this.generation;
  }

  #fromBroker(msg: BrokerReply, port: MessagePort | undefined): void {
    if (msg.kind === 'leader') this.#onLeader?.(msg.lock);
    else if (msg.kind === 'follower' && port) {
      if (this.#worker) this.#worker.postMessage({ attach: msg.lock }, [port]);
      else port.close();
    }
  }

  #tell(msg: BrokerRequest, transfer: Transferable[] = []): void {
    this.#broker?.postMessage(msg, transfer);
  }

  /**
   * Connected to a worker. A worker that holds the file means every worker
   * before it has let go of it: calls still waiting on an earlier one go
   * here, before those made since. Live queries register again.
   */
  #connect(client: Client): void {
    for (const c of [...this.#calls]) if (c.on && c.on !== client) this.#lose(c.on, 'the tab that held the database went away');
    this.generation += 1;
    this.#client = client;
    for (const [id, w] of this.#watchers) if (!this.#registering.has(id)) void this.#register(id, w);
    this.#flush();
    this.#settle.resolve();
  }

  /** The worker behind `client` is gone, or to be treated so: see {@link #lost}. */
  #lose(client: Client, reason: string): void {
    client.die(reason);
  }

  /**
   * The worker behind `client` is gone. Its calls still unanswered that
   * another tab's worker had go to the next leader, marked as sent before;
   * the others (this tab's own worker's, those bound to the worker that
   * went, and one that every leader it reached went away on) reject with
   * RESQ_WORKER_DIED.
   */
  #lost(client: Client): void {
    if (this.#client === client) this.#client = null;
    for (const c of [...this.#calls]) {
      if (c.on !== client) continue;
      c.on = null;
      c.losses += 1;
      if (c.carried && (c.generation === undefined || c.commit) && c.losses < MAX_LOSSES) c.again = true;
      else this.#answer(c, false, client.death);
    }
    this.#flush();
  }

  #register(id: number, w: Watcher): Promise<void> {
    const { sql, params, bytes, hash } = w;
    this.#registering.add(id);
    return this.call('watch', { watch: id, sql, params, bytes, previous: hash }).then(
      (r) => {
        this.#registering.delete(id);
        if (r && this.#watchers.has(id)) w.deliver(r);
      },
      (err) => {
        this.#registering.delete(id);
        // This tab's own worker went before answering: the next one gets it again.
        if (!(err instanceof ResqError && err.code === 'RESQ_WORKER_DIED' && !this.#dead)) throw err;
      },
    );
  }

  #push(p: Push): void {
    const w = this.#watchers.get(p.push);
    if (!w) return;
    if ('result' in p) w.deliver(p.result);
    else w.fail(new ResqError(p.error.code as ResqError['code'], p.error.message, p.error.errno));
  }

  /** This link can go no further: everything waiting rejects with `err`. */
  #fatal(err: unknown): void {
    if (this.#dead) return;
    const error = err instanceof ResqError ? err : new ResqError('RESQ_WORKER_DIED', String(err));
    this.#settle.reject(error);
    this.#encrypting?.reject(error);
    this.#shutDown(error);
    this.#client?.die(error.message);
  }
}

const gone = () => new ResqError('RESQ_WORKER_DIED', 'the worker that held this (a transaction, a blob stream, a staged blob) is gone');
