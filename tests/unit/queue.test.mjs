// The worker queue's rules (src/js/worker/queue.ts) on their own: the order
// requests run in, a transaction's owner holding the others back, an
// export's hold, the transaction timeout and the export stall, and when
// live queries re-run. The work each request does is a stand-in that logs
// it, and the connection one that says whether a transaction is open; the
// browser tests (timeout, tabs, backup) drive the same rules through the
// real worker.
//
// The clock is the test's: `performance.now()` reads it and node:test's
// mock timers fire what falls due as it moves, so a 10 s stall takes no time.

import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { load } from './load.mjs';

const { Queue, EXPORT_IDLE_MS, RERUN_EVERY } = await load('src/js/worker/queue.ts');
const { caller } = await load('src/js/worker/callers.ts');

let clock = 0;
Object.defineProperty(globalThis, 'performance', { value: { now: () => clock }, configurable: true });
mock.timers.enable({ apis: ['setTimeout'] });

/** Moves the clock on by `ms`, running the timers that fall due. */
async function advance(ms) {
  clock += ms;
  mock.timers.tick(ms);
  await settle();
}

/** Lets the queue run what it can. */
const settle = () => new Promise((r) => setImmediate(r));

/**
 * A queue over a stand-in connection. Each request's run logs `tab:sql`
 * (or `tab:op`); BEGIN opens a transaction, COMMIT and ROLLBACK end it; an
 * export's requests do what ops.ts does with the queue; a request with
 * `held` runs until the test calls `release()`.
 */
function setup({ reader = false } = {}) {
  const log = [];
  const held = [];
  const conn = {
    open: false,
    calls: [],
    transactionOpen: () => conn.open,
    transactionCallback: (on) => conn.calls.push(`callback ${on}`),
    execute: (sql) => {
      conn.calls.push(sql);
      if (sql === 'ROLLBACK') conn.open = false;
    },
    exportEnd: () => conn.calls.push('exportEnd'),
  };
  const work = {
    async run(from, req) {
      log.push(`${from.tab}:${req.sql ?? req.op}`);
      if (req.timeout !== undefined) queue.timeoutNext(req.timeout);
      if (req.sql === 'BEGIN') conn.open = true;
      if (req.sql === 'COMMIT' || req.sql === 'ROLLBACK') conn.open = false;
      // `holds`: an export on the writer (a database in memory), not a snapshot.
      if (req.op === 'exportOpen')
        queue.beginExport({ from, id: 1, size: 100, read: 0, active: performance.now(), holds: req.holds === true });
      if (req.op === 'exportRead') queue.exporting.active = performance.now();
      if (req.op === 'exportClose') queue.endExport();
      if (req.sql === 'throw') throw new Error('boom');
      if (req.sql === 'big') bigs += 1;
      if (req.held) await new Promise((r) => held.push(r));
    },
    // With a reader: a read logs `R ` and its caller's `tab:sql`; one
    // whose sql is 'write' is given back for the writer.
    read(from, req) {
      if (!reader) return null;
      if (req.sql === 'write') return settle().then(() => false);
      log.push(`R ${from.tab}:${req.sql}`);
      return settle().then(() => true);
    },
    async leave(from) {
      log.push(`${from.tab} left`);
    },
    idle: () => log.push('idle'),
    // Beside the writer only where there is a reader, as in the worker.
    rerunBeside: () => reader && log.push('rerun beside'),
    expired: (owner) => log.push(`${owner.tab} expired`),
    die: (err) => log.push(`died: ${err.message}`),
    // A request whose sql is 'big' took the WAL past its bound: a copy of three slices.
    checkpointDue: () => {
      const due = bigs > 0;
      bigs = 0;
      if (due) slicesLeft = 3;
      return due;
    },
    checkpoint: () => {
      log.push('slice');
      return --slicesLeft > 0;
    },
  };
  let [bigs, slicesLeft] = [0, 0];
  const queue = new Queue(work, () => conn);
  const release = () => held.shift()();
  return { queue, log, conn, release };
}

const tab = (name, timeout) =>
  Object.assign(
    caller(false, name, () => {}),
    timeout === undefined ? {} : { timeout },
  );
const sql = (text, more = {}) => ({ op: 'execute', sql: text, ...more });
const read = (text) => ({ op: 'query', sql: text });

test('requests run one at a time, in the order they arrived, and live queries re-run once the queue is idle', async () => {
  const { queue, log, release } = setup();
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('1', { held: true }));
  queue.enqueue(b, sql('2'));
  queue.enqueue(a, sql('3'));
  await settle();
  assert.deepEqual(log, ['A:1'], 'the next waits for the one running');
  release();
  await settle();
  assert.deepEqual(log, ['A:1', 'B:2', 'A:3', 'idle']);
});

