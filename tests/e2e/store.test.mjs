// resq-wasm/store's sharing, as a page meets it: queries that differ only
// in a parameter that binds differently (an ArrayBuffer's or a view's
// bytes, 0 and -0, a number and a bigint) are stores of their own, each
// showing its own rows; a store keeps the bytes it was made with. (The
// React and Vue bindings over the same store: frameworks.test.mjs.)

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { notInNode, start } from './harness.mjs';
import { withDb, dbName } from './util.mjs';

let h;
before(async () => (h = await start()));
after(async () => await h?.close());

/**
 * In-page helpers, sent as text: `settled(store, test?)` subscribes and
 * resolves with { rows, error, leave } at the first state that is not
 * loading (and passes `test(rows)`, if given); `table(db)` makes h, whose
 * rows are keyed by a BLOB.
 */
const helpers = () => ({
  settled(store, test = () => true) {
    return new Promise((resolve) => {
      const check = () => {
        const s = store.getSnapshot();
        if (s.loading || !(s.error || test(s.rows))) return;
        resolve({ rows: s.rows, error: s.error, leave });
      };
      const leave = store.subscribe(check);
      check();
    });
  },
  async table(db) {
    await db.execute('CREATE TABLE h(k BLOB PRIMARY KEY, v TEXT)');
    await db.execute("INSERT INTO h VALUES (x'010203', 'one'), (x'090909', 'nine'), (x'040506', 'four'), (x'070707', 'seven')");
  },
});

test('queries that differ only in an ArrayBuffer, a Uint8Array, 0 and -0, or a number and a bigint: a store each, with its own rows', async (t) => {
  const r = await withDb(
    h.page,
    dbName(t),
    async (db, { plain }, src) => {
      const { settled, table } = (0, eval)(`(${src})`)();
      const { queryStore } = await import('resq-wasm/store');
      await table(db);
      const bufferOf = (...b) => new Uint8Array(b).buffer;
      const BLOB = 'SELECT v FROM h WHERE k = ?';
      const TYPED = 'SELECT typeof(?1) AS t, quote(?1) AS q';
      const pairs = {
        arrayBuffer: [BLOB, [bufferOf(1, 2, 3)], [bufferOf(9, 9, 9)]],
        uint8Array: [BLOB, [new Uint8Array([4, 5, 6])], [new Uint8Array(bufferOf(0, 7, 7, 7, 0), 1, 3)]],
        zero: [TYPED, [0], [-0]],
        bigint: [TYPED, [2 ** 53], [2n ** 53n]],
      };
      const out = {};
      for (const [what, [sql, a, b]] of Object.entries(pairs)) {
        const [sa, sb] = [queryStore(db, sql, a), queryStore(db, sql, b)];
        const [ra, rb] = await Promise.all([settled(sa), settled(sb)]);
        ra.leave();
        rb.leave();
        out[what] = { shared: sa === sb, rows: [plain(ra.rows ?? ra.error.message), plain(rb.rows ?? rb.error.message)] };
      }
      return out;
    },
    { arg: helpers.toString() },
  );
  // How each number bound: its type, and the integers' values.
  const bound = ({ shared, rows }) => ({ shared, rows: rows.map(([{ t, q }]) => (t === 'integer' ? `${t} ${q}` : t)) });
  assert.deepEqual(
    { ...r, zero: bound(r.zero), bigint: bound(r.bigint) },
    {
      arrayBuffer: { shared: false, rows: [[{ v: 'one' }], [{ v: 'nine' }]] },
      uint8Array: { shared: false, rows: [[{ v: 'four' }], [{ v: 'seven' }]] },
      zero: { shared: false, rows: ['integer 0', 'real'] },
      bigint: { shared: false, rows: ['real', 'integer 9007199254740992'] },
    },
  );
});

