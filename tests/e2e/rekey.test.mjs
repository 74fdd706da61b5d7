// rekey() through the packed package: a new key, a key to none and none to
// a key, each atomic; the tab that rekeys carries on, and every other tab
// that has the database open is told (RESQ_BAD_KEY) and opens it again
// with the new key. A rekey crashed midway is rekey-kill.test.mjs.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { MARKER, rawScan, workerScan } from './plaintext.mjs';

// OPFS for every test here unless it says `opfs: false` (see engines.mjs).
const test = opfsTests({ key: 'a passphrase' });

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

test('rekey changes the key of an encrypted database, passphrase or raw', { opfs: false }, async (t) => {
  const name = dbName(t);
  const got = await inPage(
    h.page,
    async ({ open, outcome }, { name, marker, scan }) => {
      const rawScan = (0, eval)(`(${scan})`);
      const code = (o) => (o.ok ? 'ok' : o.error.code);
      const rows = async (options) => {
        const db = await open(name, options);
        try {
          return (await db.query('SELECT s FROM t')).map((r) => r.s);
        } finally {
          await db.close();
        }
      };
      let db = await open(name, { key: 'first' });
      await db.execute('CREATE TABLE t(s)');
      await db.execute('INSERT INTO t VALUES (?)', [`${marker} one`]);
      await db.rekey('second');
      await db.execute('INSERT INTO t VALUES (?)', [`${marker} two`]);
      const out = {};
      out.noArgument = await outcome(db.rekey());
      out.badShape = await outcome(db.rekey(new Uint8Array(5)));
      await db.close();
      out.oldKey = code(await outcome(rows({ key: 'first' })));
      out.newKey = await rows({ key: 'second' });
      out.encrypted = (await rawScan(name, marker)).hits;
      // To raw bytes, and back to a passphrase: each opens it after.
      const raw = new Uint8Array(32).fill(42);
      db = await open(name, { key: 'second' });
      await db.rekey(raw);
      await db.close();
      out.rawRows = await rows({ key: raw });
      out.passAgainOld = code(await outcome(rows({ key: 'second' })));
      db = await open(name, { key: raw });
      await db.rekey('third');
      await db.close();
      out.thirdRows = await rows({ key: 'third' });
      out.stillEncrypted = (await rawScan(name, marker)).hits;
      return out;
    },
    { name, marker: MARKER, scan: rawScan.toString() },
  );
  assert.equal(got.noArgument.error?.code, 'RESQ_BAD_PARAM', JSON.stringify(got.noArgument));
  assert.equal(got.badShape.error?.code, 'RESQ_BAD_PARAM', JSON.stringify(got.badShape));
  assert.equal(got.oldKey, 'RESQ_BAD_KEY', 'the old key no longer opens it');
  assert.deepEqual(got.newKey, [`${MARKER} one`, `${MARKER} two`]);
  assert.equal(got.encrypted, 0, 'encrypted under the new key: no plaintext on disk');
  assert.deepEqual(got.rawRows, got.newKey, 'rekeyed to raw bytes');
  assert.equal(got.passAgainOld, 'RESQ_BAD_KEY');
  assert.deepEqual(got.thirdRows, got.newKey, 'and back to a passphrase');
  assert.equal(got.stillEncrypted, 0);
});

test('after rekey in one tab, the other tab gets RESQ_BAD_KEY and opens it again with the new key', { opfs: false }, async (t) => {
  const name = dbName(t);
  const other = await h.newPage();
  try {
    await inPage(
      h.page,
      async ({ open }, { name }) => {
        globalThis.leader = await open(name, { key: 'old' });
        await globalThis.leader.execute('CREATE TABLE t(x)');
      },
      { name },
    );
    await inPage(
      other,
      async ({ open }, { name }) => {
        globalThis.follower = await open(name, { key: 'old' });
        await globalThis.follower.execute("INSERT INTO t VALUES ('before')");
      },
      { name },
    );
    await inPage(h.page, async () => globalThis.leader.rekey('new'));
    const got = await inPage(
      other,
      async ({ open, outcome }, { name }) => {
        const after = await outcome(globalThis.follower.execute("INSERT INTO t VALUES ('after, old key')"));
        const db = await open(name, { key: 'new' });
        const rows = (await db.query('SELECT x FROM t')).map((r) => r.x);
        await db.close();
        return { after, rows };
      },
      { name },
    );
    await inPage(h.page, async () => globalThis.leader.close());
    assert.equal(got.after.ok, false);
    assert.equal(got.after.error.code, 'RESQ_BAD_KEY', got.after.error.message);
    assert.deepEqual(got.rows, ['before']);
  } finally {
    await other.close();
  }
});

