// The packed package in Node (issue 31), imported as an app's unit tests
// import it: `import { open } from 'resq-wasm'` from an app's own module,
// which Node resolves through the package's `node` export condition. The
// same wasm and worker code run in a worker_threads Worker; databases live
// in memory. No browser: it runs once, in the Chromium pass of the e2e layer.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ENGINE, installPackedApp } from './harness.mjs';

const skip = ENGINE !== 'chromium' && 'runs once, in the Chromium pass (no browser: Node itself)';
let app;
/** The package as the app's module imports it. */
let pkg;

before(async () => {
  if (skip) return;
  ({ app } = installPackedApp());
  writeFileSync(join(app, 'uses.mjs'), "export * from 'resq-wasm';\n");
  pkg = await import(pathToFileURL(join(app, 'uses.mjs')).href);
});
after(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

test('open(":memory:") in Node: rows, values and errors as in a browser', { skip }, async () => {
  const db = await pkg.open(':memory:');
  try {
    assert.equal(db.storage, 'memory');
    await db.execute('CREATE TABLE t(i INTEGER, f REAL, s TEXT, b BLOB, n NULL)');
    const r = await db.execute('INSERT INTO t VALUES (?, ?, ?, ?, ?)', [2 ** 40, 0.5, 'héllo', new Uint8Array([1, 2, 3]), null]);
    assert.deepEqual({ ...r }, { changes: 1, lastInsertRowid: 1 });
    const [row] = await db.query('SELECT * FROM t');
    assert.deepEqual({ ...row, b: [...row.b] }, { i: 2 ** 40, f: 0.5, s: 'héllo', b: [1, 2, 3], n: null });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(await db.queryBytes('SELECT i, s FROM t'))), [{ i: 2 ** 40, s: 'héllo' }]);
    await assert.rejects(
      db.query('SELEC 1'),
      (e) => e instanceof pkg.ResqError && e.code === 'SQLITE_ERROR' && /syntax error/.test(e.message),
    );
    // The failed call changed nothing; the next one works.
    assert.deepEqual(await db.query('SELECT count(*) AS c FROM t'), [{ c: 1 }]);
  } finally {
    await db.close();
  }
});

test('a File parameter streams in, and blobStream, readBlob and blobFile read it back exactly, in Node', { skip }, async () => {
  const db = await pkg.open('media.db', { storage: 'memory' });
  try {
    const bytes = new Uint8Array(3 << 20);
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i / 4096) % 251;
    await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
    const { lastInsertRowid: id } = await db.execute('INSERT INTO media(data) VALUES (?)', [new File([bytes], 'clip.bin')]);
    const parts = [];
    for await (const chunk of db.blobStream('media', 'data', id)) parts.push(chunk);
    assert.deepEqual(Buffer.concat(parts), Buffer.from(bytes));
    assert.deepEqual([...(await db.readBlob('media', 'data', id, { offset: 4096, length: 3 }))], [1, 0, 0]);
    const file = await db.blobFile('media', 'data', id);
    assert.deepEqual(Buffer.from(await file.arrayBuffer()), Buffer.from(bytes));
  } finally {
    await db.close();
  }
});

test('watch fires once per commit, and a transaction commits or rolls back whole, in Node', { skip }, async () => {
  const db = await pkg.open(':memory:');
  try {
    await db.execute('CREATE TABLE t(x)');
    const seen = [];
    let resolve;
    const first = new Promise((r) => (resolve = r));
    const sub = db.watch('SELECT count(*) AS c FROM t', [], (rows) => {
      seen.push(rows[0].c);
      resolve();
    });
    await first;
    await db.transaction(async (tx) => {
      await tx.execute('INSERT INTO t VALUES (1)');
      await tx.execute('INSERT INTO t VALUES (2)');
    });
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.execute('INSERT INTO t VALUES (3)');
        throw new Error('undo');
      }),
      /undo/,
    );
    await db.execute('INSERT INTO t VALUES (4)');
    // The watch has heard of both commits once it sees 3 rows.
    while (seen.at(-1) !== 3) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(seen, [0, 2, 3]);
    sub();
  } finally {
    await db.close();
  }
});

test('an OPFS or IndexedDB name in Node is RESQ_UNSUPPORTED, naming the way out; an unknown storage RESQ_BAD_PARAM', { skip }, async () => {
  for (const options of [{}, { storage: 'opfs' }, { storage: 'idb' }]) {
    await assert.rejects(
      pkg.open('media.db', options),
      (e) => e instanceof pkg.ResqError && e.code === 'RESQ_UNSUPPORTED' && /open\(':memory:'\)/.test(e.message),
    );
  }
  // A storage no browser knows either: refused as in a browser.
  await assert.rejects(
    pkg.open('media.db', { storage: 'disk' }),
    (e) => e instanceof pkg.ResqError && e.code === 'RESQ_BAD_PARAM' && /unknown storage "disk"/.test(e.message),
  );
});

test('a Node script that never closes its database still ends once its calls are answered', { skip }, () => {
  const script = join(app, 'no-close.mjs');
  writeFileSync(
    script,
    `import { open } from 'resq-wasm';
const db = await open(':memory:');
await db.execute('CREATE TABLE t(x)');
await db.execute('INSERT INTO t VALUES (7)');
console.log(JSON.stringify(await db.query('SELECT x FROM t')));
`,
  );
  const r = spawnSync(process.execPath, [script], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.signal, null, `the script was still running after 30 s: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '[{"x":7}]');
});
