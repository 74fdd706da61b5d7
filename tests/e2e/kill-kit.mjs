// The kill trials (kill.test.mjs on OPFS, kill-idb.test.mjs on IndexedDB):
// the worker is stopped at a random moment (`terminate()`, as a browser
// under memory pressure does), or the whole renderer crashes (CDP
// Page.crash in Chromium; in Firefox, a SIGKILL of its content processes),
// while transactions with 16 KB–8 MB BLOBs, File streams and staged values
// are in flight, with two more sessions beside them: one that reads the
// acknowledged rows back (whole, streamed, and in ranges far into them) and
// one that writes small rows of its own. A read that does not give an
// acknowledged row's bytes fails the trial. Then the database is opened
// again: every acknowledged row is there with its bytes' hash right,
// integrity_check is ok, and no temp space is left over. `RESQ_KILL_TRIALS`
// sets the count (npm test: a reduced run; npm run stress: 300).

import assert from 'node:assert/strict';
import { inPage, keepWorkers } from './util.mjs';

export const TRIALS = Number(process.env.RESQ_KILL_TRIALS ?? 12);

/**
 * `p`, or a rejection naming what it waited for once `seconds` pass: a
 * browser that stops opening tabs or answering fails the trial with its
 * step, not the file with its time limit.
 */
