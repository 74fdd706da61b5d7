// Experiment 034: where a new name's cold start goes, phase by phase, in
// builds that log their worker's open (`034-open-phases.patch`, applied
// to each build's src/js/worker.ts before it is built into
// target/variants/). The builds take turns, the order flipped each
// sample. The worker logs each phase's time since it started ("OPENTIMES
// …"); benches/run.mjs prints the worker's console with the page's, so
// the figures are read from its output, each OPENTIMES line followed by
// its sample's "COLD <build> <ms>" (open → first answer).
export async function run({ builds, n = 11 }) {
  const mods = {};
  for (const b of builds) mods[b] = await import(`${b}index.js`);
  for (let i = 0; i < n; i++)
    for (const b of i % 2 ? [...builds].reverse() : builds) {
      const t0 = performance.now();
      const db = await mods[b].open(`phases-${Math.random().toString(36).slice(2, 8)}.db`);
      await db.query('SELECT 1 AS x');
      console.log('COLD', b, (performance.now() - t0).toFixed(1));
      await db.close();
    }
  return [];
}