test("a store keeps the bytes it was made with: changed bytes are another store with their rows, and the first keeps its bytes' rows", async (t) => {
  const r = await withDb(
    h.page,
    dbName(t),
    async (db, { plain }, src) => {
      const { settled, table } = (0, eval)(`(${src})`)();
      const { queryStore } = await import('resq-wasm/store');
      await table(db);
      const SQL = 'SELECT v FROM h WHERE k = ?';
      const bytes = new Uint8Array([1, 2, 3]);
      const first = queryStore(db, SQL, [bytes]);
      const one = await settled(first);
      bytes.set([9, 9, 9]);
      const changed = queryStore(db, SQL, [bytes]);
      const nine = await settled(changed);
      const found = queryStore(db, SQL, [new Uint8Array([1, 2, 3])]) === first;
      // A commit re-runs both, each with its own bytes.
      await db.execute("UPDATE h SET v = v || '!'");
      const [oneAfter, nineAfter] = await Promise.all([
        settled(first, (rows) => rows[0]?.v !== 'one'),
        settled(changed, (rows) => rows[0]?.v !== 'nine'),
      ]);
      // The first store's watch ends with its last subscriber, and starts again on the next: with its bytes still.
      for (const s of [one, oneAfter]) s.leave();
      await new Promise((resolve) => setTimeout(resolve, 0));
      const restarted = await settled(first);
      // The same with an ArrayBuffer.
      const buffer = new Uint8Array([4, 5, 6]).buffer;
      const four = queryStore(db, SQL, [buffer]);
      const fourRows = await settled(four);
      new Uint8Array(buffer).set([7, 7, 7]);
      const seven = queryStore(db, SQL, [buffer]);
      const sevenRows = await settled(seven);
      for (const s of [nine, nineAfter, restarted, fourRows, sevenRows]) s.leave();
      return {
        changedIsAnother: changed !== first,
        found,
        rows: [one, nine, oneAfter, nineAfter, restarted].map((s) => plain(s.rows)),
        buffer: { another: seven !== four, rows: [plain(fourRows.rows), plain(sevenRows.rows)] },
      };
    },
    { arg: helpers.toString() },
  );
  assert.equal(r.changedIsAnother, true, 'the changed bytes are another store');
  assert.equal(r.found, true, 'the first bytes, in a new array, find the first store');
  assert.deepEqual(r.rows, [[{ v: 'one' }], [{ v: 'nine' }], [{ v: 'one!' }], [{ v: 'nine!' }], [{ v: 'one!' }]]);
  assert.deepEqual(r.buffer, { another: true, rows: [[{ v: 'four!' }], [{ v: 'seven!' }]] });
});

test("a store reads through a session of its own: during its Database's open transaction it shows the last commit at once, then the commit", {
  skip: notInNode('sessions that read the last commit beside a writer need a stored database (WAL)'),
}, async (t) => {
  const r = await withDb(
    h.page,
    dbName(t),
    async (db, _, src) => {
      const { settled } = (0, eval)(`(${src})`)();
      const { queryStore } = await import('resq-wasm/store');
      await db.execute("CREATE TABLE t(v TEXT); INSERT INTO t VALUES ('committed')");
      let release;
      const gate = new Promise((r) => (release = r));
      let entered;
      const inside = new Promise((r) => (entered = r));
      const tx = db.transaction(async (tx) => {
        await tx.execute("INSERT INTO t VALUES ('uncommitted')");
        entered();
        await gate;
      });
      await inside;
      const store = queryStore(db, 'SELECT group_concat(v) AS v FROM t');
      const timeout = new Promise((r) => setTimeout(() => r({ rows: [{ v: 'still waiting after 3 s' }], leave() {} }), 3000));
      const during = await Promise.race([settled(store), timeout]);
      release();
      await tx;
      const after = await settled(store, (rows) => rows[0].v.includes('uncommitted'));
      during.leave();
      after.leave();
      return { during: during.rows[0].v, after: after.rows[0].v };
    },
    { arg: helpers.toString() },
  );
  assert.deepEqual(r, { during: 'committed', after: 'committed,uncommitted' });
});
