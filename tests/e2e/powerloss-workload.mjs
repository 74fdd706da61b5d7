// The power-loss simulation's workload (powerloss.test.mjs for OPFS,
// powerloss-idb.test.mjs for IndexedDB): 40 transactions of 1–3 rows, 1 KB
// to 64 KB each with its SHA-256 beside it, one 9 MB File, an export and an
// idle pause that checkpoint midway, and updates that free and reuse pages.
// The probe worker records what reached storage; the page marks each
// transaction once it was acknowledged.

import { inPage } from './util.mjs';

/**
 * Runs the workload in `page` on database `name` (opened with `key` and
 * `storage` where given); returns the probe's record, with bytes in
 * base64, and each transaction's row count.
 */
export async function record(page, name, seed, { pageSize = 8192, key = null, storage = null } = {}) {
  return inPage(
    page,
    async ({ open, probe }, { name, seed, pageSize, key, storage }) => {
      let x = seed;
      const rand = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
      const hex = async (b) =>
        Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b)), (v) => v.toString(16).padStart(2, '0')).join('');
      const bytes = (n) => Uint8Array.from({ length: n }, () => (rand() * 256) | 0);
      const db = await open(name, { ...(key ? { key } : {}), ...(storage ? { storage } : {}) });
      await db.execute(`PRAGMA page_size = ${pageSize}`);
      await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, tx INTEGER, k INTEGER, sum TEXT, data BLOB)');
      await probe(name, 'mark', 0);
      const txs = {};
      for (let tx = 1; tx <= 40; tx++) {
        const rows = 1 + ((rand() * 3) | 0);
        const values = [];
        for (let k = 0; k < rows; k++) {
          // 1 KB to 64 KB, log-uniform: small rows, overflow chains, some spanning pages.
          const data = bytes(Math.round(1024 * 64 ** rand()));
          values.push([tx, k, await hex(data), data]);
        }
        const insert = 'INSERT INTO t(tx, k, sum, data) VALUES (?, ?, ?, ?)';
        if (tx === 25) {
          // A File above the stream limit: placeholder, resize, chunked
          // writes. 9 MB of new pages, past the file's end, is more than a
          // checkpoint waits for (8 MiB: src/worker/journal.rs), so the
          // call that stores it is followed by a copy in slices.
          const data = bytes(9 << 20);
          await db.execute(insert, [tx, 0, await hex(data), new File([data], 'clip.bin')]);
          txs[tx] = 1;
          await probe(name, 'mark', tx);
          continue;
        }
        if (rows === 1) await db.execute(insert, values[0]);
        else if (tx % 2) await db.executeBatch(insert, values);
        else
          await db.transaction(async (t) => {
            for (const v of values) await t.execute(insert, v);
          });
        // An export midway checkpoints the WAL into the database file and
        // empties it, so the workload's later commits write the WAL over
        // from its start.
        if (tx === 30) await new Response(db.export()).arrayBuffer();
        // A pause midway: the worker's idle checkpoint copies the WAL into
        // the database file in slices (src/worker/backfill.rs), and the
        // next commit writes the WAL over from its start.
        if (tx === 20) await new Promise((r) => setTimeout(r, 1000));
        // Deletes and updates too, so pages are freed and reused.
        if (tx % 7 === 0) await db.execute('UPDATE t SET data = data WHERE tx = ?', [tx - 3]);
        txs[tx] = rows;
        await probe(name, 'mark', tx);
      }
      const log = await probe(name, 'log');
      await db.close();
      const b64 = (u8) => {
        let s = '';
        for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
        return btoa(s);
      };
      // An IndexedDB value: a segment's bytes (a Blob, or an ArrayBuffer
      // where Blobs are refused), a map chunk's words, or a record.
      const value = async (v) => {
        if (v instanceof Blob) return { bytes: b64(new Uint8Array(await v.arrayBuffer())) };
        if (v instanceof ArrayBuffer) return { bytes: b64(new Uint8Array(v)) };
        if (v instanceof Uint32Array) return { words: b64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) };
        return v;
      };
      const entry = async (e) => {
        if (e[0] === 'w') return [e[0], e[1], e[2], b64(e[3])];
        if (e[0] === 'x')
          return ['x', await Promise.all(e[1].map(async ([s, op, k, v]) => [s, op, k, op === 'put' ? await value(v) : null]))];
        return e;
      };
      return { txs, log: await Promise.all(log.map(entry)) };
    },
    { name, seed, pageSize, key, storage },
  );
}
