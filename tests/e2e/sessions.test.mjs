// Sessions: each `open()` of a name is a session of its own on the one
// database. A session's read never waits for another session's write in
// progress: it answers from the last commit, beside the write (a reader
// connection under WAL), and never sees a part of a transaction. A
// session's own calls complete in the order it made them, so a read after
// its own write sees that write. Writes from every session still run one
// at a time.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

// Every test here opens a stored database (OPFS, or IndexedDB where there
// is none): memory databases have one connection, and their reads wait
// for the writer.

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

test('a read from another session during a streamed 64 MB INSERT answers before it ends, from the last commit; one after it sees the new row', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open }, { name }) => {
      const writer = await open(name);
      const gallery = await open(name);
      await writer.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      await writer.execute("INSERT INTO media(name, data) VALUES ('thumb', x'01')");
      const order = [];
      const file = new File([new Uint8Array(64 << 20).fill(7)], 'clip.bin');
      const insert = writer.execute("INSERT INTO media(name, data) VALUES ('clip', ?)", [file]).then(() => order.push('insert'));
      const during = await gallery.query('SELECT group_concat(name) AS names FROM media');
      order.push('read');
      await insert;
      const afterCommit = await gallery.query('SELECT group_concat(name) AS names, max(length(data)) AS size FROM media');
      // The same session: its read after its own write sees it.
      await writer.execute("INSERT INTO media(name, data) VALUES ('own', x'02')");
      const own = await writer.query("SELECT count(*) AS n FROM media WHERE name = 'own'");
      await gallery.close();
      await writer.close();
      return { order, during: during[0].names, afterCommit: afterCommit[0], own: own[0].n };
    },
    { name: dbName(t) },
  );
  assert.deepEqual(got.order, ['read', 'insert'], 'the read answered while the INSERT ran');
  assert.equal(got.during, 'thumb', 'it saw the last commit, not the row being written');
  assert.deepEqual(got.afterCommit, { names: 'thumb,clip', size: 64 << 20 });
  assert.equal(got.own, 1);
});

test("a new database written only by a later session's Files still reads beside its next write", async (t) => {
  const got = await inPage(
    h.page,
    async ({ open }, { name }) => {
      // The gallery opens first, so the worker is its tab's; every write is
      // another session's, each run in a savepoint with its record (its
      // exactly-once), and no statement runs outside one on the writer.
      const gallery = await open(name);
      const writer = await open(name);
      await writer.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
      await writer.execute('INSERT INTO media(data) VALUES (?)', [new File([new Uint8Array(8 << 20).fill(1)], 'a.bin')]);
      const order = [];
      const file = new File([new Uint8Array(64 << 20).fill(7)], 'clip.bin');
      const insert = writer.execute('INSERT INTO media(data) VALUES (?)', [file]).then(() => order.push('insert'));
      const during = await gallery.query('SELECT count(*) AS n FROM media');
      order.push('read');
      await insert;
      await writer.close();
      await gallery.close();
      return { order, during: during[0].n };
    },
    { name: dbName(t) },
  );
  // A new database moves to WAL (and gains readers) at its first statement
  // after its first commit, one begun in a savepoint included.
  assert.deepEqual(got.order, ['read', 'insert'], 'the read answered while the INSERT ran');
  assert.equal(got.during, 1, 'it saw the last commit');
});

test("while one session's transaction is open, another reads the last commit; it sees the transaction once it commits", async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, outcome }, { name }) => {
      // A transaction that keeps others waiting for 3 s would be rolled back.
      const writer = await open(name, { transactionTimeout: 3000 });
      const gallery = await open(name);
      await writer.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
      await writer.execute("INSERT INTO t(v) VALUES ('old')");
      let inserted;
      const written = new Promise((r) => (inserted = r));
      let release;
      const gate = new Promise((r) => (release = r));
      let inside;
      const tx = outcome(
        writer.transaction(async (tx) => {
          await tx.execute("INSERT INTO t(v) VALUES ('new')");
          inside = (await tx.query('SELECT group_concat(v) AS v FROM t'))[0].v;
          inserted();
          await gate;
        }),
      );
      await written;
      // Whichever comes first: the other session's answer, or the end of
      // the transaction (its timeout rolls it back if the read waits for it).
      const first = await Promise.race([
        gallery.query('SELECT group_concat(v) AS v FROM t').then((rows) => ({ read: rows[0].v })),
        tx.then((o) => ({ transactionEnded: o.ok ? 'committed' : o.error.code })),
      ]);
      release();
      const committed = await tx;
      const afterCommit = (await gallery.query('SELECT group_concat(v) AS v FROM t'))[0].v;
      await gallery.close();
      await writer.close();
      return { inside, first, committed: committed.ok, afterCommit };
    },
    { name: dbName(t) },
  );
  assert.equal(got.inside, 'old,new', 'the transaction sees its own write');
  assert.deepEqual(got.first, { read: 'old' }, 'the other session answered from the last commit while the transaction was open');
  assert.equal(got.committed, true);
  assert.equal(got.afterCommit, 'old,new');
});

