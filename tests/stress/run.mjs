// `npm run stress`: the full forms of the reliability suites, with their
// figures written to tests/stress/results/latest.md (and a dated copy).
// The same test files run in `npm test` in reduced form; here environment
// variables make them long:
//   power loss   RESQ_POWERLOSS_IMAGES   (images of one recorded workload)
//   power loss,  RESQ_POWERLOSS_IDB_RUNS (workloads recorded, each cut at
//   IndexedDB                             every point)
//   kill trials  RESQ_KILL_TRIALS        (all in Chromium; those in
//                                         IndexedDB again in Firefox)
//   model check  RESQ_MODEL_OPS          (per storage: OPFS and memory)
//   isolation    RESQ_ISOLATION_OPS      (in all, over four sessions in two tabs)
//   failover     RESQ_FAILOVERS          (leaders ended in each model check)
//   soak         RESQ_SOAK_OPS
//   hostile      (as in npm test: every class, each once)
//   backup       RESQ_BACKUP_MB          (MB of media exported and imported
//                                         back with bounded memory)
//   idb memory   RESQ_IDB_MEMORY_MB      (MiB of a File stored in IndexedDB
//                                         storage and read back, with wasm
//                                         memory bounded; Firefox and WebKit)
//   fuzz         PROPTEST_CASES          (cases per property of the core's
//                                         decoders and JSON encoder)
// `node tests/stress/run.mjs [name…]` runs only the named suites. Each
// suite's section is kept in results/<name>.md (with its raw TAP beside
// it), and latest.md is put together from the sections after every suite,
// so a partial run updates its own sections and keeps the others.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
// A suite's `file` is one test file or a list of them.
const SUITES = {
  powerloss: {
    file: 'tests/e2e/powerloss.test.mjs',
    env: { RESQ_POWERLOSS_IMAGES: '10000', RESQ_POWERLOSS_PAGE_SIZES: '4096,8192,65536' },
  },
  // Cut at every point: about 58 images a workload, so 175 workloads.
  'powerloss-idb': { file: 'tests/e2e/powerloss-idb.test.mjs', env: { RESQ_POWERLOSS_IDB_RUNS: '175' } },
  quota: { file: 'tests/e2e/quota.test.mjs', env: {} },
  soak: { file: 'tests/e2e/soak.test.mjs', env: { RESQ_SOAK_OPS: '20000' } },
  kill: { file: ['tests/e2e/kill.test.mjs', 'tests/e2e/kill-idb.test.mjs'], env: { RESQ_KILL_TRIALS: '300' } },
  // The IndexedDB trials again in Firefox (its content processes killed).
  'kill-idb-firefox': { file: 'tests/e2e/kill-idb.test.mjs', env: { RESQ_ENGINE: 'firefox', RESQ_KILL_TRIALS: '300' } },
  // Reopens at 0.5% (npm test: 3%): each starts a worker, and 100,000
  // operations at 3% would not fit the 20 minutes.
  model: { file: 'tests/e2e/model.test.mjs', env: { RESQ_MODEL_OPS: '50000', RESQ_MODEL_REOPEN: '0.005' } },
  isolation: { file: 'tests/e2e/isolation.test.mjs', env: { RESQ_ISOLATION_OPS: '100000' } },
  hostile: { file: ['tests/e2e/hostile.test.mjs', 'tests/e2e/hostile-misuse.test.mjs'], env: {} },
  // npm test: 10 in each model check, in every engine.
  failover: { file: 'tests/e2e/failover.test.mjs', env: { RESQ_FAILOVERS: '40' } },
  // npm test: 256 MB (the 1 GB form takes about three minutes here).
  backup: { file: 'tests/e2e/backup.test.mjs', env: { RESQ_BACKUP_MB: '1024' } },
  // npm test: 128 MiB in each engine; 1 GiB not in Chromium (CHROMIUM_IDB_LARGE_VALUES, harness.mjs).
  'idb-memory-firefox': { file: 'tests/e2e/idb-memory.test.mjs', env: { RESQ_ENGINE: 'firefox', RESQ_IDB_MEMORY_MB: '1024' } },
  'idb-memory-webkit': { file: 'tests/e2e/idb-memory.test.mjs', env: { RESQ_ENGINE: 'webkit', RESQ_IDB_MEMORY_MB: '1024' } },
  fuzz: { cargo: ['test', '--test', 'codec_props'], env: { PROPTEST_CASES: '20000' } },
};

