// IDB + Blob + FileReaderSync probe (dedicated worker)
const R = { ua: navigator.userAgent, log: [] };
const MB = 1 << 20;
const now = () => performance.now();
const med = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return +s[s.length >> 1].toFixed(4);
};
const p90 = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return +s[Math.floor(s.length * 0.9)].toFixed(4);
};
const pat = (off) => (off * 7 + (off >>> 12) + 13) & 255; // byte at absolute offset
function fill(len, base) {
  const u = new Uint8Array(len);
  for (let i = 0; i < len; i++) u[i] = pat(base + i);
  return u;
}
function check(ab, base) {
  const u = new Uint8Array(ab);
  for (let i = 0; i < u.length; i++) if (u[i] !== pat(base + i)) return false;
  return true;
}
const req = (r) =>
  new Promise((ok, ko) => {
    r.onsuccess = () => ok(r.result);
    r.onerror = () => ko(r.error);
  });
const done = (tx) =>
  new Promise((ok, ko) => {
    tx.oncomplete = ok;
    tx.onerror = () => ko(tx.error);
    tx.onabort = () => ko(tx.error || new Error('abort'));
  });
function openDb() {
  const r = indexedDB.open('probe', 1);
  r.onupgradeneeded = () => {
    r.result.createObjectStore('pages');
    r.result.createObjectStore('map');
  };
  return req(r);
}
async function put(db, kv, durability = 'strict') {
  const tx = db.transaction(['pages', 'map'], 'readwrite', { durability });
  for (const [k, v] of kv) tx.objectStore(k.startsWith('map') ? 'map' : 'pages').put(v, k);
  await done(tx);
}
async function get(db, k, store = 'pages') {
  return req(db.transaction(store).objectStore(store).get(k));
}
async function est() {
  try {
    const e = await navigator.storage.estimate();
    return { usage: e.usage, quota: e.quota, details: e.usageDetails };
  } catch (e) {
    return `ERR ${e}`;
  }
}
const frs = () => new FileReaderSync();
async function step(name, fn) {
  try {
    R[name] = await fn();
  } catch (e) {
    R[name] = `ERR ${e && `${e.name}: ${e.message}`}`;
  }
}