test("after another tab's rekey, close() resolves, and so does a second one; a call after them is RESQ_CLOSED", async (t) => {
  const other = await h.newPage();
  try {
    // The tab told is the one that leads (a following tab rekeys), then
    // one that follows (the leading tab rekeys).
    for (const told of ['leader', 'follower']) {
      const name = dbName(t, `${told}.db`);
      const [rekeying, stale] = told === 'leader' ? [other, h.page] : [h.page, other];
      // h.page leads (it opens first), `other` follows.
      for (const page of [h.page, other]) {
        await inPage(
          page,
          async ({ open }, { name }) => {
            window.resqDb = await open(name, { key: 'old' });
            await window.resqDb.execute('CREATE TABLE IF NOT EXISTS t(x)');
          },
          { name },
        );
      }
      await inPage(rekeying, async () => window.resqDb.rekey('new'));
      const got = await inPage(stale, async ({ outcome }) => {
        const code = (o) => (o.ok ? 'ok' : o.error.code);
        const db = window.resqDb;
        const call = code(await outcome(db.query('SELECT 1')));
        const first = code(await outcome(db.close()));
        const second = code(await outcome(db.close()));
        const after = code(await outcome(db.query('SELECT 1')));
        const third = code(await outcome(db.close()));
        return { call, first, second, after, third };
      });
      const carriesOn = await inPage(rekeying, async ({ outcome }) => {
        const o = await outcome(window.resqDb.query('SELECT count(*) AS n FROM t'));
        await window.resqDb.close();
        return o.ok ? 'ok' : o.error.code;
      });
      assert.deepEqual(
        got,
        { call: 'RESQ_BAD_KEY', first: 'ok', second: 'ok', after: 'RESQ_CLOSED', third: 'ok' },
        `the ${told}: its key went stale, and its close() resolves, any number of times`,
      );
      assert.equal(carriesOn, 'ok', `the tab that rekeyed carries on (the ${told} was told)`);
    }
  } finally {
    await other.close();
  }
});