test('a write through query() from another session still runs on the writer, after the write in progress', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open }, { name }) => {
      const writer = await open(name);
      const other = await open(name);
      await writer.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
      const order = [];
      const file = new File([new Uint8Array(16 << 20).fill(1)], 'a.bin');
      const insert = writer.execute('INSERT INTO t(v) VALUES (?)', [file]).then(() => order.push('file'));
      const returned = await other.query("INSERT INTO t(v) VALUES ('x') RETURNING id");
      order.push('returning');
      await insert;
      const rows = await other.query('SELECT id, typeof(v) AS type FROM t ORDER BY id');
      await other.close();
      await writer.close();
      return { order, returned, rows };
    },
    { name: dbName(t) },
  );
  assert.deepEqual(got.order, ['file', 'returning'], 'writes from two sessions still run one at a time');
  assert.deepEqual(got.returned, [{ id: 2 }]);
  assert.deepEqual(got.rows, [
    { id: 1, type: 'blob' },
    { id: 2, type: 'text' },
  ]);
});

test("a watch hears of a commit, and a watch begun while another session's transaction holds the writer answers: neither waits for it", async (t) => {
  const got = await inPage(
    h.page,
    async ({ open }, { name }) => {
      // The transaction below waits for the watches: its session's
      // transactionTimeout is long enough for a slow, loaded machine.
      const [first, app, other, gallery] = [
        await open(name),
        await open(name),
        await open(name, { transactionTimeout: 30_000 }),
        await open(name),
      ];
      await app.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      const order = [];
      let heard;
      const seen = new Promise((r) => (heard = r));
      const stop = gallery.watch('SELECT group_concat(name) AS names FROM media', [], (rows) => {
        if (rows[0].names?.includes('note') && !order.some((o) => o.startsWith('watch'))) {
          order.push(`watch saw ${rows[0].names}`);
          heard();
        }
      });
      await new Promise((r) => setTimeout(r, 100)); // its first run
      await first.execute("INSERT INTO media(name, data) VALUES ('first', zeroblob(16 << 20))");
      await app.execute("INSERT INTO media(name) VALUES ('note')");
      // Another session's transaction then holds the writer: it stores a
      // 64 MB File and stays open until both watches have answered (or 20 s
      // have passed, so a watch that waits for it shows in the order rather
      // than as a hang).
      let release;
      const gate = new Promise((r) => (release = r));
      let inside;
      const began = new Promise((r) => (inside = r));
      const file = new File([new Uint8Array(64 << 20).fill(7)], 'clip.bin');
      const clip = other
        .transaction(async (tx) => {
          await tx.execute("INSERT INTO media(name, data) VALUES ('clip', ?)", [file]);
          inside();
          await gate;
        })
        .then(() => order.push('the File INSERT'));
      await began;
      // A watch begun while the transaction holds the writer answers too.
      let answer;
      const answered = new Promise((r) => (answer = r));
      const stop2 = gallery.watch('SELECT count(*) AS n FROM media', [], () => {
        order.push('a new watch answered');
        answer();
      });
      await Promise.race([Promise.all([seen, answered]), new Promise((r) => setTimeout(r, 20_000))]);
      release();
      await Promise.all([clip, seen, answered]);
      stop();
      stop2();
      for (const db of [first, app, other, gallery]) await db.close();
      return order;
    },
    { name: dbName(t) },
  );
  assert.deepEqual(got.slice(-1), ['the File INSERT']);
  assert.deepEqual(
    got.slice(0, 2).sort(),
    ['a new watch answered', 'watch saw first,note'],
    'both answered while the INSERT ran; the first heard of the note, not yet of the clip',
  );
});

