// Backup and restore beside other tabs and calls: an export is one state
// of the database while another tab keeps writing, whose writes wait and
// all land; export and import work from a following tab and by name from a
// tab that never opened the database, and every tab's watches see an
// import; an export nobody reads gives way to waiting writes (reads answer
// beside it from the last commit). The one-tab
// round trips are in backup.test.mjs.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';
import { KIT } from './backup-kit.mjs';

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

/** Opens `name` in a new page as `globalThis.db`. */
async function tab(name) {
  const page = await h.newPage();
  await inPage(page, async ({ open }, name) => void (globalThis.db = await open(name)), name);
  return page;
}

test("an export is one state of the database while another tab keeps writing; that tab's writes go on meanwhile and all land", {
  timeout: 180_000,
}, async (t) => {
  const name = dbName(t);
  const [a, b] = [await tab(name), await tab(name)];
  t.after(() => Promise.all([a.close(), b.close()]));
  // 300 accounts of 1000, each row with a 64 KB pad, so the rows' pages
  // are spread over about 20 MB: five export reads, or more.
  const TOTAL = 300 * 1000;
  await inPage(a, async ({ transfer }) => {
    await db.execute('CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, pad BLOB)');
    await db.execute('CREATE TABLE meta(moves INTEGER); INSERT INTO meta VALUES (0)');
    await db.transaction(async (tx) => {
      for (let i = 1; i <= 300; i++)
        await tx.execute('INSERT INTO acct VALUES (?, 1000, ?)', [i, transfer(new Uint8Array(64 * 1024).fill(i))]);
    });
  });
  // Tab b moves money between random accounts, one transaction each, until told to stop.
  await inPage(b, async () => {
    globalThis.stop = false;
    globalThis.moves = (async () => {
      let n = 0;
      while (!globalThis.stop) {
        const [from, to, x] = [
          1 + Math.floor(Math.random() * 300),
          1 + Math.floor(Math.random() * 300),
          1 + Math.floor(Math.random() * 50),
        ];
        await db.transaction(async (tx) => {
          await tx.execute('UPDATE acct SET balance = balance - ? WHERE id = ?', [x, from]);
          await tx.execute('UPDATE acct SET balance = balance + ? WHERE id = ?', [x, to]);
          await tx.execute('UPDATE meta SET moves = moves + 1');
        });
        n += 1;
      }
      return n;
    })();
  });
  const r = await inPage(
    a,
    async ({ open, importDatabase }, name) => {
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      await sleep(200); // tab b is writing
      const chunks = [];
      const reader = db.export().getReader();
      // Tab b's transfers so far, seen from a session of this tab's own.
      const watcher = await open(name);
      const moves = async () => (await watcher.query('SELECT moves FROM meta'))[0].moves;
      const seen = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        if (chunks.length === 1) {
          // The export is running: tab b's transfers go on meanwhile. Wait
          // (up to 60 s, however slow the machine) for two more of them to
          // commit before reading on; an export that held the database
          // would see none.
          const from = await moves();
          seen.push(from);
          for (let waited = 0; waited < 60_000 && (await moves()) < from + 2; waited += 50) await sleep(50);
        }
        if (chunks.length === 3) seen.push(await moves());
        await sleep(50); // a slow reader
      }
      await watcher.close();
      await importDatabase(`${name}-snapshot`, new Blob(chunks));
      const snap = await open(`${name}-snapshot`);
      const [row] = await snap.query('SELECT sum(balance) AS total, count(*) AS n, (SELECT moves FROM meta) AS moves FROM acct');
      await snap.close();
      return { reads: chunks.length, ...row, during: seen[1] - seen[0] };
    },
    name,
  );
  const moves = await inPage(b, async () => {
    await new Promise((r) => setTimeout(r, 200)); // writing again
    globalThis.stop = true;
    return globalThis.moves;
  });
  const [live] = await inPage(a, async () => db.query('SELECT sum(balance) AS total, count(*) AS n FROM acct'));
  assert.ok(r.reads >= 5, `${r.reads} export reads`);
  assert.deepEqual({ total: r.total, n: r.n }, { total: TOTAL, n: 300 }, 'the export holds whole transactions only');
  // Tab b committed while the export was between its first and third
  // chunks (when an export held the database, none).
  assert.ok(r.during >= 2, `${r.during} transfers committed between the export's first and third chunks`);
  assert.ok(moves > 0, 'tab b wrote');
  assert.deepEqual(live, { total: TOTAL, n: 300 });
  t.diagnostic(`${r.reads} export reads; tab b made ${moves} transfers, ${r.during} of them while the export was read`);
});

