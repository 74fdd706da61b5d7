// Who sends this worker requests: the page that started it, and the tabs
// that follow it, each through a MessagePort the page hands over (see
// link.ts). What a caller made here (staged blobs, blob streams, live
// queries, an open transaction, an export) is its own, and goes when it
// leaves: by closing, or when its tab ends (the Web Lock it holds is freed).

/** One caller: the page, or a following tab. */
export interface Caller {
  post(message: unknown, transfer?: Transferable[]): void;
  /** The page that started this worker (its `close` closes the database). */
  page: boolean;
  /** Its tab's id (the name of the lock the tab holds): the key of its recorded calls. */
  tab: string;
  /** Left: its requests still queued are dropped. */
  gone: boolean;
  stages: Set<number>;
  /**
   * Its transaction was rolled back by `transactionTimeout`: its calls
   * reject with RESQ_TIMEOUT until it ends that transaction.
   */
  expired: boolean;
  /**
   * Ms a transaction of its own (one it began with SQL, not through
   * `transaction()`, whose BEGIN says) may keep others waiting while idle.
   */
  timeout: number;
  /** A following tab's: stops waiting on its lock and closes its port. */
  detach(): void;
}

/** `transactionTimeout` when the caller has not said (a following tab's own BEGIN). */
export const DEFAULT_TIMEOUT_MS = 5000;

export function caller(page: boolean, tab: string, post: Caller['post'], detach: () => void = () => {}): Caller {
  return { post, page, tab, gone: false, stages: new Set(), expired: false, timeout: DEFAULT_TIMEOUT_MS, detach };
}
