// Packs the repo and installs the tarball into an app folder, once for a
// whole `npm test` run, and prints the folder: scripts/test.sh passes it to
// the e2e layer as RESQ_PACKED_APP, and each test file's app is a copy of
// it (harness.mjs, installPackedApp).

import { installPackedApp } from './harness.mjs';

delete process.env.RESQ_PACKED_APP;
console.log(installPackedApp().app);