test('from a following tab: export, import into the shared database, and import by name from a tab that never opened it; watches everywhere see it', {
  timeout: 180_000,
}, async (t) => {
  const name = dbName(t);
  const [a, b] = [await tab(name), await tab(name)];
  const c = await h.newPage();
  t.after(() => Promise.all([a.close(), b.close(), c.close()]));
  const kit = { KIT, name };
  // Tab a leads: it builds the database and watches it.
  await inPage(
    a,
    async (api, { KIT }) => {
      const { build } = (0, eval)(KIT)(api);
      await build(db, 0);
      globalThis.seen = [];
      globalThis.sub = db.watch('SELECT group_concat(tag) AS tags FROM (SELECT tag FROM tags ORDER BY tag)', [], (rows) =>
        seen.push(rows[0].tags),
      );
      await sub.ready;
    },
    kit,
  );
  // Tab b follows: its export is the leader's file, byte for byte.
  const exported = await inPage(
    b,
    async (api, { KIT, name }) => {
      const { bytesOf, sha, build, open } = (0, eval)(KIT)(api);
      const mine = await bytesOf(db.export());
      // Another database, to import into the shared one from here.
      const other = await open(`${name}-from-b`);
      await build(other, 8);
      globalThis.fromB = new Blob([await bytesOf(other.export())]);
      await other.close();
      return { sha: await sha(mine), length: mine.length };
    },
    kit,
  );
  const leaders = await inPage(
    a,
    async (api, { KIT }) => {
      const { bytesOf, sha } = (0, eval)(KIT)(api);
      const mine = await bytesOf(db.export());
      return { sha: await sha(mine), length: mine.length };
    },
    kit,
  );
  assert.deepEqual(exported, leaders);

  const until = `async (cond) => { const t0 = performance.now(); while (!(await cond())) { if (performance.now() - t0 > 10000) throw new Error('gave up waiting'); await new Promise((r) => setTimeout(r, 10)); } }`;
  // Tab b imports into the database it follows.
  await inPage(b, async ({ importDatabase }) => importDatabase(db, fromB));
  const afterB = await inPage(
    a,
    async (api, { until }) => {
      await (0, eval)(until)(() => seen.at(-1) === 'a,b,c,z8');
      return (await db.query('SELECT user_version FROM pragma_user_version'))[0].user_version;
    },
    { until },
  );
  assert.equal(afterB, 15);

  // Tab c never opened it: importDatabase by name goes through the leader, streaming from a database of its own.
  const fromC = await inPage(
    c,
    async (api, { KIT, name }) => {
      const { build, open, importDatabase, snapshot } = (0, eval)(KIT)(api);
      const src = await open(`${name}-from-c`);
      await build(src, 4);
      await importDatabase(name, src.export());
      const want = await snapshot(src);
      await src.close();
      return want;
    },
    kit,
  );
  const seenInA = await inPage(
    a,
    async (api, { KIT, until }) => {
      const { snapshot } = (0, eval)(KIT)(api);
      await (0, eval)(until)(() => seen.at(-1) === 'a,b,c,z4');
      return snapshot(db);
    },
    { KIT, until },
  );
  assert.equal(seenInA, fromC);
  const seenInB = await inPage(b, async (api, { KIT }) => (0, eval)(KIT)(api).snapshot(db), kit);
  assert.equal(seenInB, fromC);

  // Tab a imports by name while its own Database has the name open: a second share in one page.
  const again = await inPage(
    a,
    async ({ importDatabase }, name) => {
      const refused = await importDatabase(name, new Blob([])).then(
        () => 'imported',
        (e) => e.code,
      );
      const copy = await new Response(db.export()).blob(); // the z4 database
      await db.execute('DELETE FROM tags');
      await importDatabase(name, copy);
      return { refused, tags: (await db.query('SELECT group_concat(tag) AS t FROM (SELECT tag FROM tags ORDER BY tag)'))[0].t };
    },
    name,
  );
  assert.deepEqual(again, { refused: 'SQLITE_NOTADB', tags: 'a,b,c,z4' });
});