test("while a caller's transaction is open only its requests run, even those that came after others'", async () => {
  const { queue, log } = setup();
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('BEGIN'));
  queue.enqueue(b, sql('x'));
  queue.enqueue(a, sql('y'));
  queue.enqueue(a, sql('COMMIT'));
  await settle();
  assert.deepEqual(log, ['A:BEGIN', 'A:y', 'A:COMMIT', 'B:x', 'idle'], 'no re-run inside the transaction');
  assert.equal(queue.owner, null);
});

test("drop: a caller's requests still queued are dropped; its leaving runs in its turn", async () => {
  const { queue, log, release } = setup();
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('1', { held: true }));
  queue.enqueue(b, sql('2'));
  queue.enqueue(b, sql('3'));
  queue.drop(b);
  queue.enqueue(b, { op: 'leave' });
  queue.enqueue(a, sql('4'));
  release();
  await settle();
  assert.deepEqual(log, ['A:1', 'B left', 'A:4', 'idle']);
});

test("while an export on the writer (memory) runs, only its reads, its close and its caller's leaving run", async () => {
  const { queue, log, conn } = setup();
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, { op: 'exportOpen', holds: true });
  queue.enqueue(b, sql('x'));
  queue.enqueue(a, sql('y'));
  queue.enqueue(a, { op: 'exportRead' });
  queue.enqueue(a, { op: 'exportClose' });
  await settle();
  assert.deepEqual(log, ['A:exportOpen', 'A:exportRead', 'A:exportClose', 'B:x', 'A:y', 'idle'], 'no re-run during the export');
  assert.deepEqual(conn.calls, ['exportEnd']);
});

test("while an export on a snapshot runs, other callers' calls run beside it; only what would end it waits", async () => {
  const { queue, log, conn } = setup();
  const [a, b, c] = [tab('A'), tab('B'), tab('C')];
  queue.enqueue(a, { op: 'exportOpen' });
  await settle();
  queue.enqueue(b, sql('b writes'));
  queue.enqueue(c, { op: 'exportOpen' });
  queue.enqueue(b, { op: 'rekey' });
  queue.enqueue(a, sql('a writes'));
  await settle();
  assert.deepEqual(
    log,
    ['A:exportOpen', 'idle', 'B:b writes', 'A:a writes', 'idle'],
    'writes and re-runs go on; the other export and the rekey wait',
  );
  queue.enqueue(a, { op: 'exportClose' });
  await settle();
  await settle();
  assert.deepEqual(log.slice(5), ['A:exportClose', 'C:exportOpen', 'idle'], "C's export: the rekey waits for it in turn");
  queue.enqueue(c, { op: 'exportClose' });
  await settle();
  await settle();
  assert.deepEqual(log.slice(8), ['C:exportClose', 'B:rekey', 'idle']);
  assert.deepEqual(conn.calls, ['exportEnd', 'exportEnd']);
});

test(`an export left unread for ${EXPORT_IDLE_MS} ms while a request waits ends, and the request runs`, async () => {
  const { queue, log, conn } = setup();
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, { op: 'exportOpen' });
  await settle();
  await advance(3 * EXPORT_IDLE_MS);
  assert.notEqual(queue.exporting, null, 'nobody waits: it is left alone');
  queue.enqueue(b, { op: 'exportOpen', sql: 'x' });
  await advance(EXPORT_IDLE_MS / 2);
  // A read: the stall counts from it.
  queue.enqueue(a, { op: 'exportRead' });
  await settle();
  await advance(EXPORT_IDLE_MS - 1);
  assert.deepEqual(log, ['A:exportOpen', 'idle', 'A:exportRead', 'idle'], 'read within the last 10 s: it goes on');
  await advance(1);
  assert.deepEqual(conn.calls, ['exportEnd']);
  assert.deepEqual(log.slice(4), ['B:x', 'idle'], "B's export runs");
  assert.equal(queue.exporting.from, b);
});

test("a transaction that keeps another caller waiting for its owner's transactionTimeout, idle, is rolled back and its owner told", async () => {
  const { queue, log, conn } = setup();
  const [a, b] = [tab('A', 1000), tab('B')];
  queue.enqueue(a, sql('BEGIN'));
  await settle();
  await advance(5000);
  assert.equal(queue.owner, a, 'nobody waits: never timed out');
  queue.enqueue(b, sql('x'));
  await advance(600);
  // A call of its own: the timeout counts from it.
  queue.enqueue(a, sql('y'));
  await settle();
  await advance(999);
  assert.deepEqual(log, ['A:BEGIN', 'A:y']);
  assert.equal(a.expired, false);
  await advance(1);
  assert.deepEqual(conn.calls, ['callback false', 'ROLLBACK'], 'rolled back, not as a transaction callback');
  assert.equal(a.expired, true);
  assert.equal(queue.owner, null);
  assert.deepEqual(log, ['A:BEGIN', 'A:y', 'A expired', 'B:x', 'idle']);
});

