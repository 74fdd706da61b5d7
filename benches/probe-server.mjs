// The benchmarks' server: the repository, with databases run in the probe
// worker (the package's worker plus counters and switches the benchmarks
// read: bytes written to OPFS, wasm memory, whether calls are recorded);
// the package itself has no such hooks. `mounts` as scripts/serve.mjs takes.

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { serve } from '../scripts/serve.mjs';

export function serveWithProbe(root, mounts = {}) {
  const probe = readFileSync(resolve(root, 'tests/e2e/probe-worker.js'), 'utf8');
  return serve(root, 0, {
    isolated: true,
    overrides: {
      '/pkg/worker.js': `const PROBE_OPTIONS = {};\n${probe}`,
      '/pkg/worker-real.js': readFileSync(resolve(root, 'pkg/worker.js'), 'utf8'),
    },
    mounts,
  });
}