test("another session's read answers while a 64 MB staged value is written into its row, and while a 32 MB chunk of a stream is read", async (t) => {
  // That the read overtook the long call says something only if the worker
  // had both at once: the probe worker's trace says when each request
  // reached it and each reply left. On a loaded machine the long call can
  // end before the read arrives; then it is tried again.
  const hp = await start({ probe: {} });
  t.after(() => hp.close());
  const got = await inPage(
    hp.page,
    async ({ open, probe }, { name }) => {
      const MB = 1 << 20;
      const writer = await open(name);
      const gallery = await open(name);
      await writer.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
      await writer.execute("INSERT INTO media(name, data) VALUES ('thumb', x'01')");
      // One try: `begin` starts the long call (`op`) and gives its promise;
      // then the gallery reads `sql`.
      const attempt = async (op, begin, sql) => {
        await probe(name, 'trace', true);
        const order = [];
        const { call } = await begin();
        const long = call.then((value) => {
          order.push(op);
          return value;
        });
        const during = await gallery.query(sql);
        order.push('read');
        const value = await long;
        const trace = await probe(name, 'trace', false);
        const id = (what) => trace.findLast(([kind, o]) => kind === 'in' && o === what)[2];
        const arrived = (n) => trace.findIndex(([kind, , i]) => kind === 'in' && i === n);
        const left = (n) => trace.findIndex(([kind, i]) => kind === 'out' && i === n);
        const [longId, readId] = [id(op), id('query')];
        return {
          order,
          during: during[0].names,
          value,
          overlapped: arrived(readId) < left(longId),
          readFirst: left(readId) < left(longId),
        };
      };
      const tries = async (attempt1, undo) => {
        const all = [await attempt1()];
        while (!all.at(-1).overlapped && all.length < 5) {
          await undo();
          all.push(await attempt1());
        }
        return all;
      };
      // A staged value is read from temp space synchronously: only the
      // write's steps give the thread to the read.
      const staged = await tries(
        async () => {
          const value = await writer.stageBlob();
          for (let i = 0; i < 16; i++) await value.append(new Uint8Array(4 * MB).fill(i));
          const begin = async () => ({ call: writer.execute("INSERT INTO media(name, data) VALUES ('clip', ?)", [value]) });
          return attempt('execute', begin, 'SELECT group_concat(name) AS names FROM media');
        },
        () => writer.execute("DELETE FROM media WHERE name = 'clip'"),
      );
      // A stream of two 32 MB chunks: once the first is here, the second
      // is asked for, and the read is made.
      const [{ id }] = await writer.query("SELECT id FROM media WHERE name = 'clip'");
      const streamed = await tries(
        async () => {
          let it;
          const begin = async () => {
            it = writer.blobStream('media', 'data', id, { chunkSize: 32 * MB })[Symbol.asyncIterator]();
            const first = (await it.next()).value;
            return { call: it.next().then((second) => [first, second.value]) };
          };
          const one = await attempt('blobStreamRead', begin, "SELECT group_concat(name) AS names FROM media WHERE name = 'thumb'");
          await it.return?.();
          const bytes = new Uint8Array(await new Blob(one.value).arrayBuffer());
          const right = bytes.length === 64 * MB && bytes.every((b, i) => b === Math.floor(i / (4 * MB)));
          return { ...one, value: undefined, right };
        },
        () => {},
      );
      await gallery.close();
      await writer.close();
      return { staged: staged.map((one) => ({ ...one, value: undefined })), streamed };
    },
    { name: dbName(t) },
  );
  t.diagnostic(`tries until the worker had both calls: ${got.staged.length} (staged), ${got.streamed.length} (stream)`);
  for (const [what, all, op] of [
    ['the staged value was written', got.staged, 'execute'],
    ["the stream's chunk was read", got.streamed, 'blobStreamRead'],
  ]) {
    const one = all.at(-1);
    assert.ok(one.overlapped, `in ${all.length} tries, the worker never had the read while ${what}`);
    assert.deepEqual(one.order, ['read', op], `the read answered while ${what}`);
    assert.ok(one.readFirst, "the read's reply left the worker before the long call's");
    assert.equal(one.during, 'thumb', 'the read saw the last commit');
  }
  assert.ok(
    got.streamed.every((one) => one.right),
    "the stream's chunks are the value, byte for byte",
  );
});

test("another session's read answers during a long executeBatch and sees none of it; a set failing late undoes every step", async (t) => {
  const got = await inPage(
    h.page,
    async ({ open }, { name }) => {
      const writer = await open(name);
      const gallery = await open(name);
      await writer.execute('CREATE TABLE rows(n INTEGER PRIMARY KEY, s TEXT)');
      await writer.execute("INSERT INTO rows VALUES (-1, 'first')");
      const sets = Array.from({ length: 200000 }, (_, i) => [i, `row ${i}`]);
      const order = [];
      // Encoded sets (numbers and strings), then sets the page does not
      // encode (a Blob in the last), which go as values.
      const counts = [];
      for (const batch of [sets, [...sets.map(([n, s]) => [n + 200000, s]), [400000, new Blob(['x'])]]]) {
        const run = writer.executeBatch('INSERT INTO rows(n, s) VALUES (?, ?)', batch).then(
          () => order.push('batch'),
          (e) => order.push(`batch failed: ${e.code}`),
        );
        const during = await gallery.query('SELECT count(*) AS c FROM rows');
        order.push('read');
        await run;
        counts.push(during[0].c, (await gallery.query('SELECT count(*) AS c FROM rows'))[0].c);
      }
      // A set late in a long batch fails: the steps before it are undone.
      const late = [...sets.slice(0, 150000).map(([n, s]) => [n + 500000, s]), [0, 'taken'], [900000, 'after']];
      const error = await writer.executeBatch('INSERT INTO rows(n, s) VALUES (?, ?)', late).catch((e) => e.code);
      const afterFailure = (await writer.query('SELECT count(*) AS c FROM rows'))[0].c;
      await gallery.close();
      await writer.close();
      return { order, counts, error, afterFailure };
    },
    { name: dbName(t) },
  );
  assert.deepEqual(got.order, ['read', 'batch', 'read', 'batch'], 'each read answered while its batch ran');
  assert.deepEqual(got.counts, [1, 200001, 200001, 400002], 'a read saw the last commit during each batch, and the batch after it');
  assert.equal(got.error, 'SQLITE_CONSTRAINT_PRIMARYKEY');
  assert.equal(got.afterFailure, 400002, 'none of the failed batch stayed');
});
