// `npm run stress`: the full forms of the reliability suites, with their
// figures written to tests/stress/results/latest.md (and a dated copy).
// The same test files run in `npm test` in reduced form; here environment
// variables make them long:
//   power loss   RESQ_POWERLOSS_IMAGES   (images of one recorded workload)
//   kill trials  RESQ_KILL_TRIALS
//   model check  RESQ_MODEL_OPS          (per storage: OPFS and memory)
//   soak         RESQ_SOAK_OPS
// `node tests/stress/run.mjs [name…]` runs only the named suites.

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const SUITES = {
  powerloss: { file: 'tests/e2e/powerloss.test.mjs', env: { RESQ_POWERLOSS_IMAGES: '3000' } },
  quota: { file: 'tests/e2e/quota.test.mjs', env: {} },
  soak: { file: 'tests/e2e/soak.test.mjs', env: { RESQ_SOAK_OPS: '20000' } },
  kill: { file: 'tests/e2e/kill.test.mjs', env: { RESQ_KILL_TRIALS: '300' } },
  model: { file: 'tests/e2e/model.test.mjs', env: { RESQ_MODEL_OPS: '50000' } },
};

const chosen = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(SUITES);
const sections = [];
let failed = false;
for (const name of chosen) {
  const { file, env } = SUITES[name];
  const t0 = Date.now();
  console.log(`== ${name}: ${file} ${JSON.stringify(env)}`);
  const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=tap', file], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const lines = r.stdout.split('\n');
  const results = lines.filter((l) => /^(not )?ok \d+ - /.test(l)).map((l) => l.replace(/^(not ok|ok) \d+ - /, (_, s) => (s === 'ok' ? '✔ ' : '✖ ')));
  // The tests' own figures: their `t.diagnostic` lines (TAP comments), not
  // the runner's summary or subtest headers.
  const summary = /^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) \d/;
  const figures = lines.filter((l) => /^\s*# /.test(l) && !summary.test(l) && !/# Subtest:/.test(l)).map((l) => l.trim().slice(2));
  const minutes = ((Date.now() - t0) / 60000).toFixed(1);
  failed ||= r.status !== 0;
  console.log(results.join('\n'));
  console.log(figures.join('\n'));
  sections.push(`## ${name} (${minutes} min, ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ') || 'as in npm test'})\n\n${results.map((l) => `- ${l}`).join('\n')}\n\n${figures.map((l) => `    ${l}`).join('\n')}\n`);
  if (r.status !== 0) console.log(r.stdout.slice(-4000), r.stderr.slice(-2000));
  mkdirSync(resolve(root, 'tests/stress/results'), { recursive: true });
  writeFileSync(resolve(root, `tests/stress/results/${name}.tap`), r.stdout);
}
const date = new Date().toISOString();
const md = `# Stress run\n\n${date} · \`npm run stress\` on this machine (headless Chromium, 2 cores). Raw output: the test files' own diagnostics.\n\n${sections.join('\n')}`;
const out = resolve(root, 'tests/stress/results');
mkdirSync(out, { recursive: true });
writeFileSync(resolve(out, 'latest.md'), md);
writeFileSync(resolve(out, `${date.slice(0, 19).replace(/:/g, '-')}.md`), md);
console.log(`\nwrote tests/stress/results/latest.md`);
process.exit(failed ? 1 : 0);
