// The call ledger (src/js/ledger.ts) on its own: how a tab numbers its
// calls, what it sends to a worker and in which order, what it forgets
// once answered, and what it sends again when the worker it sent to goes.
// A worker here is a stand-in that keeps what it was sent and is answered,
// or dies, by the test; the browser tests (failover, tabs) drive the same
// rules through real tabs.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const { Ledger, MAX_LOSSES } = await load('src/js/ledger.ts');

/** A worker's client as the ledger sees it: it keeps each call it is sent until the test answers it. */
function worker() {
  const w = {
    sent: [],
    death: null,
    call(op, fields, transfer) {
      return new Promise((resolve, reject) => w.sent.push({ op, fields, transfer, resolve, reject }));
    },
    /** Its worker went: what it was sent rejects with its death, as client.ts's Client does. */
    die(ledger) {
      w.death = new Error('the worker died');
      for (const s of w.sent) s.reject(w.death);
      ledger.lost(w);
    },
  };
  return w;
}

/** Lets the answers given so far reach the ledger and the callers. */
const settle = () => new Promise((r) => setImmediate(r));

/** Records how each call ended. */
function track(promise) {
  const t = { state: 'waiting' };
  promise.then(
    (value) => Object.assign(t, { state: 'resolved', value }),
    (error) => Object.assign(t, { state: 'rejected', error }),
  );
  return t;
}

const sqlOf = (w) => w.sent.map((s) => s.fields.sql);

test('calls are numbered in the order they are made, and sent in that order only when flushed', () => {
  const ledger = new Ledger();
  const w = worker();
  ledger.add('execute', { sql: 'a' }, []);
  ledger.add('query', { sql: 'b' }, []);
  assert.equal(w.sent.length, 0, 'nothing goes before a flush');
  ledger.flush(w, false);
  ledger.add('execute', { sql: 'c' }, []);
  ledger.flush(w, false);
  assert.deepEqual(sqlOf(w), ['a', 'b', 'c'], 'a flush sends only the calls not sent yet');
  assert.deepEqual(
    w.sent.map((s) => [s.op, s.fields.seq]),
    [
      ['execute', 1],
      ['query', 2],
      ['execute', 3],
    ],
  );
  assert.ok(
    w.sent.every((s) => !('again' in s.fields)),
    'a call sent the first time is not marked as sent again',
  );
});

test('each call carries `below`, the lowest number still unanswered', async () => {
  const ledger = new Ledger();
  const w = worker();
  ledger.add('execute', { sql: 'a' }, []);
  ledger.add('execute', { sql: 'b' }, []);
  ledger.flush(w, true);
  assert.deepEqual(
    w.sent.map((s) => s.fields.below),
    [1, 1],
  );
  // The second is answered first: the first still waits, so `below` stays.
  w.sent[1].resolve('b done');
  await settle();
  ledger.add('execute', { sql: 'c' }, []);
  ledger.flush(w, true);
  assert.equal(w.sent[2].fields.below, 1);
  w.sent[0].resolve('a done');
  await settle();
  ledger.add('execute', { sql: 'd' }, []);
  ledger.flush(w, true);
  assert.equal(w.sent[3].fields.below, 3, 'once 1 and 2 are answered, the lowest waiting is 3');
});

test('an answer settles its call once and the call is forgotten; an error reply is an answer too', async () => {
  const ledger = new Ledger();
  const w = worker();
  const ok = track(ledger.add('execute', { sql: 'a' }, []));
  const refused = track(ledger.add('execute', { sql: 'b' }, []));
  ledger.flush(w, true);
  w.sent[0].resolve({ changes: 1 });
  const error = new Error('SQLITE_ERROR');
  w.sent[1].reject(error);
  await settle();
  assert.deepEqual(ok, { state: 'resolved', value: { changes: 1 } });
  assert.equal(refused.state, 'rejected');
  assert.equal(refused.error, error, 'the reply as the worker gave it');
  assert.equal(ledger.empty, true, 'both are forgotten');
  // Forgotten: when the worker goes now, nothing is sent again.
  w.die(ledger);
  const next = worker();
  ledger.flush(next, true);
  assert.equal(next.sent.length, 0);
});

