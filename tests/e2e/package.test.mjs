// The npm package as a user gets it: what the tarball holds, that a page
// importing 'resq-wasm' from the installed folder works (and never loads the
// wasm itself), and that TypeScript sees the public types.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

const tsc = resolve(import.meta.dirname, '../../node_modules/.bin/tsc');

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

test('the tarball holds the wasm, the page client, its types and the worker', () => {
  const files = execFileSync('tar', ['tzf', h.tarball], { encoding: 'utf8' }).trim().split('\n');
  for (const f of ['pkg/wasm/resq_wasm_bg.wasm', 'pkg/wasm/resq_wasm.js', 'pkg/index.js', 'pkg/index.d.ts', 'pkg/worker.js', 'package.json']) {
    assert.ok(files.includes(`package/${f}`), `${f} is in the tarball`);
  }
  const stray = files.filter((f) => /^package\/(src|target|tests|benches|www|node_modules)\//.test(f));
  assert.deepEqual(stray, [], 'nothing but pkg/ and package files');
});

test('the kysely and drizzle entries ship as their own exports, with types, for optional peers', () => {
  const files = execFileSync('tar', ['tzf', h.tarball], { encoding: 'utf8' }).trim().split('\n');
  for (const f of ['pkg/kysely.js', 'pkg/kysely.d.ts', 'pkg/drizzle.js', 'pkg/drizzle.d.ts']) assert.ok(files.includes(`package/${f}`), `${f} is in the tarball`);
  const installed = JSON.parse(readFileSync(join(h.app, 'node_modules/resq-wasm/package.json'), 'utf8'));
  assert.deepEqual(installed.exports['./kysely'], { types: './pkg/kysely.d.ts', default: './pkg/kysely.js' });
  assert.deepEqual(installed.exports['./drizzle'], { types: './pkg/drizzle.d.ts', default: './pkg/drizzle.js' });
  assert.deepEqual(Object.keys(installed.peerDependencies).sort(), ['drizzle-orm', 'kysely']);
  assert.deepEqual(installed.peerDependenciesMeta, { 'drizzle-orm': { optional: true }, kysely: { optional: true } });
  assert.deepEqual(installed.dependencies, undefined, 'no dependency a user must install');
  const app = readdirSync(join(h.app, 'node_modules'));
  assert.ok(!app.includes('kysely') && !app.includes('drizzle-orm'), 'installing resq-wasm installs neither peer');
  const pinned = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')).devDependencies;
  for (const peer of ['kysely', 'drizzle-orm']) assert.match(pinned[peer], /^\d+\.\d+\.\d+$/, `${peer} is pinned exactly for the tests`);
});

test("the core entries' import graph reaches no kysely or drizzle code", () => {
  const pkg = join(h.app, 'node_modules/resq-wasm/pkg');
  // Every module index.js imports, statically or not, and those they
  // import; worker.js and broker.js, which open() starts, likewise.
  const seen = new Set();
  const bare = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s*['"]([^'"]+)['"]|new URL\(\s*['"]([^'"]+)['"]/g)) {
      const specifier = m[1] ?? m[2] ?? m[3] ?? m[4];
      if (specifier.startsWith('.')) visit(join(dirname(file), specifier));
      else bare.add(specifier);
    }
  };
  for (const entry of ['index.js', 'worker.js', 'broker.js']) visit(join(pkg, entry));
  const reached = [...seen].map((f) => relative(pkg, f)).sort();
  assert.ok(reached.includes('database.js') && reached.includes('wasm/resq_wasm.js'), `the walk follows imports: ${reached}`);
  assert.deepEqual(reached.filter((f) => /kysely|drizzle/.test(f)), []);
  assert.deepEqual([...bare].filter((s) => /kysely|drizzle/.test(s)), []);
});