test('an owner with a call running is not idle: its time counts from when its last call ended', async () => {
  const { queue, log, release } = setup();
  const [a, b] = [tab('A', 1000), tab('B')];
  queue.enqueue(a, sql('BEGIN'));
  queue.enqueue(a, sql('slow', { held: true }));
  await settle();
  queue.enqueue(b, sql('x'));
  await advance(5000);
  assert.equal(a.expired, false, 'its call runs');
  release();
  await settle();
  await advance(999);
  assert.equal(a.expired, false);
  await advance(1);
  assert.equal(a.expired, true);
  assert.deepEqual(log, ['A:BEGIN', 'A:slow', 'A expired', 'B:x', 'idle']);
});

test("the timeout a BEGIN names (timeoutNext) is its transaction's, over its caller's; Infinity never expires", async () => {
  const { queue, log } = setup();
  const [a, b, c] = [tab('A', 1000), tab('B'), tab('C', 1000)];
  queue.enqueue(a, sql('BEGIN', { timeout: 300 }));
  queue.enqueue(b, sql('x'));
  await settle();
  await advance(300);
  assert.equal(a.expired, true, 'after 300 ms, not 1000');
  queue.enqueue(c, sql('BEGIN', { timeout: Infinity }));
  queue.enqueue(b, sql('z'));
  await settle();
  await advance(1e9);
  assert.equal(c.expired, false);
  assert.deepEqual(log, ['A:BEGIN', 'A expired', 'B:x', 'idle', 'C:BEGIN']);
});

test(`under load, live queries re-run every ${RERUN_EVERY} requests, and never inside a transaction`, async () => {
  const { queue, log } = setup();
  const a = tab('A');
  const n = 2 * RERUN_EVERY + 5;
  for (let i = 1; i <= n; i++) queue.enqueue(a, sql(String(i)));
  await settle();
  const idleAfter = log.flatMap((x, i) => (x === 'idle' ? [log.slice(0, i).filter((y) => y !== 'idle').length] : []));
  assert.deepEqual(idleAfter, [RERUN_EVERY, 2 * RERUN_EVERY, n]);
  log.length = 0;
  queue.enqueue(a, sql('BEGIN'));
  for (let i = 1; i <= n; i++) queue.enqueue(a, sql(String(i)));
  queue.enqueue(a, sql('COMMIT'));
  await settle();
  assert.deepEqual(
    log.filter((x) => x === 'idle'),
    ['idle'],
  );
  assert.equal(log.at(-1), 'idle', 'once, after the COMMIT');
});

test('a request whose run throws ends the worker (die): no answer can be promised after it', async () => {
  const { queue, log } = setup();
  queue.enqueue(tab('A'), sql('throw'));
  await settle();
  assert.deepEqual(log, ['A:throw', 'died: boom']);
});

test("while a request runs, the next read of each other caller runs on a reader; a caller's own calls keep their order", async () => {
  const { queue, log, release } = setup({ reader: true });
  const [a, b, c] = [tab('A'), tab('B'), tab('C')];
  queue.enqueue(a, sql('insert a 64 MB File', { held: true }));
  queue.enqueue(a, read('a reads its write'));
  queue.enqueue(b, read('b1'));
  queue.enqueue(b, read('b2'));
  queue.enqueue(c, sql('c writes'));
  queue.enqueue(c, read('c reads'));
  await settle();
  await settle();
  assert.deepEqual(log, ['A:insert a 64 MB File', 'R B:b1', 'R B:b2'], "b's reads answer while the write runs, in b's order");
  release();
  await settle();
  await settle();
  assert.deepEqual(log.slice(3), ['A:a reads its write', 'C:c writes', 'C:c reads', 'idle']);
});

test("a read the reader gives back runs on the writer, in its caller's order", async () => {
  const { queue, log, release } = setup({ reader: true });
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('long', { held: true }));
  queue.enqueue(b, read('write'));
  queue.enqueue(b, read('after'));
  await settle();
  await settle();
  assert.deepEqual(log, ['A:long'], 'its next call waits for it');
  release();
  await settle();
  await settle();
  assert.deepEqual(log, ['A:long', 'B:write', 'B:after', 'idle']);
});

