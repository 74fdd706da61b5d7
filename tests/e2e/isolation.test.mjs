// Isolation model check: several sessions (three `open()`s of one name in
// this page, one in another tab) run seeded random operations at once:
// transfers between accounts, each in a transaction that also counts the
// commit; a media value rewritten whole (bytes or a streamed `File`) in a
// transaction that counts its commit too; reads (`query`, `readBlob`,
// `blobStream`) and exports. Every read must see exactly one commit's state:
//   - the accounts' total never changes (a part of a transfer is never seen);
//   - a read sees at least the last commit acknowledged to any session of
//     this page before it was made, and at least its own session's last;
//     a session's reads never go back;
//   - the media value is its version as a 32-bit number, then bytes all
//     `version & 255`, its length the one that version wrote (a read or
//     stream never mixes two values), and it is at least the last version
//     acknowledged before the read (a range read never answers from an
//     older snapshot);
//   - an export, imported, holds the same total and passes integrity_check.
// `RESQ_ISOLATION_OPS` sets the operations in all (npm test: 1,200; npm run
// stress: 100,000). Stored databases only (OPFS, or IndexedDB where there
// is none): memory databases run one call at a time.

import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

const OPS = Number(process.env.RESQ_ISOLATION_OPS ?? 1200);
const SEED = Number(process.env.RESQ_ISOLATION_SEED ?? 20261202);

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

/** The sessions' loop, run in a page: `sessions` opens, `ops` operations in all, from `seed`. */
const sessionLoops = async ({ open, importDatabase, seeded }, { name, sessions, ops, seed, setUp, hold }) => {
  const ACCOUNTS = 20;
  const TOTAL = ACCOUNTS * 1000;
  const MB = 1 << 20;
  const rand = seeded(seed);
  const dbs = [];
  for (let i = 0; i < sessions; i++) dbs.push(await open(name));
  if (setUp) {
    await dbs[0].execute(
      `CREATE TABLE IF NOT EXISTS acct(id INTEGER PRIMARY KEY, bal INTEGER NOT NULL);
       CREATE TABLE IF NOT EXISTS meta(commits INTEGER NOT NULL);
       CREATE TABLE IF NOT EXISTS media(id INTEGER PRIMARY KEY, v INTEGER NOT NULL, data BLOB)`,
    );
    await dbs[0].transaction(async (tx) => {
      for (let i = 1; i <= ACCOUNTS; i++) await tx.execute('INSERT INTO acct VALUES (?, 1000)', [i]);
      await tx.execute('INSERT INTO meta VALUES (0)');
      await tx.execute('INSERT INTO media VALUES (1, 0, zeroblob(1000))');
    });
  }
  // The length each version's value has: a function of the version.
  const lengthOf = (v) => (v === 0 ? 1000 : [3000, 70_000, 5 * MB][v % 3]);
  let acked = 0; // the highest commit acknowledged to this page
  let ackedMedia = 0; // the media version of the last media commit acknowledged
  const counts = { reads: 0, writes: 0, streams: 0, exports: 0 };
  const divergences = [];
  const diverged = (what) => {
    if (divergences.length < 10) divergences.push(what);
  };
  const checkState = (row, floor, where) => {
    if (row.s !== TOTAL) diverged(`${where}: total ${row.s}`);
    if (row.c < floor) diverged(`${where}: commit ${row.c}, below ${floor}`);
    if (row.v > row.c) diverged(`${where}: media version ${row.v} past commit ${row.c}`);
    if (row.n !== lengthOf(row.v)) diverged(`${where}: media of version ${row.v} is ${row.n} bytes`);
  };
  // The value of version v: v as a 32-bit number, then bytes v & 255.
  const valueAt = (v) => {
    const value = new Uint8Array(lengthOf(v)).fill(v & 255);
    new DataView(value.buffer).setUint32(0, v, true);
    return value;
  };
  /** Checks one value read (whole, or its first bytes): its version, or -1 when mixed. */
  const versionIn = (bytes, floor, where) => {
    const v = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
    if (v < floor) diverged(`${where}: version ${v}, below ${floor}`);
    for (let i = 4; i < bytes.length; i += 997) if (bytes[i] !== (v & 255)) return diverged(`${where}: mixed bytes`);
    if (bytes[bytes.length - 1] !== (v & 255) && bytes.length > 4) diverged(`${where}: mixed bytes at the end`);
    return v;
  };
  const STATE = 'SELECT (SELECT commits FROM meta) AS c, (SELECT sum(bal) FROM acct) AS s, v, length(data) AS n FROM media WHERE id = 1';
  const loop = async (db, k, share) => {
    let own = 0; // this session's highest commit, written or seen
    let ownMedia = 0; // the same, of the media value's version
    for (let i = 0; i < share; i++) {
      const r = rand();
      const floor = Math.max(acked, own);
      const mediaFloor = Math.max(ackedMedia, ownMedia);
      const where = `session ${k} op ${i}`;
      if (r < 0.3) {
        const [a, b, amount] = [1 + Math.floor(rand() * ACCOUNTS), 1 + Math.floor(rand() * ACCOUNTS), Math.floor(rand() * 50)];
        const n = await db.transaction(async (tx) => {
          await tx.execute('UPDATE acct SET bal = bal - ? WHERE id = ?', [amount, a]);
          await tx.execute('UPDATE acct SET bal = bal + ? WHERE id = ?', [amount, b]);
          return (await tx.query('UPDATE meta SET commits = commits + 1 RETURNING commits AS c'))[0].c;
        });
        own = Math.max(own, n);
        acked = Math.max(acked, n);
        counts.writes++;
      } else if (r < 0.36) {
        const n = await db.transaction(async (tx) => {
          const c = (await tx.query('UPDATE meta SET commits = commits + 1 RETURNING commits AS c'))[0].c;
          const value = valueAt(c);
          // From 4 MB a File streams into its cell after the statement.
          const param = value.length >= 4 * MB ? new File([value], 'v.bin') : value;
          await tx.execute('UPDATE media SET v = ?, data = ? WHERE id = 1', [c, param]);
          return c;
        });
        own = Math.max(own, n);
        ownMedia = Math.max(ownMedia, n);
        acked = Math.max(acked, n);
        ackedMedia = Math.max(ackedMedia, n);
        counts.writes++;
      } else if (r < 0.75) {
        const [row] = await db.query(STATE);
        checkState(row, floor, where);
        if (row.v < mediaFloor) diverged(`${where}: media version ${row.v}, below ${mediaFloor}`);
        own = Math.max(own, row.c);
        ownMedia = Math.max(ownMedia, row.v);
        counts.reads++;
      } else if (r < 0.88) {
        // Twice: the second may reuse the first's handle, and must still read the last commit.
        for (const again of [false, true]) {
          const bytes = await db.readBlob('media', 'data', 1, { offset: 0, length: 1000 });
          ownMedia = Math.max(ownMedia, versionIn(bytes, again ? Math.max(ackedMedia, ownMedia) : mediaFloor, `${where} readBlob`) ?? 0);
        }
        counts.reads += 2;
      } else if (r < 0.995) {
        const chunks = [];
        for await (const chunk of db.blobStream('media', 'data', 1, { chunkSize: 256 << 10 })) chunks.push(chunk);
        const all = new Uint8Array(await new Blob(chunks).arrayBuffer());
        const v = versionIn(all, mediaFloor, `${where} blobStream`);
        if (v !== undefined && all.length !== lengthOf(v)) diverged(`${where} blobStream: ${all.length} bytes of version ${v}`);
        ownMedia = Math.max(ownMedia, v ?? 0);
        counts.streams++;
      } else {
        // Read chunk by chunk: an error arrives as it is (a Response would hide it as 'Failed to fetch').
        const chunks = [];
        for await (const chunk of db.export()) chunks.push(chunk);
        const file = new Blob(chunks);
        const copy = await open(':memory:');
        await importDatabase(copy, file);
        const [row] = await copy.query(STATE);
        const [check] = await copy.query('PRAGMA integrity_check');
        await copy.close();
        checkState(row, floor, `${where} export`);
        if (check.integrity_check !== 'ok') diverged(`${where} export: ${check.integrity_check}`);
        counts.exports++;
      }
    }
  };
  const share = Math.ceil(ops / sessions);
  // A failed call is a divergence too (an error never counts as a match).
  const results = await Promise.allSettled(dbs.map((db, k) => loop(db, k, share)));
  for (const r of results) if (r.status === 'rejected') diverged(`a call failed: ${r.reason?.code} ${r.reason?.message}`);
  const [last] = await dbs[0].query(STATE);
  // `hold`: the first stays open (globalThis.resqIsolationHold), so this tab keeps the lead.
  if (hold) globalThis.resqIsolationHold = dbs.shift();
  for (const db of dbs) await db.close();
  return { counts, divergences, last, ops: share * sessions };
};

