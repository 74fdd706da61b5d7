// The worker's thread, given up between the steps of a long request, so
// the calls that arrived meanwhile run (reads beside the writer, on a
// reader: queue.ts). A step of SQLite is synchronous; a request that is
// many steps (a `File` streaming into its cell, a checkpoint's slices)
// yields between them.

/**
 * How long a request may keep the thread before it yields: a read that
 * arrives meanwhile waits no longer than this and one step, within a
 * frame (16 ms). 1 ms, not 4: Firefox lets a message on a `MessagePort`
 * (another session's call) in only after about two yields, so a 4 ms turn
 * kept another session's call 8 ms or more (experiment 029).
 */
export const TURN_MS = 1;

/**
 * A task's turn after those queued now (a message arriving, a reader's
 * answer): a message to itself, which a timer's 4 ms clamp does not delay.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

/** Yields the thread when the request has held it for {@link TURN_MS} since it last did. */
export class Turns {
  #since = performance.now();

  async pass(): Promise<void> {
    if (performance.now() - this.#since < TURN_MS) return;
    await nextTurn();
    this.#since = performance.now();
  }
}