test("while a transaction is open, other callers' reads run on a reader, and the owner's in its transaction", async () => {
  const { queue, log } = setup({ reader: true });
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('BEGIN'));
  await settle();
  queue.enqueue(b, read('b reads the last commit'));
  queue.enqueue(b, sql('b writes'));
  queue.enqueue(a, read('a reads its own'));
  await settle();
  await settle();
  assert.deepEqual(log, ['A:BEGIN', 'R B:b reads the last commit', 'A:a reads its own']);
  queue.enqueue(a, sql('COMMIT'));
  await settle();
  await settle();
  assert.deepEqual(log.slice(3), ['A:COMMIT', 'B:b writes', 'idle']);
});

test('without a reader (a database in memory), reads wait for the writer as before', async () => {
  const { queue, log, release } = setup();
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('long', { held: true }));
  queue.enqueue(b, read('b'));
  await settle();
  assert.deepEqual(log, ['A:long']);
  release();
  await settle();
  assert.deepEqual(log, ['A:long', 'B:b', 'idle']);
});

test("while a request runs, another caller's blob stream opens, reads and closes beside it (on its snapshot), in order", async () => {
  const { queue, log, release } = setup({ reader: true });
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('insert a 1 GB File', { held: true }));
  for (const [op, text] of [
    ['blobStreamOpen', 'open'],
    ['blobStreamRead', 'chunk 1'],
    ['blobStreamRead', 'chunk 2'],
    ['blobStreamClose', 'close'],
  ])
    queue.enqueue(b, { op, sql: text });
  for (let i = 0; i < 6; i++) await settle();
  assert.deepEqual(log, ['A:insert a 1 GB File', 'R B:open', 'R B:chunk 1', 'R B:chunk 2', 'R B:close']);
  release();
  await settle();
  assert.deepEqual(log.slice(5), ['idle']);
});

test('live queries re-run beside a request that holds the writer past its first turn, not beside one that ends in it', async () => {
  const { queue, log, release } = setup({ reader: true });
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('a quick write'));
  await settle();
  await advance(1);
  assert.deepEqual(log, ['A:a quick write', 'idle'], 'a request that ends in its first turn: no re-run beside it');
  queue.enqueue(b, sql('insert a 1 GB File', { held: true }));
  await settle();
  await advance(1);
  assert.deepEqual(log.slice(2), ['B:insert a 1 GB File', 'rerun beside'], 'the watchers of the last commit hear of it now');
  release();
  await settle();
  assert.deepEqual(log.slice(4), ['idle']);
});

test("a binding's live query (own) is in a session of its own: not behind its caller's calls, nor in its transaction", async () => {
  const { queue, log, release } = setup({ reader: true });
  const a = tab('A');
  queue.enqueue(a, sql('insert a 1 GB File', { held: true }));
  queue.enqueue(a, { op: 'watch', sql: 'app watch' });
  queue.enqueue(a, { op: 'watch', sql: 'binding watch', own: true });
  for (let i = 0; i < 4; i++) await settle();
  assert.deepEqual(log, ['A:insert a 1 GB File', 'R A:binding watch'], "the binding's answers beside; the app's own waits its turn");
  release();
  for (let i = 0; i < 4; i++) await settle();
  assert.deepEqual(log.slice(2), ['A:app watch', 'idle']);
  // In the caller's transaction, the binding's still reads the last commit, on the reader.
  queue.enqueue(a, sql('BEGIN'));
  await settle();
  queue.enqueue(a, { op: 'watch', sql: 'binding watch 2', own: true });
  for (let i = 0; i < 4; i++) await settle();
  assert.deepEqual(log.slice(4), ['A:BEGIN', 'R A:binding watch 2']);
});

test('a checkpoint holds the writer: reads run beside its slices, writes wait for its end, and one in a transaction waits for the commit', async () => {
  const { queue, log } = setup({ reader: true });
  const [a, b] = [tab('A'), tab('B')];
  queue.enqueue(a, sql('big'));
  queue.enqueue(b, read('r1'));
  queue.enqueue(b, sql('w'));
  queue.enqueue(a, read('r2'));
  for (let i = 0; i < 20; i++) await settle();
  const slices = log.flatMap((l, i) => (l === 'slice' ? [i] : []));
  assert.equal(slices.length, 3);
  assert.ok(log.indexOf('R B:r1') < slices[2] && log.indexOf('R A:r2') < slices[2], 'reads ran between the slices');
  assert.ok(log.indexOf('B:w') > slices[2], 'the write waited for the copy');
  assert.equal(log[0], 'A:big');

  // Asked for during a transaction, it waits for the commit.
  log.length = 0;
  queue.enqueue(a, sql('BEGIN'));
  queue.enqueue(a, sql('big'));
  queue.enqueue(a, sql('COMMIT'));
  for (let i = 0; i < 20; i++) await settle();
  assert.deepEqual(log.slice(0, 5), ['A:BEGIN', 'A:big', 'A:COMMIT', 'idle', 'slice'], 'live queries re-run first');
});