async function writePhase() {
  R.has = {
    indexedDB: typeof indexedDB,
    FileReaderSync: typeof FileReaderSync,
    storageEstimate: typeof navigator.storage?.estimate,
  };
  await new Promise((ok) => {
    const r = indexedDB.deleteDatabase('probe');
    r.onsuccess = r.onerror = r.onblocked = ok;
  });
  const db = await openDb();
  await step('estimate_before', est);
  await step('write_small', async () => {
    const t = now();
    await put(db, [
      ['b4k', new Blob([fill(4096, 0)])],
      ['b64k', new Blob([fill(65536, 0)])],
      ['map', { v: 1 }],
    ]);
    return { ms: +(now() - t).toFixed(2) };
  });
  await step('write_64m', async () => {
    const parts = [];
    for (let i = 0; i < 64; i++) parts.push(fill(MB, i * MB));
    const b = new Blob(parts);
    parts.length = 0;
    const t = now();
    await put(db, [['b64m', b]]);
    return { ms: +(now() - t).toFixed(1), size: b.size };
  });
  await step('estimate_after_64m', est);
  await step('same_session_read', async () => {
    const b = await get(db, 'b4k');
    const ab = frs().readAsArrayBuffer(b);
    return { type: Object.prototype.toString.call(b), size: b.size, ok: ab.byteLength === 4096 && check(ab, 0) };
  });
  // (c) commit latency: n new 4 KB blobs + one map record, one strict transaction
  await step('commit_ms', async () => {
    const out = {};
    let key = 0;
    for (const n of [1, 16, 256]) {
      const times = [];
      for (let rep = 0; rep < 20; rep++) {
        const kv = [];
        for (let i = 0; i < n; i++) {
          kv.push([`c${key++}`, new Blob([fill(4096, key * 4096)])]);
        }
        kv.push(['map', { v: key, n }]);
        const t = now();
        await put(db, kv, 'strict');
        times.push(now() - t);
      }
      out[`n${n}`] = { median: med(times), p90: p90(times), min: +Math.min(...times).toFixed(2) };
    }
    // relaxed for comparison (n=16)
    const times = [];
    for (let rep = 0; rep < 20; rep++) {
      const kv = [];
      for (let i = 0; i < 16; i++) kv.push([`r${key++}`, new Blob([fill(4096, 0)])]);
      kv.push(['map', { v: key }]);
      const t = now();
      await put(db, kv, 'relaxed');
      times.push(now() - t);
    }
    out.relaxed_n16 = { median: med(times), p90: p90(times) };
    // 256 records of 4 KB ArrayBuffer (not Blob) for comparison
    const t2 = [];
    for (let rep = 0; rep < 20; rep++) {
      const kv = [];
      for (let i = 0; i < 256; i++) kv.push([`a${key++}`, fill(4096, 0).buffer]);
      kv.push(['map', { v: key }]);
      const t = now();
      await put(db, kv, 'strict');
      t2.push(now() - t);
    }
    out.arraybuffer_n256_strict = { median: med(t2), p90: p90(t2) };
    // one packed Blob (segment) holding n pages + map record, strict
    for (const n of [16, 256]) {
      const t3 = [];
      for (let rep = 0; rep < 20; rep++) {
        const parts = [];
        for (let i = 0; i < n; i++) parts.push(fill(4096, i * 4096));
        const t = now();
        await put(
          db,
          [
            [`s${key++}`, new Blob(parts)],
            ['map', { v: key }],
          ],
          'strict',
        );
        t3.push(now() - t);
      }
      out[`one_segment_blob_n${n}_strict`] = { median: med(t3), p90: p90(t3) };
    }
    return out;
  });
  await step('estimate_after_commits', est);
  // (d) blob held across delete / overwrite
  await step('held_blob', async () => {
    await put(db, [
      ['dtest', new Blob([fill(65536, 0)])],
      ['otest', new Blob([fill(65536, 0)])],
    ]);
    const bd = await get(db, 'dtest'),
      bo = await get(db, 'otest');
    const tx = db.transaction(['pages'], 'readwrite', { durability: 'strict' });
    tx.objectStore('pages').delete('dtest');
    tx.objectStore('pages').put(new Blob([new Uint8Array(65536)]), 'otest');
    await done(tx);
    const r = {};
    try {
      r.after_delete = check(frs().readAsArrayBuffer(bd), 0);
    } catch (e) {
      r.after_delete = `ERR ${e.name}: ${e.message}`;
    }
    try {
      r.after_overwrite = check(frs().readAsArrayBuffer(bo), 0);
    } catch (e) {
      r.after_overwrite = `ERR ${e.name}: ${e.message}`;
    }
    await new Promise((ok) => setTimeout(ok, 3000));
    try {
      r.after_delete_3s = check(frs().readAsArrayBuffer(bd.slice(4096, 8192)), 4096);
    } catch (e) {
      r.after_delete_3s = `ERR ${e.name}: ${e.message}`;
    }
    try {
      r.after_overwrite_3s = check(frs().readAsArrayBuffer(bo), 0);
    } catch (e) {
      r.after_overwrite_3s = `ERR ${e.name}: ${e.message}`;
    }
    // also: delete a whole database while a blob from it is held
    const b64 = await get(db, 'b64k');
    r.keep = b64; // stash for next step (not serialised)
    return r;
  });
  db.close();
}

