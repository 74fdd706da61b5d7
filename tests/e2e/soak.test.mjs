// Soak: put/get/delete of BLOBs, sizes log-uniform from 1 KB to 8 MB, by
// every path (bytes, File, staged value; readBlob, blobStream, blobFile,
// query), a third of each, so the table stays near a steady size (a few
// hundred MB) as a long-lived app's does. The worker's wasm memory and the
// page's JS heap are sampled as it goes: after warm-up neither may grow,
// and the wasm memory stays under the 128 MB ceiling. `RESQ_SOAK_OPS` sets
// the count (npm test: 2,000, whose first half the wasm memory needs to
// reach its plateau, 52-53 MB; npm run stress: 20,000). Firefox offers no
// way to collect or read a page's JS heap from outside: there the heap
// check is skipped, the wasm memory checks run.

import { before, after } from 'node:test';
import { opfsTests } from './engines.mjs';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

// Every test here needs OPFS (see engines.mjs).
const test = opfsTests();

const OPS = Number(process.env.RESQ_SOAK_OPS ?? 2000);
const CEILING = 128 << 20;

let h;
before(async () => {
  h = await start({ probe: {} });
});
after(async () => {
  await h?.close();
});

test(`soak: ${OPS} BLOB puts, gets and deletes of 1 KB–8 MB by every path; wasm memory and page heap stop growing after warm-up`, async (t) => {
  const heap = await h.heapMeter(h.page);
  const name = 'soak.db';
  await h.page.exposeFunction('resqHeap', heap.measure);
  const r = await inPage(
    h.page,
    async ({ open, probe, seeded }, { name, ops }) => {
      const rand = seeded(99);
      const db = await open(name);
      await db.execute('CREATE TABLE s(id INTEGER PRIMARY KEY, n INTEGER, data BLOB)');
      const ids = [];
      const samples = [];
      let checked = 0;
      for (let i = 0; i < ops; i++) {
        const r = rand();
        if (r < 1 / 3 || ids.length < 32) {
          const n = Math.round(1024 * 8192 ** rand()); // 1 KB – 8 MB
          const data = new Uint8Array(n).fill(i & 255);
          const way = i % 3;
          let value = data;
          if (way === 1) value = new File([data], 'f.bin');
          if (way === 2) {
            value = await db.stageBlob();
            for (let at = 0; at < n; at += 1 << 20) value.append(data.subarray(at, at + (1 << 20)));
          }
          const { lastInsertRowid } = await db.execute('INSERT INTO s(n, data) VALUES (?, ?)', [n, value]);
          ids.push(lastInsertRowid);
        } else if (r < 2 / 3) {
          const id = ids[(rand() * ids.length) | 0];
          const [{ n }] = await db.query('SELECT n FROM s WHERE id = ?', [id]);
          const way = i % 4;
          let got;
          if (way === 0) got = await db.readBlob('s', 'data', id);
          else if (way === 1) got = new Uint8Array(await (await db.blobFile('s', 'data', id)).arrayBuffer());
          else if (way === 2) got = (await db.query('SELECT data FROM s WHERE id = ?', [id]))[0].data;
          else {
            let len = 0;
            for await (const c of db.blobStream('s', 'data', id)) len += c.length;
            got = { length: len };
          }
          if (got.length !== n) throw new Error(`row ${id}: ${got.length} bytes, expected ${n}`);
          checked += 1;
        } else {
          const id = ids.splice((rand() * ids.length) | 0, 1)[0];
          await db.execute('DELETE FROM s WHERE id = ?', [id]);
        }
        if (i % Math.max(1, Math.floor(ops / 20)) === 0 || i === ops - 1)
          samples.push({ i, wasm: await probe(name, 'memory'), heap: await window.resqHeap() });
      }
      await db.close();
      return { samples, checked, rows: ids.length };
    },
    { name, ops: OPS },
  );
  const mb = (b) => (b / 1048576).toFixed(1);
  const half = r.samples.filter((s) => s.i >= OPS / 2);
  const warm = half[0];
  const last = r.samples.at(-1);
  const peakHeap = Math.max(...half.map((s) => s.heap));
  const measured = warm.heap !== null;
  t.diagnostic(
    `ops ${OPS}, reads checked ${r.checked}, rows at the end ${r.rows}; wasm memory MB by sample: ${r.samples.map((s) => mb(s.wasm)).join(' ')}; page heap MB (after GC): ${measured ? r.samples.map((s) => mb(s.heap)).join(' ') : 'not measured'}`,
  );
  assert.ok(last.wasm <= CEILING, `wasm memory ${mb(last.wasm)} MB is over the 128 MB ceiling`);
  assert.equal(last.wasm, warm.wasm, `wasm memory grew after warm-up: ${mb(warm.wasm)} → ${mb(last.wasm)} MB`);
  await t.test(
    'the page heap stops growing after warm-up',
    { skip: !measured && `${h.engine}: nothing outside the browser can collect or read a page's JS heap (CDP only)` },
    () => {
      assert.ok(peakHeap < warm.heap + (32 << 20), `page heap grew after warm-up: ${mb(warm.heap)} → ${mb(peakHeap)} MB`);
    },
  );
  await heap.release();
});
