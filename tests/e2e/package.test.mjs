// The npm package as a user gets it: what the tarball holds, that a page
// importing 'resq-wasm' from the installed folder works (and never loads the
// wasm itself), and that TypeScript sees the public types.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

const repo = resolve(import.meta.dirname, '../..');
const tsc = join(repo, 'node_modules/.bin/tsc');

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

test('the tarball holds what a user needs, and nothing from the repository besides', () => {
  const files = execFileSync('tar', ['tzf', h.tarball], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((f) => f.replace(/^package\//, ''));
  const needed = [
    'package.json',
    'README.md',
    'LICENSE',
    'CHANGELOG.md',
    'THIRD_PARTY_NOTICES.md',
    'pkg/index.js',
    'pkg/index.d.ts',
    'pkg/worker.js',
    'pkg/worker.d.ts',
    'pkg/broker.js',
    'pkg/broker.d.ts',
    'pkg/wasm/resq_wasm.js',
    'pkg/wasm/resq_wasm.d.ts',
    'pkg/wasm/resq_wasm_bg.wasm',
  ];
  for (const f of needed) assert.ok(files.includes(f), `${f} is in the tarball`);
  // Every file package.json points to (main, types, exports) is there.
  const manifest = JSON.parse(readFileSync(join(h.app, 'node_modules/resq-wasm/package.json'), 'utf8'));
  const targets = [
    manifest.main,
    manifest.types,
    ...Object.values(manifest.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e))),
  ];
  for (const t of targets) assert.ok(files.includes(t.replace(/^\.\//, '')), `${t} (from package.json) is in the tarball`);
  // Every relative import of a shipped module or declaration resolves to a shipped file.
  for (const f of files.filter((f) => /\.(js|d\.ts)$/.test(f))) {
    const text = readFileSync(join(h.app, 'node_modules/resq-wasm', f), 'utf8');
    for (const [, spec] of text.matchAll(/(?:from|import\(|new URL\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = join(dirname(f), spec);
      assert.ok(
        files.includes(target) || files.includes(target.replace(/\.js$/, '.d.ts')),
        `${f} refers to ${spec}, which is in the tarball`,
      );
    }
  }
  // Nothing else: the package files, and pkg/ holding only modules, declarations and the wasm.
  const top = [...new Set(files.map((f) => f.split('/')[0]))].sort();
  assert.deepEqual(
    top,
    ['CHANGELOG.md', 'LICENSE', 'README.md', 'THIRD_PARTY_NOTICES.md', 'package.json', 'pkg'],
    'no src/, tests/, benches/, www/, scripts/ or other repository files',
  );
  assert.deepEqual(
    files.filter((f) => f.startsWith('pkg/') && !/\.(js|d\.ts|wasm)$/.test(f)),
    [],
    'pkg/ holds only .js, .d.ts and .wasm',
  );
});

test('THIRD_PARTY_NOTICES.md names every crate compiled into the wasm, SQLite’s blessing and musl’s notice', () => {
  // The crates of both wasms (the cipher build's are a superset), as cargo
  // resolves them (no cargo-about needed here:
  // scripts/notices.sh regenerates the file when this fails).
  const tree = execFileSync(
    'cargo',
    [
      'tree',
      '--locked',
      '-e',
      'normal',
      '--features',
      'cipher',
      '--target',
      'wasm32-unknown-unknown',
      '--prefix',
      'none',
      '--format',
      '{p}',
    ],
    {
      cwd: repo,
      encoding: 'utf8',
    },
  );
  const crates = [
    ...new Set(
      tree
        .trim()
        .split('\n')
        .map((line) => line.split(' ').slice(0, 2).join(' ')),
    ),
  ]
    .map((line) => line.split(' v'))
    .filter(([name]) => name !== 'resq-wasm');
  for (const name of ['sqlite-wasm-rs', 'sqlite-wasm-vfs', 'wasm-bindgen', 'js-sys', 'web-sys', 'base64']) {
    assert.ok(
      crates.some(([n]) => n === name),
      `cargo tree lists ${name}`,
    );
  }
  const notices = readFileSync(join(h.app, 'node_modules/resq-wasm/THIRD_PARTY_NOTICES.md'), 'utf8');
  const missing = crates.filter(([name, version]) => !notices.includes(`\n| ${name} | ${version} |`)).map((c) => c.join(' '));
  assert.deepEqual(missing, [], 'every crate of the wasm, at its version, is in the notices: run `bash scripts/notices.sh`');
  for (const line of [
    'The author disclaims copyright to this source code.',
    'May you do good and not evil.',
    'Copyright © 2005-2020 Rich Felker, et al.',
  ]) {
    assert.ok(notices.includes(line), `the notices hold "${line}"`);
  }
});

// The optional entries, and the peer each is for (store has none).
const OPTIONAL = { kysely: 'kysely', drizzle: 'drizzle-orm', store: null, react: 'react', vue: 'vue' };
const PEERS = Object.values(OPTIONAL).filter(Boolean);

test('the query-builder and framework entries ship as their own exports, with types, for optional peers', () => {
  const files = execFileSync('tar', ['tzf', h.tarball], { encoding: 'utf8' }).trim().split('\n');
  const installed = JSON.parse(readFileSync(join(h.app, 'node_modules/resq-wasm/package.json'), 'utf8'));
  for (const entry of Object.keys(OPTIONAL)) {
    for (const f of [`pkg/${entry}.js`, `pkg/${entry}.d.ts`]) assert.ok(files.includes(`package/${f}`), `${f} is in the tarball`);
    assert.deepEqual(installed.exports[`./${entry}`], { types: `./pkg/${entry}.d.ts`, default: `./pkg/${entry}.js` });
  }
  assert.deepEqual(Object.keys(installed.peerDependencies).sort(), [...PEERS].sort());
  assert.deepEqual(installed.peerDependenciesMeta, Object.fromEntries(PEERS.map((p) => [p, { optional: true }])));
  assert.deepEqual(installed.dependencies, undefined, 'no dependency a user must install');
  const app = readdirSync(join(h.app, 'node_modules'));
  assert.deepEqual(
    PEERS.filter((p) => app.includes(p)),
    [],
    'installing resq-wasm installs no peer',
  );
  const pinned = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')).devDependencies;
  for (const peer of PEERS) assert.match(pinned[peer], /^\d+\.\d+\.\d+$/, `${peer} is pinned exactly for the tests`);
});

test("the core entries' import graph reaches no query-builder or framework code", () => {
  const pkg = join(h.app, 'node_modules/resq-wasm/pkg');
  // Every module index.js imports, statically or not, and those they
  // import; worker.js and broker.js, which open() starts, likewise.
  const seen = new Set();
  const bare = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(
      /\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s*['"]([^'"]+)['"]|new URL\(\s*['"]([^'"]+)['"]/g,
    )) {
      const specifier = m[1] ?? m[2] ?? m[3] ?? m[4];
      const target = join(dirname(file), specifier);
      // A module is read in turn; another file (the wasm) is only noted.
      if (!specifier.startsWith('.')) bare.add(specifier);
      else if (target.endsWith('.js')) visit(target);
      else seen.add(target);
    }
  };
  for (const entry of ['index.js', 'worker.js', 'broker.js']) visit(join(pkg, entry));
  const reached = [...seen].map((f) => relative(pkg, f)).sort();
  // worker.js is one file (scripts/build.sh bundles it) that names the wasm.
  assert.ok(reached.includes('database.js') && reached.includes('wasm/resq_wasm_bg.wasm'), `the walk follows imports: ${reached}`);
  const optional = new RegExp(`^(${Object.keys(OPTIONAL).join('|')})\\.js$`);
  assert.deepEqual(
    reached.filter((f) => optional.test(f)),
    [],
  );
  assert.deepEqual(
    [...bare].filter((s) => PEERS.some((p) => s === p || s.startsWith(`${p}/`))),
    [],
  );
});

test('nothing test-only ships: no test hooks or benchmark probes in the installed package, its wasm exports or its types', async () => {
  const pkg = join(h.app, 'node_modules/resq-wasm/pkg');
  const text = execFileSync('find', [pkg, '-type', 'f', '(', '-name', '*.js', '-o', '-name', '*.d.ts', ')'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  // inTransaction as a whole name: Kysely's driver API has beginTransaction.
  const hooks = [
    'crashForTests',
    'crashWorkerForTests',
    /\binTransaction\b/,
    'wasmMemoryBytes',
    'opfsBytesWritten',
    'stats()',
    "'stats'",
    'SyncAccessHandle.prototype',
    '__probe',
    'ForTests',
  ];
  for (const hook of hooks) assert.ok(typeof hook === 'string' ? !text.includes(hook) : !hook.test(text), `${hook} is not in the package`);
  const wasm = await WebAssembly.compile(readFileSync(join(pkg, 'wasm/resq_wasm_bg.wasm')));
  const exports = WebAssembly.Module.exports(wasm).map((e) => e.name);
  assert.ok(exports.includes('connection_query'), 'the export list is read');
  const found = exports.filter((n) => /test|crash|stats|memory_bytes|in_transaction/i.test(n));
  assert.deepEqual(found, [], 'no test-only wasm export');
});

test('no eval, new Function or string timer in the shipped JavaScript: it runs under a CSP without unsafe-eval', () => {
  const pkg = join(h.app, 'node_modules/resq-wasm/pkg');
  const files = execFileSync('find', [pkg, '-type', 'f', '-name', '*.js'], { encoding: 'utf8' }).trim().split('\n');
  assert.ok(
    files.some((f) => f.endsWith('/wasm/resq_wasm.js')),
    'the wasm glue is read too',
  );
  const found = [];
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    // (wasm-bindgen's glue has `Function(${name})` inside a template string, for debug output: not a call.)
    for (const m of text.matchAll(
      /\beval\s*\(|\bnew\s+Function\b|(?<![\w.$`])Function\s*\(\s*['"`]|\bset(?:Timeout|Interval)\(\s*['"`]/g,
    )) {
      found.push(`${f.slice(pkg.length + 1)}: ${m[0]}`);
    }
  }
  assert.deepEqual(found, []);
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
  assert.deepEqual(
    got.afterOpen.filter((p) => p.endsWith('.wasm')),
    [],
    'the page never fetches the .wasm',
  );
  await page.close();
});

/** Runs the repo's tsc on `file` in the installed app folder, as a bundler user would. */
function typecheck(file) {
  const args = [
    '--noEmit',
    '--strict',
    '--target',
    'ES2022',
    '--module',
    'ES2022',
    '--moduleResolution',
    'bundler',
    '--lib',
    'ES2022,DOM',
    file,
  ];
  return spawnSync(tsc, args, { cwd: h.app, encoding: 'utf8' });
}

test('TypeScript: every public method and type (tests/types/usage.ts) type-checks, and wrong uses are errors', () => {
  copyFileSync(resolve(import.meta.dirname, '../types/usage.ts'), join(h.app, 'usage.ts'));
  const r = typecheck('usage.ts');
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