test('rekey(null) decrypts: the file is plain after, opens without a key, and the other tab gets RESQ_BAD_KEY', async (t) => {
  const name = dbName(t);
  const other = await h.newPage();
  try {
    const key = new Uint8Array(32).fill(9);
    await inPage(
      h.page,
      async ({ open }, { name, key, marker }) => {
        const db = await open(name, { key: new Uint8Array(key) });
        await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT, b BLOB)');
        await db.execute('INSERT INTO t(s, b) VALUES (?, ?)', [`${marker} one`, new Uint8Array(5 << 20).fill(1)]);
        window.resqDb = db;
      },
      { name, key: [...key], marker: MARKER },
    );
    // The other tab follows, with the key.
    await inPage(
      other,
      async ({ open }, { name, key }) => {
        window.resqDb = await open(name, { key: new Uint8Array(key) });
        await window.resqDb.query('SELECT 1');
      },
      { name, key: [...key] },
    );
    const got = await inPage(
      h.page,
      async ({ open, outcome }, { name, key, marker, scan, inWorker }) => {
        const rawScan = (0, eval)(`(${scan})`);
        const workerScan = (0, eval)(`(${inWorker})`);
        const code = (o) => (o.ok ? 'ok' : o.error.code);
        const db = window.resqDb;
        const before = (await rawScan(name, marker)).hits;
        await db.rekey(null);
        // This tab carries on, now on a plain database.
        await db.execute('INSERT INTO t(s) VALUES (?)', [`${marker} two`]);
        const again = code(await outcome(db.rekey(null)));
        const rows = (await db.query('SELECT s, length(b) AS n FROM t ORDER BY id')).map((r) => `${r.s}:${r.n}`);
        await db.close();
        const after = (await rawScan(name, marker)).hits;
        const afterInWorker = (await workerScan(name, marker)).hits;
        const withKey = code(await outcome(open(name, { key: new Uint8Array(key) })));
        const plain = await open(name);
        const plainRows = (await plain.query('SELECT count(*) AS n FROM t'))[0].n;
        const [{ integrity_check: ok }] = await plain.query('PRAGMA integrity_check');
        await plain.close();
        return { before, after, afterInWorker, again, rows, withKey, plainRows, ok };
      },
      { name, key: [...key], marker: MARKER, scan: rawScan.toString(), inWorker: workerScan.toString() },
    );
    const otherCall = await inPage(other, async ({ outcome }) => {
      const o = await outcome(window.resqDb.query('SELECT count(*) FROM t'));
      return o.ok ? 'ok' : o.error.code;
    });
    assert.equal(got.before, 0, 'encrypted before');
    assert.ok(got.after >= 2, `plain after: the markers are readable in the file (${got.after})`);
    assert.equal(got.afterInWorker, got.after, 'a worker of the test, reading with sync access handles, finds them too');
    assert.equal(got.again, 'ok', 'rekey(null) of a plain database leaves it plain');
    assert.deepEqual(got.rows, [`${MARKER} one:${5 << 20}`, `${MARKER} two:null`]);
    assert.equal(got.withKey, 'RESQ_BAD_KEY', 'a key for the now plain file');
    assert.equal(got.plainRows, 2);
    assert.equal(got.ok, 'ok');
    assert.equal(otherCall, 'RESQ_BAD_KEY', 'the other tab, which held the key, is told');
  } finally {
    await other.close();
  }
});

test('rekey(key) encrypts a plain database from the tab that leads, and the other tab gets RESQ_BAD_KEY; from a following tab it is refused', async (t) => {
  const other = await h.newPage();
  try {
    for (const caller of ['leader']) {
      const name = dbName(t, `${caller}.db`);
      const [rekeying, told] = caller === 'leader' ? [h.page, other] : [other, h.page];
      // h.page leads (it opens first), `other` follows; both plain.
      for (const page of [h.page, other]) {
        await inPage(
          page,
          async ({ open }, { name, marker }) => {
            window.resqDb = await open(name);
            await window.resqDb.execute('CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, s TEXT, b BLOB)');
            await window.resqDb.execute('INSERT INTO t(s, b) VALUES (?, ?)', [`${marker} before`, new Uint8Array(5 << 20).fill(2)]);
          },
          { name, marker: MARKER },
        );
      }
      const got = await inPage(
        rekeying,
        async ({ outcome }, { name, marker, scan }) => {
          const rawScan = (0, eval)(`(${scan})`);
          const db = window.resqDb;
          const before = (await rawScan(name, marker)).hits;
          // A call made while the rekey runs, after it: it runs once, on the encrypted database.
          const [rekeyed, inserted] = await Promise.all([
            outcome(db.rekey('new key')),
            outcome(db.execute('INSERT INTO t(s) VALUES (?)', [`${marker} after`])),
          ]);
          const rows = (await db.query('SELECT s FROM t ORDER BY id')).map((r) => r.s);
          await db.close();
          const after = (await rawScan(name, marker)).hits;
          return {
            before,
            rekeyed: rekeyed.ok ? 'ok' : rekeyed.error.code,
            inserted: inserted.ok ? 'ok' : inserted.error.code,
            rows,
            after,
          };
        },
        { name, marker: MARKER, scan: rawScan.toString() },
      );
      const toldCall = await inPage(told, async ({ outcome }) => {
        const o = await outcome(window.resqDb.query('SELECT count(*) FROM t'));
        await window.resqDb.close().catch(() => {});
        return o.ok ? 'ok' : o.error.code;
      });
      const reopened = await inPage(
        h.page,
        async ({ open, outcome }, { name }) => {
          const code = (o) => (o.ok ? 'ok' : o.error.code);
          const noKey = code(await outcome(open(name)));
          const db = await open(name, { key: 'new key' });
          const n = (await db.query('SELECT count(*) AS n FROM t'))[0].n;
          const [{ integrity_check: ok }] = await db.query('PRAGMA integrity_check');
          await db.close();
          return { noKey, n, ok };
        },
        { name },
      );
      assert.ok(got.before >= 2, `${caller}: plain before (${got.before} markers in the file)`);
      assert.equal(got.rekeyed, 'ok', caller);
      assert.equal(got.inserted, 'ok', `${caller}: the call made during the rekey`);
      assert.deepEqual(got.rows, [`${MARKER} before`, `${MARKER} before`, `${MARKER} after`], `${caller}: every row once`);
      assert.equal(got.after, 0, `${caller}: encrypted after, nothing readable in the file`);
      assert.equal(toldCall, 'RESQ_BAD_KEY', `${caller}: the other tab is told`);
      assert.deepEqual(reopened, { noKey: 'RESQ_BAD_KEY', n: 3, ok: 'ok' }, caller);
    }
  } finally {
    await other.close();
  }
});

