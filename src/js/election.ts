// Which tab's worker holds a database, and this tab's way to it (for its
// link, link.ts). Any number of same-origin tabs may open one OPFS
// database: one of them leads (its worker holds the file), chosen with a
// Web Lock, and the others follow, sending their calls over a MessagePort
// straight to the leader's worker. The port broker (broker.ts, a
// SharedWorker) introduces them. When the leader goes (its tab closes,
// reloads, crashes or freezes), the next tab in the lock's queue leads, and
// the followers connect to it. A memory database is private to its tab:
// its link leads alone, and when its worker dies so does the database.
//
// The key is held here: it picks the worker a leading tab starts and opens
// the file with, and a following tab proves it to the leader's worker.

import { type Client, startWorker } from './client.js';
import { ResqError } from './errors.js';
import { answerChallenge } from './keyproof.js';
import {
  BROKER_CHANNEL,
  ENCRYPTED_WORKER_NAME,
  WORKER_NAME,
  type BrokerReply,
  type BrokerRequest,
  type HeldKey,
  type Hello,
  type AskedStorage,
  type Storage,
} from './protocol.js';
import { spawnWorker } from './spawn.js';

export interface ElectionOptions {
  name: string;
  storage: AskedStorage;
  /** As `open` takes it: bytes, or -1 for never. */
  blobTransferThreshold: number;
  /** `transactionTimeout`, ms. */
  timeout: number;
}

/** What the election asks of its link, and tells it. */
export interface Seat {
  /** A client on `port`, whose pushes and notices go to the link. */
  client(port: Worker | MessagePort): Client;
  /** Connected to a worker: the link's calls go there now. */
  connect(client: Client): void;
  /** Whether the link has a worker to send to. */
  connected(): boolean;
  /** The link can go no further. */
  fatal(err: unknown): void;
}

/**
 * How long a worker whose page closed the database lives on, handing back
 * the requests following tabs sent it meanwhile.
 */
const CLOSE_GRACE_MS = 250;

/** Between asking the broker again after a leader that went (it may not have heard yet). */
const RETRY_MS = 20;

/**
 * While a tab waits for the broker to name a leader, it pings the broker
 * this often; a broker that did not answer the ping before is taken for
 * gone, and the tab connects again (see BROKER_CHANNEL in protocol.ts).
 */
const PING_MS = 1000;

/**
 * How long a leading tab waits for the broker to acknowledge its
 * registration before it registers again on a new port (see #register).
 */
const ACK_MS = 250;

const uuid = () => crypto.randomUUID?.() ?? `${Date.now()}-${Math.random()}`;

export class Election {
  /** Other tabs may open the database too: it leads by a Web Lock, or follows. */
  readonly shared: boolean;
  /** The key, held (keyproof.ts); its presence picks the wasm with ciphers. */
  key: HeldKey | null = null;
  readonly #opts: ElectionOptions;
  readonly #seat: Seat;
  /** A `rekey(key)` of a plain database, until this tab's next worker has encrypted it. */
  #encrypting: { resolve(): void; reject(e: unknown): void } | null = null;
  /** The lead ends to start again with another worker (see {@link encryptNext}). */
  #relead = false;
  /** The client of this tab's own worker, while it leads. */
  #own: Client | null = null;
  #closed = false;
  /** Ends every lock wait of this link (on close). */
  #stop = new AbortController();
  /** Bumped by each new attempt to connect: older ones give up. */
  #attempt = 0;
  // Leading.
  #worker: Worker | null = null;
  /** From the lock's grant to the end of the lead (the worker may be starting). */
  #leading = false;
  #endLead: (() => void) | null = null;
  /** Withdraws this tab from the queue for the lead (while frozen). */
  #candidacy: AbortController | null = null;
  /** The page is hidden or frozen: it neither leads nor queues to. */
  /** Where the database lives, once a worker opened it or a leader said so (`db.storage`). */
  storage: Storage | null = null;
  #down = false;
  // Following.
  #broker: MessagePort | null = null;
  /**
   * While this tab leads, its earlier ports to the broker (before it
   * registered again): a follower the broker handed to one of them before
   * the registration on the newest arrived must still reach the worker.
   */
  #formerBrokers: MessagePort[] = [];
  /** Hears of a broker that started, perhaps again (BROKER_CHANNEL). */
  #brokerNews: BroadcastChannel | null = null;
  /** The lifetime lock this tab registered with the broker as the leader's, while it leads. */
  #registered: string | null = null;
  /** Whether the broker said anything since the last ping. */
  #heard = true;
  /** The broker acknowledged this tab's lead as registered (`led`). */
  #led = false;
  /** Asks again if the broker did not acknowledge the lead in time. */
  #ledCheck: ReturnType<typeof setTimeout> | undefined;
  /** The broker acknowledged this tab's request to follow (`queued` or `leader`). */
  #queued = false;
  /** Takes the broker's answer to this tab's follow (null: ask again). */
  #onLeader: ((lock: string | null) => void) | null = null;
  /** A request for a port is out (one at a time). */
  #following = false;
  #tabLock = `resq-wasm-tab:${uuid()}`;