test('nothing test-only ships: no test hooks or benchmark probes in the installed package, its wasm exports or its types', async () => {
  const pkg = join(h.app, 'node_modules/resq-wasm/pkg');
  const text = execFileSync('find', [pkg, '-type', 'f', '(', '-name', '*.js', '-o', '-name', '*.d.ts', ')'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  // inTransaction as a whole name: Kysely's driver API has beginTransaction.
  const hooks = ['crashForTests', 'crashWorkerForTests', /\binTransaction\b/, 'wasmMemoryBytes', 'opfsBytesWritten', 'stats()', "'stats'", 'SyncAccessHandle.prototype', '__probe', 'ForTests'];
  for (const hook of hooks) assert.ok(typeof hook === 'string' ? !text.includes(hook) : !hook.test(text), `${hook} is not in the package`);
  const wasm = await WebAssembly.compile(readFileSync(join(pkg, 'wasm/resq_wasm_bg.wasm')));
  const exports = WebAssembly.Module.exports(wasm).map((e) => e.name);
  assert.ok(exports.includes('connection_query'), 'the export list is read');
  const found = exports.filter((n) => /test|crash|stats|memory_bytes|in_transaction/i.test(n));
  assert.deepEqual(found, [], 'no test-only wasm export');
});

test('a page imports resq-wasm from the installed folder and runs SQLite', async () => {
  const got = await inPage(h.page, async (api) => {
    const db = await api.open(':memory:');
    const [row] = await db.query('SELECT sqlite_version() AS version, 1 + 1 AS two');
    await db.close();
    return {
      exports: ['open', 'transfer', 'ResqError'].map((k) => [k, typeof api[k]]),
      errorIsError: Object.getPrototypeOf(api.ResqError.prototype) === Error.prototype,
      row,
    };
  });
  assert.deepEqual(got.exports, [
    ['open', 'function'],
    ['transfer', 'function'],
    ['ResqError', 'function'],
  ]);
  assert.equal(got.errorIsError, true);
  assert.match(got.row.version, /^3\.\d+\.\d+$/);
  assert.equal(got.row.two, 2);
});

test('the page itself never loads the SQLite wasm: the worker does', async () => {
  const page = await h.newPage();
  const got = await page.evaluate(async () => {
    // Count every way the main thread could compile or instantiate wasm.
    const calls = [];
    for (const k of ['compile', 'compileStreaming', 'instantiate', 'instantiateStreaming']) {
      const original = WebAssembly[k];
      WebAssembly[k] = function (...args) {
        calls.push(k);
        return original.apply(this, args);
      };
    }
    const paths = () => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname);
    const { open } = await import('resq-wasm');
    const afterImport = paths();
    const db = await open(':memory:');
    const [row] = await db.query('SELECT 42 AS answer');
    await db.close();
    return { calls, afterImport, afterOpen: paths(), row };
  });
  assert.deepEqual(got.row, { answer: 42 }, 'the worker ran SQLite');
  assert.deepEqual(got.calls, [], 'no WebAssembly compile or instantiate on the main thread');
  assert.deepEqual(
    got.afterImport.filter((p) => p.includes('/pkg/wasm/') || p.endsWith('/worker.js')),
    [],
    'importing the package loads nothing of the worker',
  );
  assert.deepEqual(got.afterOpen.filter((p) => p.endsWith('.wasm')), [], 'the page never fetches the .wasm');
  await page.close();
});

/** Runs the repo's tsc on `file` in the installed app folder, as a bundler user would. */
function typecheck(file) {
  const args = ['--noEmit', '--strict', '--target', 'ES2022', '--module', 'ES2022', '--moduleResolution', 'bundler', '--lib', 'ES2022,DOM', file];
  return spawnSync(tsc, args, { cwd: h.app, encoding: 'utf8' });
}

test('TypeScript: the public API type-checks, and wrong uses are errors', () => {
  writeFileSync(
    join(h.app, 'uses.ts'),
    `import { open, ResqError, transfer, type Database, type Row } from 'resq-wasm';

export async function uses(): Promise<void> {
  const db: Database = await open('app.db', { storage: 'opfs', blobTransferThreshold: 64 * 1024 });
  const mem: Database = await open(':memory:', { storage: 'memory' });
  const { changes, lastInsertRowid } = await db.execute('INSERT INTO t(a, b) VALUES (?, ?)', ['x', 1]);
  const n: number = changes;
  const id: number | bigint = lastInsertRowid;
  const rows: Row[] = await db.query('SELECT * FROM t WHERE a = :a', { a: 'x' });
  const cell: null | number | bigint | string | Uint8Array = rows[0].a;
  const typed = await mem.query<{ id: number; name: string }>('SELECT id, name FROM t');
  const name: string = typed[0].name;
  const json: Uint8Array = await db.queryBytes('SELECT ?', [new Uint8Array(4)]);
  await db.executeBatch('INSERT INTO t(a) VALUES (?)', [[1], [2n], [null], [true], ['s'], [new Int16Array(2)], [new ArrayBuffer(8)], [transfer(new Uint8Array(2))]]);
  const total: number = await db.transaction(async (tx) => {
    await tx.execute('DELETE FROM t');
    await tx.executeBatch('INSERT INTO t(a) VALUES (?)', [[1]]);
    const r: Row[] = await tx.query('SELECT 1');
    return r.length;
  });
  try {
    await db.execute('SELEC 1');
  } catch (e) {
    if (e instanceof ResqError) {
      const code: string = e.code;
      const errno: number | undefined = e.errno;
      const isError: Error = e;
      if (e.code === 'RESQ_LOCKED' || e.code === 'SQLITE_CONSTRAINT_UNIQUE') console.log(code, errno, isError);
      // @ts-expect-error: not one of API.md's codes
      if (e.code === 'NOT_A_CODE') console.log(code);
    }
  }
  await db.close();
  console.log(n, id, cell, name, json, total);

  // @ts-expect-error: undefined is not a SQLite value
  await db.query('SELECT ?', [undefined]);
  // @ts-expect-error: storage is 'opfs' or 'memory'
  await open('x.db', { storage: 'disk' });
  // @ts-expect-error: lastInsertRowid may be a bigint
  const onlyNumber: number = lastInsertRowid;
  // @ts-expect-error: a cell is not always a string
  const onlyString: string = rows[0].a;
  // @ts-expect-error: executeBatch takes a list of parameter sets
  await db.executeBatch('INSERT INTO t(a) VALUES (?)', [1, 2]);
  // @ts-expect-error: transfer takes bytes
  transfer('text');
  console.log(onlyNumber, onlyString);
}
`,
  );
  const r = typecheck('uses.ts');
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});

test('TypeScript: the checker does report a wrong use (the check above is not vacuous)', () => {
  writeFileSync(
    join(h.app, 'wrong.ts'),
    `import { open } from 'resq-wasm';
export async function wrong(): Promise<number> {
  const db = await open('app.db');
  const rows = await db.queryBytes('SELECT 1');
  return rows;
}
`,
  );
  const r = typecheck('wrong.ts');
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /wrong\.ts\(5,3\): error TS2322: Type 'Uint8Array.*' is not assignable to type 'number'/);
});