/** cargo test's report as TAP lines, with the count of generated inputs as a diagnostic. */
function cargoTap(stdout, env) {
  const tests = [...stdout.matchAll(/^test (\S+) \.\.\. (ok|FAILED)$/gm)];
  const properties = tests.filter(([, name]) => name !== 'the_parser_is_strict').length;
  const cases = Number(env.PROPTEST_CASES);
  return [
    ...tests.map(([, name, r], i) => `${r === 'ok' ? 'ok' : 'not ok'} ${i + 1} - ${name}`),
    `# properties ${properties}, cases per property ${cases}, inputs generated ${properties * cases}, failures ${tests.filter(([, , r]) => r !== 'ok').length}`,
  ].join('\n');
}

const out = resolve(root, 'tests/stress/results');

/** Results and figures of one suite's TAP output, as a latest.md section. */
function section(name, tap, when, minutes) {
  const lines = tap.split('\n');
  const results = lines
    .filter((l) => /^(not )?ok \d+ - /.test(l))
    .map((l) => l.replace(/^(not ok|ok) \d+ - /, (_, s) => (s === 'ok' ? '✔ ' : '✖ ')));
  // The tests' own figures: their `t.diagnostic` lines (TAP comments), not
  // the runner's summary or subtest headers.
  const summary = /^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) \d/;
  const figures = lines.filter((l) => /^\s*# /.test(l) && !summary.test(l) && !/# Subtest:/.test(l)).map((l) => l.trim().slice(2));
  const env =
    Object.entries(SUITES[name].env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ') || 'as in npm test';
  const passed = results.filter((l) => l.startsWith('✔')).length;
  const tally = `${results.length} tests: ${passed} passed, ${results.length - passed} failed`;
  return `## ${name}\n\n${when} · ${minutes} · ${env} · ${tally}\n\n${results.map((l) => `- ${l}`).join('\n')}\n\n${figures.map((l) => `    ${l}`).join('\n')}\n`;
}

function writeLatest() {
  const all = Object.keys(SUITES)
    .filter((n) => existsSync(resolve(out, `${n}.md`)))
    .map((n) => readFileSync(resolve(out, `${n}.md`), 'utf8'));
  writeFileSync(
    resolve(out, 'latest.md'),
    `# Stress run\n\n\`npm run stress\` on this machine (headless Chromium, 2 cores): each suite's latest full run, with the test files' own diagnostics. Raw TAP: \`<suite>.tap\` beside this file.\n\n${all.join('\n')}`,
  );
}

// `--render`: rebuild the sections from the saved TAP, running nothing.
if (process.argv[2] === '--render') {
  for (const name of Object.keys(SUITES).filter((n) => existsSync(resolve(out, `${n}.tap`)))) {
    writeFileSync(
      resolve(out, `${name}.md`),
      section(name, readFileSync(resolve(out, `${name}.tap`), 'utf8'), `rendered from ${name}.tap`, 'time not recorded'),
    );
  }
  writeLatest();
  process.exit(0);
}

const chosen = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(SUITES);
let failed = false;
for (const name of chosen) {
  const { file, cargo, env } = SUITES[name];
  const t0 = Date.now();
  console.log(`== ${name}: ${file ? [file].flat().join(' ') : `cargo ${cargo.join(' ')}`} ${JSON.stringify(env)}`);
  const [command, args] = cargo
    ? ['cargo', cargo]
    : [process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=tap', ...[file].flat()]];
  const r = spawnSync(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  failed ||= r.status !== 0;
  if (cargo) r.stdout = cargoTap(r.stdout, env);
  const text = section(name, r.stdout, new Date().toISOString(), `${((Date.now() - t0) / 60000).toFixed(1)} min`);
  console.log(text);
  if (r.status !== 0) console.log(r.stdout.slice(-4000), r.stderr.slice(-2000));
  mkdirSync(out, { recursive: true });
  writeFileSync(resolve(out, `${name}.tap`), r.stdout);
  writeFileSync(resolve(out, `${name}.md`), text);
  writeLatest();
}
console.log(`\nwrote tests/stress/results/latest.md`);
process.exit(failed ? 1 : 0);