test("the calls another tab's worker had unanswered go to the next worker, marked, in order, before the calls made since", async () => {
  const ledger = new Ledger();
  const first = worker();
  const a = track(ledger.add('execute', { sql: 'a' }, []));
  const b = track(ledger.add('query', { sql: 'b' }, []));
  const c = track(ledger.add('executeBatch', { sql: 'c' }, []));
  ledger.flush(first, true);
  first.sent[0].resolve('a done');
  await settle();
  first.die(ledger);
  // Made while there is no worker: it waits behind the ones sent again.
  const d = track(ledger.add('execute', { sql: 'd' }, []));
  await settle();
  assert.deepEqual(
    [a.state, b.state, c.state, d.state],
    ['resolved', 'waiting', 'waiting', 'waiting'],
    'no call fails because its worker went',
  );
  const next = worker();
  ledger.generation += 1;
  ledger.flush(next, true);
  assert.deepEqual(sqlOf(next), ['b', 'c', 'd']);
  assert.deepEqual(
    next.sent.map((s) => [s.fields.seq, s.fields.again === true]),
    [
      [2, true],
      [3, true],
      [4, false],
    ],
    'sent again under the same numbers, and marked so (the worker looks up their recorded answers)',
  );
  assert.ok(
    next.sent.every((s) => s.fields.below === 2),
    'the lowest unanswered is still 2',
  );
  for (const s of next.sent) s.resolve(`${s.fields.sql} done`);
  await settle();
  assert.deepEqual(
    [b, c, d].map((t) => t.value),
    ['b done', 'c done', 'd done'],
  );
  assert.equal(ledger.empty, true);
});

test("the calls this tab's own worker had reject with its death when it goes: they are not sent again", async () => {
  const ledger = new Ledger();
  const own = worker();
  const a = track(ledger.add('execute', { sql: 'a' }, []));
  ledger.flush(own, false);
  own.die(ledger);
  await settle();
  assert.equal(a.state, 'rejected');
  assert.equal(a.error, own.death);
  const next = worker();
  ledger.flush(next, false);
  assert.equal(next.sent.length, 0);
});

test('carry: the calls waiting on this tab’s own worker are sent again when it goes (a rekey that moves to a worker with ciphers)', async () => {
  const ledger = new Ledger();
  const own = worker();
  const a = track(ledger.add('execute', { sql: 'a' }, []));
  ledger.flush(own, false);
  ledger.carry(own);
  own.die(ledger);
  await settle();
  assert.equal(a.state, 'waiting');
  const next = worker();
  ledger.flush(next, false);
  assert.deepEqual(sqlOf(next), ['a']);
  assert.equal(next.sent[0].fields.again, true);
});

test('a call bound to a worker that went rejects with RESQ_WORKER_DIED and never reaches the next one; a COMMIT is looked up there', async () => {
  const ledger = new Ledger();
  const first = worker();
  ledger.generation = 1;
  assert.equal(ledger.stale(undefined), false, 'a call bound to no worker is never stale');
  assert.equal(ledger.stale(1), false);
  const inTx = track(ledger.add('execute', { sql: 'INSERT', tx: true }, [], 1));
  const commit = track(ledger.add('execute', { sql: 'COMMIT', txn: 'commit', tx: true }, [], 1));
  const free = track(ledger.add('execute', { sql: 'free' }, []));
  ledger.flush(first, true);
  first.die(ledger);
  await settle();
  assert.equal(inTx.state, 'rejected', 'its transaction is gone');
  assert.equal(inTx.error, first.death);
  assert.deepEqual([commit.state, free.state], ['waiting', 'waiting']);
  // Bound to worker 1, made while there is none: it waits, then rejects at its turn.
  const stream = track(ledger.add('blobStreamRead', { sql: 'read', session: 1 }, [], 1));
  const next = worker();
  ledger.generation = 2;
  assert.equal(ledger.stale(1), true);
  ledger.flush(next, true);
  await settle();
  assert.deepEqual(sqlOf(next), ['COMMIT', 'free'], 'the COMMIT goes, to be looked up; the read does not');
  assert.equal(next.sent[0].fields.again, true);
  assert.equal(stream.state, 'rejected');
  assert.equal(stream.error.code, 'RESQ_WORKER_DIED');
  // A COMMIT bound to an old worker, never sent before, is not looked up: it rejects.
  const late = track(ledger.add('execute', { sql: 'COMMIT', txn: 'commit' }, [], 1));
  ledger.flush(next, true);
  await settle();
  assert.equal(late.state, 'rejected');
  assert.equal(late.error.code, 'RESQ_WORKER_DIED');
});

