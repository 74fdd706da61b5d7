// The tables of experiments 007–009 from their committed runs: for each row
// of compare runs with builds as engines, the median of the pass medians,
// and for each build against the base, the median over passes of its
// time ÷ the base's in the same pass, and in how many passes it was slower.
//   node benches/experiments/variants-table.mjs <base engine> <results.json>…
//   node benches/experiments/variants-table.mjs /target/variants/o3/ benches/results/2026-12-01T02-3{6-58,7-56,8-54}-wasm-size.json
import { readFileSync } from 'node:fs';

const [base, ...files] = process.argv.slice(2);
const cells = new Map(); // row → engine → medians, one per pass
const engines = [];
for (const file of files) {
  for (const pass of JSON.parse(readFileSync(file, 'utf8')).results) {
    for (const r of pass.rows) {
      if (r.median === undefined || !r.engine.startsWith('/')) continue;
      if (!engines.includes(r.engine)) engines.push(r.engine);
      const row = `${r.workload} ${r.row}`;
      if (!cells.has(row)) cells.set(row, new Map());
      const byEngine = cells.get(row);
      if (!byEngine.has(r.engine)) byEngine.set(r.engine, []);
      byEngine.get(r.engine).push(r.median);
    }
  }
}
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const name = (e) => e.split('/').filter(Boolean).pop();
console.log(`| row | ${engines.map(name).join(' | ')} |`);
console.log(`|---|${engines.map(() => '---:').join('|')}|`);
for (const [row, byEngine] of cells) {
  const b = byEngine.get(base);
  if (!b) continue;
  const out = engines.map((e) => {
    const v = byEngine.get(e) ?? [];
    if (e === base || v.length !== b.length) return median(v).toFixed(2);
    const ratios = v.map((x, i) => x / b[i]);
    return `${median(v).toFixed(2)} (×${median(ratios).toFixed(2)}, ${ratios.filter((r) => r > 1).length}/${ratios.length})`;
  });
  console.log(`| ${row.replace(/\|/g, '\\|')} | ${out.join(' | ')} |`);
}