async function readPhase() {
  R.has = { indexedDB: typeof indexedDB, FileReaderSync: typeof FileReaderSync };
  const db = await openDb();
  await step('reopen_read', async () => {
    const b4 = await get(db, 'b4k'),
      b64 = await get(db, 'b64k'),
      big = await get(db, 'b64m');
    const r = {
      b4k: b4 && check(frs().readAsArrayBuffer(b4), 0),
      b64k: b64 && check(frs().readAsArrayBuffer(b64), 0),
      b64m_size: big?.size,
    };
    let ok = true;
    const offs = [0, 4096, 33 * MB + 12345, 64 * MB - 4096];
    for (let i = 0; i < 20; i++) offs.push(Math.floor(Math.random() * (64 * MB - 4096)));
    for (const o of offs) if (!check(frs().readAsArrayBuffer(big.slice(o, o + 4096)), o)) ok = false;
    r.b64m_slices_ok = ok;
    return r;
  });
  await step('read_latency_ms', async () => {
    const b4 = await get(db, 'b4k'),
      b64 = await get(db, 'b64k'),
      big = await get(db, 'b64m');
    const out = {};
    const f = frs();
    const run = (fn) => {
      const t = [];
      const t0 = now();
      for (let i = 0; i < 1000; i++) {
        const s = now();
        fn(i);
        t.push(now() - s);
      }
      return { median: med(t), p90: p90(t), mean_of_batch: +((now() - t0) / 1000).toFixed(4) };
    };
    out.whole_4k_blob = run(() => f.readAsArrayBuffer(b4));
    out.slice_4k_of_64k = run((i) => {
      const o = (i % 16) * 4096;
      f.readAsArrayBuffer(b64.slice(o, o + 4096));
    });
    out.whole_64k_blob = run(() => f.readAsArrayBuffer(b64));
    out.slice_4k_of_64m = run(() => {
      const o = Math.floor(Math.random() * 16383) * 4096;
      f.readAsArrayBuffer(big.slice(o, o + 4096));
    });
    // 1000 distinct 4 KB blobs written by the commit test (cold, each read once)
    const t0 = now();
    const tx = db.transaction('pages');
    const range = IDBKeyRange.bound('c', 'c\uffff');
    const vals = await req(tx.objectStore('pages').getAll(range, 1000));
    out.getAll_1000_blob_records_ms = +(now() - t0).toFixed(2);
    out.distinct_count = vals.length;
    const t = [];
    const t1 = now();
    for (const b of vals) {
      const s = now();
      f.readAsArrayBuffer(b);
      t.push(now() - s);
    }
    out.distinct_4k_blobs_once = { median: med(t), p90: p90(t), mean_of_batch: +((now() - t1) / vals.length).toFixed(4) };
    // async get of single record latency (for comparison)
    const tg = [];
    for (let i = 0; i < 50; i++) {
      const s = now();
      await get(db, `c${i}`);
      tg.push(now() - s);
    }
    out.async_idb_get_one = { median: med(tg), p90: p90(tg) };
    return out;
  });
  await step('estimate_read_phase', est);
  // (d) cross-session: blob got now, its DB deleted afterwards
  await step('held_blob_db_deleted', async () => {
    const b = await get(db, 'b64k');
    db.close();
    await new Promise((ok, ko) => {
      const r = indexedDB.deleteDatabase('probe');
      r.onsuccess = ok;
      r.onerror = () => ko(r.error);
      r.onblocked = () => ok();
    });
    try {
      return check(frs().readAsArrayBuffer(b), 0);
    } catch (e) {
      return `ERR ${e.name}: ${e.message}`;
    }
  });
  await step('estimate_after_delete_db', est);
}

self.onmessage = async (e) => {
  const t = now();
  try {
    if (e.data.phase === 'write') await writePhase();
    else await readPhase();
  } catch (err) {
    R.fatal = String(err?.stack || err);
  }
  if (R.held_blob?.keep) delete R.held_blob.keep;
  R.total_ms = Math.round(now() - t);
  postMessage(JSON.parse(JSON.stringify(R)));
};
