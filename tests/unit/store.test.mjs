// The store's bookkeeping (src/js/store.ts): which calls share a store, and
// what each store asks its database to watch. The database here is a stand-in
// that records the watches it is asked for; that the rows are right is proven
// with real SQLite in real browsers (tests/e2e/store.test.mjs and
// tests/e2e/frameworks.test.mjs).

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { load } from './load.mjs';

let queryStore;
before(async () => ({ queryStore } = await load('src/js/store.ts')));

/**
 * A stand-in for a Database: records each watch (its SQL, parameters and
 * form) and whether it has ended. A store watches through a session of its
 * own (the method keyed by Symbol.for('resq-wasm.ownSession')), never
 * through the app's `watch`.
 */
function fakeDb() {
  const watches = [];
  const own = (sql, params, bytes, deliver) => {
    const w = { sql, params, bytes, deliver, ended: false };
    watches.push(w);
    const sub = () => (w.ended = true);
    sub.ready = Promise.resolve();
    return sub;
  };
  const app = () => {
    throw new Error("a store watched through the app's own session");
  };
  return { watches, watch: app, watchBytes: app, [Symbol.for('resq-wasm.ownSession')]: own };
}

const SQL = 'SELECT v FROM h WHERE k = ?';
const bufferOf = (...bytes) => new Uint8Array(bytes).buffer;
const tick = () => new Promise((r) => setTimeout(r, 0));

test('the same query is one store; queries that differ only in bytes or a type are stores of their own', () => {
  const db = fakeDb();
  assert.equal(queryStore(db, SQL, [bufferOf(1, 2, 3)]), queryStore(db, SQL, [new Uint8Array([1, 2, 3])]), 'the same bytes');
  assert.equal(queryStore(db, SQL, { k: 1, j: 2n }), queryStore(db, SQL, { j: 2n, k: 1 }), 'the same names, in another order');
  const pairs = [
    ['an ArrayBuffer', [bufferOf(1, 2, 3)], [bufferOf(9, 9, 9)]],
    ['a Uint8Array', [new Uint8Array([1, 2])], [new Uint8Array([3, 4])]],
    ['0 and -0', [0], [-0]],
    ['a number and a bigint', [1], [1n]],
    ['null and undefined', [null], [undefined]],
  ];
  for (const [what, a, b] of pairs) assert.notEqual(queryStore(db, SQL, a), queryStore(db, SQL, b), what);
  assert.notEqual(queryStore(db, SQL, [1]), queryStore(db, SQL, [1], { bytes: true }), 'rows and JSON bytes');
  assert.notEqual(queryStore(db, SQL, [1]), queryStore(fakeDb(), SQL, [1]), 'another database');
});

test('each store watches its own parameters: two stores differing in bytes, two watches', () => {
  const db = fakeDb();
  const a = queryStore(db, SQL, [bufferOf(1, 2, 3)]);
  const b = queryStore(db, SQL, [bufferOf(9, 9, 9)]);
  const c = queryStore(db, SQL, [-0], { bytes: true });
  const leave = [a, b, c, a].map((s) => s.subscribe(() => {}));
  assert.equal(db.watches.length, 3, 'one watch per store, however many subscribers');
  assert.deepEqual(
    db.watches.map((w) => [w.sql, w.params, w.bytes]),
    [
      [SQL, [new Uint8Array([1, 2, 3])], false],
      [SQL, [new Uint8Array([9, 9, 9])], false],
      [SQL, [-0], true],
    ],
  );
  assert.ok(Object.is(db.watches[2].params[0], -0));
  for (const l of leave) l();
});

test('a store queries with the bytes it was made with; changed bytes are another store', async () => {
  const db = fakeDb();
  const bytes = new Uint8Array([1, 2, 3]);
  const first = queryStore(db, SQL, [bytes]);
  bytes.set([9, 9, 9]);
  let leave = first.subscribe(() => {});
  assert.deepEqual(db.watches[0].params, [new Uint8Array([1, 2, 3])], 'the contents it was made with, not the changed ones');
  const changed = queryStore(db, SQL, [bytes]);
  assert.notEqual(changed, first, 'the changed contents are another query');
  assert.equal(queryStore(db, SQL, [bufferOf(1, 2, 3)]), first, 'and the first contents still find the first store');
  // Its watch ended (a microtask after the last subscriber left) and starts again: with the first contents still.
  leave();
  await tick();
  assert.ok(db.watches[0].ended);
  leave = first.subscribe(() => {});
  assert.equal(db.watches.length, 2);
  assert.deepEqual(db.watches[1].params, [new Uint8Array([1, 2, 3])]);
  leave();
});

test('a store delivers its own watch’s rows, and ends its watch a microtask after its last subscriber leaves', async () => {
  const db = fakeDb();
  const a = queryStore(db, SQL, [0]);
  const b = queryStore(db, SQL, [-0]);
  const leaveA = a.subscribe(() => {});
  const leaveB = b.subscribe(() => {});
  assert.equal(a.getSnapshot().loading, true);
  db.watches[0].deliver([{ v: 'integer' }]);
  db.watches[1].deliver([{ v: 'real' }]);
  assert.deepEqual(a.getSnapshot(), { rows: [{ v: 'integer' }], error: undefined, loading: false });
  assert.deepEqual(b.getSnapshot(), { rows: [{ v: 'real' }], error: undefined, loading: false });
  leaveA();
  const again = a.subscribe(() => {}); // back before the microtask: the watch stays
  await tick();
  assert.equal(db.watches[0].ended, false);
  assert.equal(db.watches.length, 2);
  again();
  leaveB();
  await tick();
  assert.ok(db.watches.every((w) => w.ended));
  assert.notEqual(queryStore(db, SQL, [0]), a, 'an ended store is out of the map: the next call makes a new one');
});