test('an export nobody reads gives way to another export waiting (its next read fails with SQLITE_ABORT), while reads and writes run beside it; cancel and close() end one at once', {
  timeout: 180_000,
}, async (t) => {
  const name = dbName(t);
  const [a, b] = [await tab(name), await tab(name)];
  t.after(() => Promise.all([a.close(), b.close()]));
  // Three export reads' worth, so an export is still running after its first.
  await inPage(a, async ({ transfer }) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)');
    await db.execute('INSERT INTO t(data) VALUES (?)', [transfer(new Uint8Array(10 << 20).fill(1))]);
    globalThis.reader = db.export().getReader();
    globalThis.first = (await reader.read()).value.length;
    // A write of this tab's own, made while its export runs: the export
    // reads a snapshot, so the write does not wait for it.
    const timeout = new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5000));
    globalThis.own = await Promise.race([db.execute("INSERT INTO t(data) VALUES (x'02')").then((r) => r.changes), timeout]);
  });
  // Tab b's read and write answer at once; its export waits, and begins
  // once the unread export has given way.
  const during = await inPage(b, async () => {
    // Within 5 s: the stall rule would let the export go only after 10 s.
    const timeout = new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5000));
    const wrote = await Promise.race([db.execute("INSERT INTO t(data) VALUES (x'03')"), timeout]);
    return wrote === 'still waiting after 5 s' ? wrote : (await db.query('SELECT count(*) AS n FROM t'))[0].n;
  });
  const waited = await inPage(b, async () => {
    const bytes = new Uint8Array(await new Response(db.export()).arrayBuffer());
    return { size: bytes.length, head: new TextDecoder().decode(bytes.subarray(0, 15)) };
  });
  const stalled = await inPage(a, async () => ({
    first: globalThis.first,
    own: globalThis.own,
    // The chunk the stream had pulled ahead is still there; then it fails, short of its end.
    next: await (async () => {
      try {
        while (!(await reader.read()).done);
        return 'read to the end';
      } catch (e) {
        return { code: e.code, errno: e.errno, message: e.message };
      }
    })(),
  }));
  assert.equal(during, 3, "tab b's write landed beside the export, and its read saw it");
  assert.ok(waited.size > 10 << 20, `tab b's export: ${waited.size} bytes`);
  assert.equal(waited.head, 'SQLite format 3');
  assert.equal(stalled.own, 1);
  assert.ok(stalled.first > 0);
  assert.deepEqual({ code: stalled.next.code, errno: stalled.next.errno }, { code: 'SQLITE_ABORT', errno: 4 });
  assert.match(stalled.next.message, /not read for 10 s/);

  // Cancelled after one read: another tab's export does not wait for the
  // stall rule (it would give way only after 10 s; 5 s is the bound here).
  await inPage(a, async () => {
    const r = db.export().getReader();
    await r.read();
    await r.cancel();
  });
  const cancelled = await inPage(b, async () => {
    const timeout = new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5000));
    return Promise.race([new Response(db.export()).arrayBuffer().then((x) => x.byteLength > 10 << 20), timeout]);
  });
  assert.equal(cancelled, true);

  // close() ends an export of its Database, and the stream errors with RESQ_CLOSED.
  const closed = await inPage(a, async () => {
    const r = db.export().getReader();
    await r.read();
    await db.close();
    return r.read().then(
      () => 'read',
      (e) => e.code,
    );
  });
  assert.equal(closed, 'RESQ_CLOSED');
  assert.equal(await inPage(b, async () => (await db.query('SELECT count(*) AS n FROM t'))[0].n), 3);

  // The same before the export has even begun: cancelled or closed in the
  // same turn as export(), it still lets go at once.
  const early = await inPage(
    a,
    async ({ open }, name) => {
      const within5s = (p) => Promise.race([p, new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5000))]);
      const d = await open(name);
      await d.export().cancel();
      const afterCancel = await within5s(d.execute("INSERT INTO t(data) VALUES (x'05')").then((r) => r.changes));
      const s = d.export();
      const closing = await within5s(d.close().then(() => 'closed'));
      return {
        afterCancel,
        closing,
        read: await s
          .getReader()
          .read()
          .then(
            () => 'read',
            (e) => e.code,
          ),
      };
    },
    name,
  );
  assert.deepEqual(early, { afterCancel: 1, closing: 'closed', read: 'RESQ_CLOSED' });
});