  constructor(opts: ElectionOptions, seat: Seat) {
    this.#opts = opts;
    this.#seat = seat;
    // Node (node.ts) has no `navigator` before version 21, nor Web Locks:
    // there a database is never shared.
    this.shared = opts.storage !== 'memory' && typeof globalThis.navigator?.locks?.request === 'function';
  }

  /** Whether calls sent to `client` go to another tab's worker (and are sent again if it goes). */
  carries(client: Client): boolean {
    return this.shared && client !== this.#own;
  }

  /** Leads, or follows and queues for the lead, with `key`. */
  async start(key: HeldKey | null): Promise<void> {
    this.key = key;
    if (!this.shared) return this.#lead();
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
      this.#connectBroker();
      if (typeof BroadcastChannel === 'function') {
        this.#brokerNews = new BroadcastChannel(BROKER_CHANNEL);
        this.#brokerNews.onmessage = () => this.#brokerStarted();
      }
    }
    // Page Lifecycle: `pagehide`/`pageshow` on the window, `freeze`/`resume`
    // on the document (absent in a worker that opens a database).
    globalThis.addEventListener?.('pagehide', this.#stepDown);
    globalThis.addEventListener?.('pageshow', this.#stepUp);
    globalThis.document?.addEventListener('freeze', this.#stepDown);
    globalThis.document?.addEventListener('resume', this.#stepUp);
    // Lead now if nobody does; otherwise follow, and queue for the lead.
    const leading = await this.#candidate(true);
    if (!leading) this.#stepUp();
  }

  /** Stops this tab's part: its worker if it leads (after its close call), its locks, its port. */
  stop(): void {
    this.#closed = true;
    this.#stop.abort();
    this.#candidacy?.abort();
    this.#endLead?.();
    this.#broker?.close();
    this.#closeFormerBrokers();
    this.#brokerNews?.close();
    clearTimeout(this.#ledCheck);
    // A follow waiting for the broker's answer ends.
    const asked = this.#onLeader;
    this.#onLeader = null;
    asked?.(null);
    globalThis.removeEventListener?.('pagehide', this.#stepDown);
    globalThis.removeEventListener?.('pageshow', this.#stepUp);
    globalThis.document?.removeEventListener('freeze', this.#stepDown);
    globalThis.document?.removeEventListener('resume', this.#stepUp);
  }

  /**
   * `rekey(key)` of a plain database (worker/ops.ts) let go of this tab's
   * worker: the next one, with ciphers, encrypts the file as it opens it,
   * within the same lead, so no other tab opens it plain meanwhile.
   * Resolves once it has.
   */
  encryptNext(): Promise<void> {
    const done = new Promise<void>((resolve, reject) => (this.#encrypting = { resolve, reject }));
    this.#relead = true;
    this.#endLead?.();
    return done;
  }

  /** The link failed: a `rekey(key)` waiting for its worker with ciphers fails with it. */
  fail(error: ResqError): void {
    this.#encrypting?.reject(error);
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
        if (held && !this.#closed) await this.#lead().catch((err) => this.#seat.fatal(err));
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
    if (!this.#seat.connected()) void this.#follow();
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
      // Led again at once after encryptNext: no other tab opens it plain.
      do {
        this.#relead = false;
        await this.#leadWhileHeld();
      } while (this.#relead && !this.#closed);
    } finally {
      this.#leading = false;
    }
    if (!this.shared) this.#seat.fatal(new ResqError('RESQ_WORKER_DIED', 'the database worker died'));
    else if (!this.#closed && !this.#down) queueMicrotask(this.#stepUp);
  }

  async #leadWhileHeld(): Promise<void> {
    // The name tells the worker which wasm to load as it starts (see worker.ts).
    const name = `${this.key === null ? WORKER_NAME : ENCRYPTED_WORKER_NAME}${this.#opts.name}`;
    const worker = startWorker(() => spawnWorker(name));
    const client = this.#seat.client(worker);
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
      const opened = await client.call('open', {
        name,
        storage,
        blobTransferThreshold,
        timeout,
        lock,
        tab: this.#tabLock,
        ...(this.key ? { heldKey: this.key } : {}),
        ...(this.#encrypting ? { encrypt: true } : {}),
      });
      this.storage = opened.storage;
      this.#encrypting?.resolve();
      this.#encrypting = null;
    } catch (err) {
      worker.terminate();
      throw err;
    }
    globalThis.navigator?.locks
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
    // its calls still unanswered come here (see link.ts's #connect).
    this.#own = client;
    this.#seat.connect(client);
    this.#registered = lock;
    this.#register();
    await end;
    // The lead is over: the worker stops, the lock goes to the next tab.
    if (graceful) setTimeout(() => worker.terminate(), CLOSE_GRACE_MS);
    else worker.terminate();
    this.#worker = null;
    this.#endLead = null;
    this.#registered = null;
    clearTimeout(this.#ledCheck);
    this.#closeFormerBrokers();
    this.#tell({ kind: 'resign', name: this.#opts.name, lock });
    client.die('its worker stopped');
    if (this.#own === client) this.#own = null;
  }

  /** Follows: a port to the leader's worker, through the broker. */
  async #follow(): Promise<void> {
    // Without SharedWorker this tab can only wait for the lead.
    if (!this.#broker || this.#following || this.#leading || this.#closed) return;
    this.#following = true;
    const attempt = ++this.#attempt;
    const { port1, port2 } = new MessageChannel();
    const leader = new Promise<string | null>((r) => (this.#onLeader = r));
    this.#queued = false;
    this.#tell({ kind: 'connect', name: this.#opts.name, lock: this.#tabLock }, [port2]);
    const pings = setInterval(this.#ping, PING_MS);
    const lock = await leader;
    clearInterval(pings);
    if (lock === null) {
      // The broker started again or went: ask the one there is now.
      port1.close();
      this.#following = false;
      return this.#follow();
    }
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
          client?.die('the tab that held the database closed, reloaded or crashed');
          if (!this.#seat.connected() && !this.#closed && !this.#down) setTimeout(() => void this.#follow(), RETRY_MS);
        })
        .catch(() => r(false));
    });
    const alive = await hello;
    // A follow overtaken (this tab leads now, or tries again) proves nothing:
    // the worker that answered may be one that is still opening.
    const current = () => !ended && !this.#closed && !this.#leading && attempt === this.#attempt;
    const placed = alive && current() && this.#sameStorage(alive);
    const keyed = placed && (await this.#proveKey(alive, port1, leaderGone, current));
    this.#following = false;
    if (!keyed || !current()) return port1.close();
    port1.onmessage = null;
    client = this.#seat.client(port1);
    port1.start();
    this.#seat.connect(client);
  }

  /**
   * Whether this tab may follow the leader that said `hello` on `port`: a
   * plain database for a tab without a key, or an encrypted one whose
   * challenge this tab's key answers (keyproof.ts). Otherwise the link
   * fails with RESQ_BAD_KEY (if the follow is still `current`), and none
   * of its calls runs.
   */
  /**
   * Whether this tab may follow a leader whose database lives where
   * `hello` says: anywhere, unless this tab asked for a storage; else the
   * link fails with RESQ_UNSUPPORTED (a name lives in one storage).
   */
  #sameStorage(hello: Hello): boolean {
    const asked = this.#opts.storage;
    if (asked !== 'default' && asked !== hello.storage) {
      this.#seat.fatal(
        new ResqError(
          'RESQ_UNSUPPORTED',
          `${this.#opts.name} is open in another tab with storage '${hello.storage}', not '${asked}': open it without storage or with storage '${hello.storage}'`,
        ),
      );
      return false;
    }
    this.storage = hello.storage;
    return true;
  }

  async #proveKey(hello: Hello, port: MessagePort, leaderGone: Promise<null>, current: () => boolean): Promise<boolean> {
    const answer = await answerChallenge(hello, port, this.key, this.#opts.name, leaderGone);
    if (typeof answer === 'object' && current()) this.#seat.fatal(new ResqError('RESQ_BAD_KEY', answer.refusal));
    return answer === 'ok';
  }

  /** A port to the broker: the one running, or one the browser starts. */
  #connectBroker(): void {
    const broker = startWorker(
      () => new SharedWorker(new URL('./broker.js', import.meta.url), { type: 'module', name: 'resq-wasm broker' }),
    );
    const former = this.#broker;
    if (former && this.#registered !== null) {
      former.onmessage = (e: MessageEvent<BrokerReply>) => {
        if (e.data?.kind === 'follower') this.#fromBroker(e.data, e.ports[0]);
      };
      this.#formerBrokers.push(former);
    } else former?.close();
    this.#broker = broker.port;
    this.#heard = true;
    broker.port.onmessage = (e: MessageEvent<BrokerReply>) => this.#fromBroker(e.data, e.ports[0]);
    this.#register();
  }

  #closeFormerBrokers(): void {
    for (const port of this.#formerBrokers) port.close();
    this.#formerBrokers = [];
  }

  /**
   * Tells the broker that this tab leads (if it does), and tells it again
   * on a new port unless it acknowledges that within ACK_MS: the message
   * may have reached a broker that was ending (see BROKER_CHANNEL), and
   * followers would wait for this leader forever.
   */
  #register(): void {
    const lock = this.#registered;
    clearTimeout(this.#ledCheck);
    if (lock === null || !this.#broker) return;
    this.#led = false;
    this.#tell({ kind: 'lead', name: this.#opts.name, lock });
    this.#ledCheck = setTimeout(() => {
      if (this.#registered === lock && !this.#led && !this.#closed) this.#askAgain();
    }, ACK_MS);
  }

  /**
   * A broker started, perhaps again, knowing no leader: this tab tells it
   * again what it is waiting for or leading, on a new port (its port to
   * the broker before may go unanswered).
   */
  #brokerStarted(): void {
    if (this.#closed || (this.#registered === null && this.#onLeader === null)) return;
    this.#askAgain();
  }

  /**
   * While this tab waits for the broker's answer: a broker that did not
   * answer the last ping is gone, and one that did not acknowledge the
   * request never got it (see BROKER_CHANNEL).
   */
  #ping = (): void => {
    if (this.#heard && this.#queued) {
      this.#heard = false;
      this.#tell({ kind: 'ping' });
    } else this.#askAgain();
  };

  /** Connects to the broker again: a lead is registered again, a follow asks again. */
  #askAgain(): void {
    try {
      this.#connectBroker();
    } catch {
      return; // no broker can start now: the follow waits for the lead
    }
    const asked = this.#onLeader;
    this.#onLeader = null;
    asked?.(null);
  }

  #fromBroker(msg: BrokerReply, port: MessagePort | undefined): void {
    this.#heard = true;
    if (msg.kind === 'led') this.#led ||= msg.lock === this.#registered;
    else if (msg.kind === 'queued') this.#queued = true;
    else if (msg.kind === 'leader') {
      this.#queued = true;
      const answer = this.#onLeader;
      this.#onLeader = null;
      answer?.(msg.lock);
    } else if (msg.kind === 'follower' && port) {
      if (this.#worker) this.#worker.postMessage({ attach: msg.lock }, [port]);
      else port.close();
    }
  }

  #tell(msg: BrokerRequest, transfer: Transferable[] = []): void {
    this.#broker?.postMessage(msg, transfer);
  }
}