function within(seconds, what, p) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what}: nothing after ${seconds} s`), { late: true })), seconds * 1000);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Starts the workload in `page`; acknowledged rows are reported to `acked`. */
async function workload(page, name, seed, killAfter, crash, options) {
  return inPage(
    page,
    async ({ open, seeded }, { name, seed, killAfter, crash, options }) => {
      const rand = seeded(seed);
      const hex = async (b) =>
        Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b)), (v) => v.toString(16).padStart(2, '0')).join('');
      const bytes = (n) => {
        const b = new Uint8Array(n);
        for (let i = 0; i < n; i += 65536) crypto.getRandomValues(b.subarray(i, Math.min(n, i + 65536)));
        return b;
      };
      const db = await open(name, options);
      await db.execute('CREATE TABLE IF NOT EXISTS k(id TEXT PRIMARY KEY, sum TEXT, data BLOB)');
      const reader = await open(name, options);
      const other = await open(name, options);
      // The last rows this page had acknowledged, with their bytes.
      const done = [];
      let n = 0;
      const row = async () => {
        const data = bytes(Math.round(16384 * 512 ** rand())); // 16 KB – 8 MB, log-uniform
        return { id: `${seed}-${n++}`, sum: await hex(data), data };
      };
      const insert = 'INSERT INTO k(id, sum, data) VALUES (?, ?, ?)';
      let running = true;
      const loop = (async () => {
        while (running) {
          const way = rand();
          const rows = [await row()];
          try {
            if (way < 0.3) await db.execute(insert, [rows[0].id, rows[0].sum, rows[0].data]);
            else if (way < 0.5) await db.execute(insert, [rows[0].id, rows[0].sum, new File([rows[0].data], 'f.bin')]);
            else if (way < 0.7) {
              const staged = await db.stageBlob();
              for (let at = 0; at < rows[0].data.length; at += 65536) staged.append(rows[0].data.subarray(at, at + 65536));
              await db.execute(insert, [rows[0].id, rows[0].sum, staged]);
            } else {
              rows.push(await row());
              await db.transaction(async (tx) => {
                for (const r of rows) await tx.execute(insert, [r.id, r.sum, r.data]);
              });
            }
          } catch (e) {
            if (e.code !== 'RESQ_WORKER_DIED') throw e;
            return;
          }
          for (const r of rows) {
            await window.resqAck(r.id, r.sum);
            done.push(r);
            if (done.length > 8) done.shift();
          }
        }
      })();
      // Once the worker is gone any call may fail (a stream's session is
      // not carried over); before, none may.
      const stopped = (e) => !running || e?.code === 'RESQ_WORKER_DIED';
      const pick = seeded(seed + 1000);
      const reads = (async () => {
        while (running) {
          const r = done[Math.floor(pick() * done.length)];
          if (!r) {
            await new Promise((resolve) => setTimeout(resolve, 5));
            continue;
          }
          try {
            const [found] = await reader.query('SELECT rowid FROM k WHERE id = ?', [r.id]);
            if (!found) {
              await window.resqWrong(`${r.id}: acknowledged, but not there`);
              continue;
            }
            const way = pick();
            let got = null;
            let want = r.data;
            if (way < 0.4) got = await reader.readBlob('k', 'data', found.rowid);
            else if (way < 0.7) {
              const chunks = [];
              for await (const c of reader.blobStream('k', 'data', found.rowid, { chunkSize: 256 << 10 })) chunks.push(c);
              got = new Uint8Array(await new Blob(chunks).arrayBuffer());
            } else {
              const offset = Math.floor(r.data.length * (0.5 + pick() / 2));
              got = await reader.readBlob('k', 'data', found.rowid, { offset, length: Math.min(65536, r.data.length - offset) });
              want = r.data.subarray(offset, offset + got.length);
            }
            if (got.length !== want.length || (await hex(got)) !== (await hex(want))) await window.resqWrong(`${r.id}: other bytes`);
            await window.resqRead();
          } catch (e) {
            if (stopped(e)) return;
            throw e;
          }
        }
      })();
      let m = 0;
      const writes = (async () => {
        while (running) {
          const data = bytes(16384);
          const r = { id: `${seed}-other-${m++}`, sum: await hex(data) };
          try {
            await other.execute(insert, [r.id, r.sum, data]);
          } catch (e) {
            if (stopped(e)) return;
            throw e;
          }
          await window.resqAck(r.id, r.sum);
        }
      })();
      await new Promise((r) => setTimeout(r, killAfter));
      if (crash) {
        window.resqCrash();
        await new Promise(() => {}); // the renderer goes down with this page
      }
      // The database carries on in a new worker after this one is
      // stopped: the loop ends with the call in flight, whichever way it
      // settles.
      running = false;
      window.workers.at(-1).terminate();
      window.resqKilled = { at: performance.now(), dbs: [db, reader, other] };
      await Promise.all([loop, reads, writes]);
      return 'terminated';
    },
    { name, seed, killAfter, crash, options },
  );
}

/**
 * `TRIALS` kill trials of database `name` opened with `options`, in the
 * browser of harness `h` (start()): each stops the worker or crashes the
 * renderer mid-write, then checks every acknowledged row in a fresh open.
 */
export async function killTrials(h, t, options, name) {
  const acked = new Map(); // id → hash, for rows not yet checked and pruned
  let ackedTotal = 0;
  const reopenMs = { terminate: [], crash: [] }; // by how the trial killed
  const totals = { trials: 0, crashes: 0, lost: 0, mismatches: 0, integrity: 0, leftover: 0, rows: 0, reads: 0 };
  const wrongReads = [];
  const fresh = async () => {
    const page = await within(60, 'a new tab', h.newPage());
    await keepWorkers(page);
    await page.exposeFunction('resqAck', (id, sum) => {
      acked.set(id, sum);
      ackedTotal += 1;
    });
    await page.exposeFunction('resqRead', () => {
      totals.reads += 1;
    });
    await page.exposeFunction('resqWrong', (what) => {
      wrongReads.push(what);
    });
    const crashRenderer = await h.crasher(page);
    await page.exposeFunction('resqCrash', () => void crashRenderer().catch(() => {}));
    return page;
  };
  // Opens the database again in a fresh page and checks everything; then
  // prunes all but the newest rows, so each check costs the same and the
  // kept rows are carried through the next kills.
  const check = async (page, trial) => {
    const r = await inPage(
      page,
      async ({ open }, { name, ids, options }) => {
        const hex = async (b) =>
          Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b)), (v) => v.toString(16).padStart(2, '0')).join('');
        // After terminate() this page's own link has already begun to
        // recover (a new worker): timed from the kill. After a crash the
        // page is new: timed from open().
        const killed = window.resqKilled;
        const t0 = killed?.at ?? performance.now();
        const db = await open(name, options);
        await db.query('SELECT 1');
        const reopenMs = performance.now() - t0;
        const present = new Map();
        let mismatches = 0;
        for (const { id, sum, rowid } of await db.query('SELECT rowid, id, sum FROM k')) {
          present.set(id, sum);
          const data = await db.blobFile('k', 'data', rowid);
          if ((await hex(await data.arrayBuffer())) !== sum) mismatches += 1;
        }
        const [{ integrity_check: ok }] = await db.query('PRAGMA integrity_check');
        // Temp space: every stage directory is a live worker's, and holds nothing.
        let leftover = 0;
        const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('.resq-wasm-stage', { create: true });
        for await (const [, dir] of top.entries()) for await (const _ of dir.keys()) leftover += 1;
        const rows = present.size;
        const pruned = (
          await db.query('DELETE FROM k WHERE rowid NOT IN (SELECT rowid FROM k ORDER BY rowid DESC LIMIT 8) RETURNING id')
        ).map((r) => r.id);
        await db.close();
        for (const d of killed?.dbs ?? []) await d.close();
        window.resqKilled = undefined;
        return {
          reopenMs,
          lost: ids.filter(([id, sum]) => present.get(id) !== sum).map(([id]) => id),
          mismatches,
          ok,
          leftover,
          rows,
          pruned,
        };
      },
      { name, ids: [...acked], options },
    );
    totals.lost += r.lost.length;
    totals.mismatches += r.mismatches;
    totals.integrity += r.ok === 'ok' ? 0 : 1;
    totals.leftover += r.leftover;
    totals.rows = r.rows;
    for (const id of r.pruned) acked.delete(id);
    assert.deepEqual(r.lost, [], `after trial ${trial}: acknowledged rows lost`);
    return r.reopenMs;
  };
  let page = await fresh();
  for (let trial = 0; trial < TRIALS; trial++) {
    const crash = trial % 4 === 3;
    const killAfter = 30 + ((trial * 7919) % 400);
    await within(120, `trial ${trial}'s workload`, workload(page, name, trial + 1, killAfter, crash, options)).catch((e) => {
      // A crash rejects the page's call; nothing else may.
      if (!crash || e.late) throw e;
    });
    totals.trials += 1;
    totals.crashes += crash ? 1 : 0;
    // A page whose worker was stopped carries on, as a tab does: it checks
    // this trial and runs the next one. A crashed page is replaced.
    if (crash) {
      await within(60, `closing trial ${trial}'s crashed tab`, page.close()).catch(() => {});
      page = await fresh();
    }
    const t0 = Date.now();
    reopenMs[crash ? 'crash' : 'terminate'].push(await within(120, `trial ${trial}'s check`, check(page, trial)));
    if (process.env.KTRACE) console.error(`trial ${trial} crash=${crash} check ${Date.now() - t0} ms`);
  }
  await page.close();
  const q = (ms, p) => [...ms].sort((a, b) => a - b)[Math.min(ms.length - 1, Math.floor(p * ms.length))]?.toFixed(1);
  const times = (ms) => `p50 ${q(ms, 0.5)} ms p99 ${q(ms, 0.99)} ms`;
  t.diagnostic(
    `trials ${totals.trials} (${totals.crashes} renderer crashes), acknowledged rows ${ackedTotal}, lost ${totals.lost}, reads beside the writes ${totals.reads} (wrong ${wrongReads.length}), hash mismatches ${totals.mismatches}, integrity failures ${totals.integrity}, leftover temp files ${totals.leftover}, rows kept between trials 8, reopen after terminate() (the same tab recovers, timed from the kill) ${times(reopenMs.terminate)}, after a crash (a new tab opens it) ${times(reopenMs.crash)}`,
  );
  assert.deepEqual(wrongReads, [], 'every read beside the writes gave an acknowledged row its bytes');
  assert.ok(totals.reads > 0, 'some reads ran beside the writes');
  assert.equal(totals.mismatches, 0);
  assert.equal(totals.integrity, 0);
  assert.equal(totals.leftover, 0);
  assert.ok(ackedTotal > 0, 'some rows were acknowledged');
}