test('sessions in two tabs read exactly one commit each: transfers, streamed rewrites, reads, streams and exports interleaved', {
  timeout: 3_600_000,
}, async (t) => {
  const name = dbName(t);
  const other = await h.newPage();
  t.after(() => other.close());
  // The leading tab opens first (with the writer's worker) and holds the
  // database until both are done; the other follows it. Were the other tab
  // to lead, its close would end the workers this tab's transactions and
  // streams are bound to (RESQ_WORKER_DIED, as documented).
  await inPage(h.page, sessionLoops, { name, sessions: 1, ops: 0, seed: 1, setUp: true, hold: true });
  const [here, there] = await Promise.all([
    inPage(h.page, sessionLoops, { name, sessions: 3, ops: Math.round(OPS * 0.75), seed: SEED, setUp: false }),
    inPage(other, sessionLoops, { name, sessions: 1, ops: Math.round(OPS * 0.25), seed: SEED + 1, setUp: false }),
  ]);
  await inPage(h.page, () => globalThis.resqIsolationHold.close());
  const sum = (k) => here.counts[k] + there.counts[k];
  t.diagnostic(
    `${here.ops + there.ops} operations: ${sum('writes')} commits, ${sum('reads')} reads, ${sum('streams')} streams, ${sum('exports')} exports; 4 sessions in 2 tabs; divergences ${here.divergences.length + there.divergences.length}`,
  );
  assert.deepEqual([...here.divergences, ...there.divergences], []);
  assert.equal(here.last.s, 20_000);
  assert.ok(sum('writes') > 0 && sum('streams') > 0);
});