test(`a call that sees ${MAX_LOSSES} workers go while it waits rejects with the last one's death`, async () => {
  const ledger = new Ledger();
  const a = track(ledger.add('execute', { sql: 'a' }, []));
  let w;
  for (let i = 1; i <= MAX_LOSSES; i++) {
    w = worker();
    ledger.flush(w, true);
    assert.deepEqual(sqlOf(w), ['a'], `worker ${i} gets it`);
    w.die(ledger);
    await settle();
    assert.equal(a.state, i < MAX_LOSSES ? 'waiting' : 'rejected', `after ${i} losses`);
  }
  assert.equal(a.error, w.death);
  assert.equal(ledger.empty, true);
});

test("a call sent to another tab's worker moves its buffers, and the ledger keeps a copy to send again", async () => {
  const ledger = new Ledger();
  const bytes = new Uint8Array([1, 2, 3]);
  ledger.add('execute', { sql: 'a', params: [bytes] }, [bytes.buffer]);
  const first = worker();
  ledger.flush(first, true);
  const sent = first.sent[0];
  assert.equal(sent.fields.params[0], bytes, "the caller's bytes go");
  assert.deepEqual(sent.transfer, [bytes.buffer], 'moved, not copied');
  // The transfer detaches what was sent; the ledger's copy is intact.
  structuredClone(sent.transfer, { transfer: sent.transfer });
  first.die(ledger);
  const next = worker();
  ledger.flush(next, true);
  const again = next.sent[0];
  assert.notEqual(again.fields.params[0], bytes);
  assert.deepEqual([...again.fields.params[0]], [1, 2, 3], 'sent again whole');
  assert.deepEqual(again.transfer, [again.fields.params[0].buffer], "the copy's own buffer moves this time");
});

test("a call to this tab's own worker moves the caller's buffers", () => {
  const ledger = new Ledger();
  const bytes = new Uint8Array([1, 2, 3]);
  ledger.add('execute', { sql: 'a', params: [bytes] }, [bytes.buffer]);
  const own = worker();
  ledger.flush(own, false);
  assert.deepEqual(own.sent[0].transfer, [bytes.buffer]);
  assert.equal(own.sent[0].fields.params[0], bytes);
});

test('waitingOn yields the other workers that calls still wait on', () => {
  const ledger = new Ledger();
  const old = worker();
  const current = worker();
  ledger.add('execute', { sql: 'a' }, []);
  ledger.flush(old, true);
  ledger.add('execute', { sql: 'b' }, []);
  ledger.flush(current, true);
  assert.deepEqual([...ledger.waitingOn(current)], [old]);
  assert.deepEqual([...ledger.waitingOn(worker())], [old, current]);
});

test('rejectAll: every call still waiting rejects with the reason, and none is left', async () => {
  const ledger = new Ledger();
  const w = worker();
  const a = track(ledger.add('execute', { sql: 'a' }, []));
  ledger.flush(w, true);
  const b = track(ledger.add('execute', { sql: 'b' }, []));
  const closed = new Error('closed');
  ledger.rejectAll(closed);
  await settle();
  assert.deepEqual([a.error, b.error], [closed, closed]);
  assert.equal(ledger.empty, true);
});
