// Model check: seeded random sequences of operations run against the
// package and against a plain JS model of the table, compared in full every
// 150 operations and at the end. Operations: insert, update, delete,
// select; transactions that commit and that roll back; batches (all or
// nothing); BLOB writes of random sizes by every path (bytes, a File below
// and above the stream limit, a staged value); ranged reads and streams;
// close and reopen. On OPFS and in memory. `RESQ_MODEL_OPS` sets the
// operations per storage (npm test: a reduced run; npm run stress: 50,000),
// `RESQ_MODEL_REOPEN` the share of them that close and reopen (3%; a
// reopen starts a worker, which costs as much as forty other operations).

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

const OPS = Number(process.env.RESQ_MODEL_OPS ?? 600);
const SEED = Number(process.env.RESQ_MODEL_SEED ?? 20261130);
const REOPEN = Number(process.env.RESQ_MODEL_REOPEN ?? 0.03);

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

async function run(name, storage, seed) {
  return inPage(
    h.page,
    async ({ open, seeded }, { name, storage, seed, ops, reopen }) => {
      const rand = seeded(seed);
      const pick = (n) => (rand() * n) | 0;
      const bytes = (n) => {
        const b = new Uint8Array(n);
        const v = pick(256);
        for (let i = 0; i < n; i += 997) b[i] = (v + i) & 255;
        b[n - 1] = v;
        return b;
      };
      // Sizes: mostly small, some overflow pages, a few above the 4 MB stream limit.
      const size = () => (rand() < 0.01 ? (4 << 20) + pick(1 << 20) : Math.round(64 * 4096 ** rand()));
      const same = (a, b) => {
        if (a === b) return true;
        if (!(a instanceof Uint8Array && b instanceof Uint8Array && a.length === b.length)) return false;
        for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
        return true;
      };
      const model = new Map(); // id → { n, data }
      const options = storage === 'memory' ? { storage } : {};
      let db = await open(name, options);
      await db.execute('CREATE TABLE IF NOT EXISTS m(id INTEGER PRIMARY KEY, n INTEGER, data BLOB)');
      let step = 0;
      let op = '';
      const diverge = (what) => {
        throw new Error(`divergence at operation ${step} (${op}), seed ${seed}: ${what}`);
      };
      /** A value for `bytes` by a random path: bytes, a File, a staged value. */
      const param = async (data, staging) => {
        const way = pick(3);
        if (way === 0 || !staging) return [data, 'bytes'];
        if (way === 1) return [new File([data], 'x.bin'), 'File'];
        const staged = await db.stageBlob();
        for (let at = 0; at < data.length; at += 65536) staged.append(data.subarray(at, at + 65536));
        return [staged, 'staged'];
      };
      const compareAll = async () => {
        const rows = await db.query('SELECT id, n, data FROM m ORDER BY id');
        const ids = [...model.keys()].sort((a, b) => a - b);
        if (rows.length !== ids.length || rows.some((r, i) => r.id !== ids[i])) diverge(`ids ${rows.map((r) => r.id)} vs model ${ids}`);
        for (const r of rows) {
          const m = model.get(r.id);
          if (r.n !== m.n || !same(r.data, m.data)) diverge(`row ${r.id} differs`);
        }
      };
      const writes = { insert: 0, update: 0, delete: 0, tx: 0, rollback: 0, batch: 0, read: 0, reopen: 0 };
      for (step = 0; step < ops; step++) {
        // r picks the operation: below 0.97 by the ranges below, 1 = reopen.
        const r = rand() < reopen ? 1 : 0.97 * rand();
        const id = 1 + pick(40);
        if (r < 0.25) {
          op = 'insert';
          const data = rand() < 0.1 ? null : bytes(size());
          const [value, way] = data ? await param(data, true) : [null, 'null'];
          op = `insert ${way}`;
          let err = null;
          await db.execute('INSERT INTO m(id, n, data) VALUES (?, ?, ?)', [id, step, value]).catch((e) => (err = e));
          if (model.has(id)) {
            if (err?.code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') diverge(`duplicate insert gave ${err?.code ?? 'success'}`);
            if (value?.discard) await value.discard();
          } else {
            if (err) diverge(`insert failed: ${err.code} ${err.message}`);
            model.set(id, { n: step, data });
          }
          writes.insert++;
        } else if (r < 0.45) {
          const data = bytes(size());
          const [value, way] = await param(data, true);
          op = `update ${way}`;
          const { changes } = await db.execute('UPDATE m SET n = ?, data = ? WHERE id = ?', [step, value, id]);
          if (changes !== (model.has(id) ? 1 : 0)) diverge(`update changed ${changes}`);
          if (model.has(id)) model.set(id, { n: step, data });
          else if (value?.discard) await value.discard();
          writes.update++;
        } else if (r < 0.55) {
          op = 'delete';
          const { changes } = await db.execute('DELETE FROM m WHERE id = ?', [id]);
          if (changes !== (model.has(id) ? 1 : 0)) diverge(`delete changed ${changes}`);
          model.delete(id);
          writes.delete++;
        } else if (r < 0.65) {
          op = 'select';
          const rows = await db.query('SELECT n, data FROM m WHERE id = ?', [id]);
          const m = model.get(id);
          if (rows.length !== (m ? 1 : 0) || (m && (rows[0].n !== m.n || !same(rows[0].data, m.data)))) diverge(`select of ${id}`);
        } else if (r < 0.75) {
          // A transaction of a few writes that commits, or rolls back.
          const commit = rand() < 0.6;
          op = commit ? 'transaction' : 'rollback';
          const next = new Map(model);
          const plan = Array.from({ length: 1 + pick(3) }, () => ({ id: 1 + pick(40), data: bytes(size() % (1 << 20)) }));
          const undo = new Error('undo');
          const result = await db
            .transaction(async (tx) => {
              for (const p of plan) {
                await tx.execute('INSERT OR REPLACE INTO m(id, n, data) VALUES (?, ?, ?)', [p.id, step, p.data]);
                next.set(p.id, { n: step, data: p.data });
              }
              if (!commit) throw undo;
              return 'done';
            })
            .catch((e) => e);
          if (commit && result !== 'done') diverge(`transaction failed: ${result?.message}`);
          if (!commit && result !== undo) diverge("rollback did not re-throw the callback's error");
          if (commit) for (const [k, v] of next) model.set(k, v);
          writes[commit ? 'tx' : 'rollback']++;
        } else if (r < 0.85) {
          op = 'batch';
          const sets = Array.from({ length: 2 + pick(3) }, () => [1 + pick(40), step, bytes(64 + pick(8192))]);
          let err = null;
          await db.executeBatch('INSERT INTO m(id, n, data) VALUES (?, ?, ?)', sets).catch((e) => (err = e));
          const ids = sets.map((s) => s[0]);
          const clash = ids.some((i, k) => model.has(i) || ids.indexOf(i) !== k);
          if (clash !== !!err) diverge(`batch: clash ${clash}, error ${err?.code}`);
          if (!clash) for (const s of sets) model.set(s[0], { n: s[1], data: s[2] });
          writes.batch++;
        } else if (r < 0.97) {
          const m = model.get(id);
          if (!m?.data?.length) continue;
          const offset = pick(m.data.length);
          const length = pick(m.data.length - offset + 1);
          if (rand() < 0.5) {
            op = 'readBlob';
            const got = await db.readBlob('m', 'data', id, { offset, length });
            if (!same(got, m.data.subarray(offset, offset + length))) diverge(`readBlob ${id} ${offset}+${length}`);
          } else {
            op = 'blobStream';
            const got = new Uint8Array(length);
            let at = 0;
            for await (const c of db.blobStream('m', 'data', id, { offset, length, chunkSize: 1 + pick(300000) })) {
              got.set(c, at);
              at += c.length;
            }
            if (at !== length || !same(got, m.data.subarray(offset, offset + length))) diverge(`blobStream ${id} ${offset}+${length}`);
          }
          writes.read++;
        } else {
          op = 'reopen';
          await db.close();
          db = await open(name, options);
          // A memory database does not outlive its close.
          if (storage === 'memory') {
            model.clear();
            await db.execute('CREATE TABLE m(id INTEGER PRIMARY KEY, n INTEGER, data BLOB)');
          }
          writes.reopen++;
        }
        if (step % 150 === 149) await compareAll();
      }
      await compareAll();
      const [{ ok }] = await db.query('SELECT integrity_check AS ok FROM pragma_integrity_check');
      await db.close();
      return { ops, rows: model.size, writes, integrity: ok };
    },
    { name, storage, seed, ops: OPS, reopen: REOPEN },
  );
}

for (const storage of ['opfs', 'memory']) {
  test(`model check on ${storage}: ${OPS} seeded random operations match a plain JS model (seed ${SEED})`, {
    opfs: storage === 'opfs',
  }, async (t) => {
    const r = await run(storage === 'memory' ? ':memory:' : dbName(t), storage, SEED);
    t.diagnostic(`${storage}: ${r.ops} operations, divergences 0, seed ${SEED}, ${JSON.stringify(r.writes)}, ${r.rows} rows at the end`);
    assert.equal(r.integrity, 'ok');
  });
}