test('rekey(key) of a plain database from a following tab is RESQ_UNSUPPORTED, and nothing changes', { opfs: false }, async (t) => {
  const name = dbName(t);
  const other = await h.newPage();
  try {
    await inPage(
      h.page,
      async ({ open }, { name }) => {
        window.resqDb = await open(name);
        await window.resqDb.execute('CREATE TABLE t(s)');
        await window.resqDb.execute("INSERT INTO t VALUES ('plain')");
      },
      { name },
    );
    const got = await inPage(
      other,
      async ({ open, outcome }, { name }) => {
        const db = await open(name);
        const o = await outcome(db.rekey('k'));
        const rows = (await db.query('SELECT s FROM t')).map((r) => r.s);
        await db.close();
        return { code: o.ok ? 'ok' : o.error.code, rows };
      },
      { name },
    );
    const leader = await inPage(h.page, async () => {
      const rows = (await window.resqDb.query('SELECT s FROM t')).map((r) => r.s);
      await window.resqDb.close();
      return rows;
    });
    assert.deepEqual(got, { code: 'RESQ_UNSUPPORTED', rows: ['plain'] });
    assert.deepEqual(leader, ['plain'], 'the leading tab carries on, on the plain database');
  } finally {
    await other.close();
  }
});

test('after rekey(null), rekey(key) encrypts it again in the same worker', { opfs: false }, async (t) => {
  const name = dbName(t);
  const got = await inPage(
    h.page,
    async ({ open, outcome }, { name, marker, scan }) => {
      const rawScan = (0, eval)(`(${scan})`);
      const code = (o) => (o.ok ? 'ok' : o.error.code);
      const db = await open(name, { key: 'one' });
      await db.execute('CREATE TABLE t(s)');
      await db.execute('INSERT INTO t VALUES (?)', [marker]);
      await db.rekey(null);
      await db.rekey('two');
      await db.execute('INSERT INTO t VALUES (?)', [marker]);
      await db.close();
      const hits = (await rawScan(name, marker)).hits;
      const one = code(await outcome(open(name, { key: 'one' })));
      const two = await open(name, { key: 'two' });
      const n = (await two.query('SELECT count(*) AS n FROM t'))[0].n;
      await two.close();
      return { hits, one, n };
    },
    { name, marker: MARKER, scan: rawScan.toString() },
  );
  assert.deepEqual(got, { hits: 0, one: 'RESQ_BAD_KEY', n: 2 });
});
