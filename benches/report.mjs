// Turns a compare run (benches/results/<date>-compare.json) into
// benches/results/latest.md (tables) and one SVG chart per workload group.
// Plain SVG written from the measured numbers; nothing drawn by hand.
//
//   node benches/report.mjs [results.json]
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';

const dir = resolve(import.meta.dirname, 'results');
const file =
  process.argv[2] ??
  resolve(
    dir,
    readdirSync(dir)
      .filter((f) => f.endsWith('-compare.json'))
      .sort()
      .pop(),
  );
const run = JSON.parse(readFileSync(file, 'utf8'));
// One row per (workload, row, engine), with `passes`: that row from each
// pass (the passes run the engines in opposite orders) and `median`: their
// mean, which the charts draw.
const rows = [];
const index = new Map();
for (const pass of run.results) {
  for (const r of pass.rows) {
    const key = `${r.workload}|${r.row}|${r.engine}`;
    if (!index.has(key)) index.set(key, rows.push({ ...r, passes: [] }) - 1);
    rows[index.get(key)].passes.push(r);
  }
}
for (const r of rows) if (r.median !== undefined) r.median = r.passes.reduce((a, p) => a + p.median, 0) / r.passes.length;
const nPasses = run.results.length;

const PEERS = ['sqlite-wasm', 'wa-sqlite', 'sql.js'];
/** The IndexedDB rows have a table of their own, beside our OPFS path. */
const IDB = ['resq-wasm idb', 'wa-sqlite idb', 'floor: raw IndexedDB put, strict', 'floor: raw IndexedDB get'];
const IDB_FLOOR = { W1: 'floor: raw IndexedDB put, strict', W2: 'floor: raw IndexedDB get' };
/** The floor each workload's resq-wasm figure is divided by: the cost of the same bytes without a database. */
const FLOOR = {
  W1: 'floor: raw OPFS write + flush',
  W2: 'floor: raw OPFS read',
  W3: 'floor: postMessage clone of the row objects',
  W6: 'floor: bare worker',
};
const COLORS = {
  'resq-wasm': '#2f6fed',
  'resq-wasm queryBytes': '#7aa5f5',
  'sqlite-wasm': '#e07b39',
  'wa-sqlite': '#3a9e6e',
  'sql.js': '#9b59b6',
};
const GROUPS = [
  ['W1', 'W1 · single-row BLOB INSERT (OPFS; sql.js in memory)'],
  ['W2', 'W2 · SELECT one BLOB by primary key into a Uint8Array'],
  ['W3', 'W3 · SELECT rows of (INTEGER, REAL, 50-char TEXT, 64 B BLOB, NULL) into page objects'],
  ['W4', 'W4 · 10,000 small rows in one transaction'],
  ['W5', 'W5 · an 8 MB value from 128 × 64 KB chunks'],
  ['W6', 'W6 · cold start'],
];
const fmt = (x) => (x === undefined ? '—' : x < 1 ? x.toFixed(3) : x < 100 ? x.toFixed(2) : x.toFixed(0));
const kb = (n) => `${(n / 1024).toFixed(0)} KB`;

const md = [
  `# Side-by-side benchmark: latest run`,
  ``,
  `${run.date} · ${run.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? run.userAgent} · raw: \`benches/results/${basename(file)}\``,
  ``,
  `Medians in ms (main-thread busy ms in brackets, measured with a MessageChannel probe:`,
  `every gap in a self-pinging loop longer than 3× its idle interval counts).`,
  nPasses > 1
    ? `One run of ${nPasses} passes, the engines in opposite orders: cells read pass 1 / pass 2, ratios give the range over the passes.`
    : `One run, one pass.`,
  `Compare within it, not with other runs (these machines drift ±30 % between runs).`,
  `sql.js runs in memory and is not durable; the others write to OPFS with`,
  `page_size 8192, journal_mode TRUNCATE, synchronous FULL. Floors ran in the same session.`,
  ``,
];

for (const [w, title] of GROUPS) {
  const group = rows.filter((r) => r.workload === w && r.median !== undefined && !IDB.includes(r.engine));
  if (!group.length) continue;
  const engines = [...new Set(group.map((r) => r.engine))];
  const labels = [...new Set(group.map((r) => r.row))];
  md.push(`## ${title}`, '', `![${w}](${w.toLowerCase()}.svg)`, '');
  md.push(`| | ${engines.join(' | ')} | resq-wasm ÷ best peer | resq-wasm ÷ floor |`);
  md.push(`|---|${engines.map(() => '---:').join('|')}|---:|---:|`);
  for (const label of labels) {
    const at = (e) => group.find((r) => r.row === label && r.engine === e);
    const cells = engines.map((e) => {
      const r = at(e);
      if (!r) return '';
      const busy = r.passes.some((p) => p.busy !== undefined) ? ` (${r.passes.map((p) => fmt(p.busy)).join(' / ')})` : '';
      return r.passes.map((p) => fmt(p.median)).join(' / ') + busy;
    });
    const ratio = ratioOf(at, 'resq-wasm');
    md.push(`| ${label} | ${cells.join(' | ')} | ${ratio(PEERS)} | ${FLOOR[w] ? ratio([FLOOR[w]]) : '—'} |`);
  }
  const notes = [...new Set(group.filter((r) => r.note).map((r) => `${r.engine}: ${r.note}`))];
  if (FLOOR[w]) notes.unshift(`the floor column: ${FLOOR[w].replace('floor: ', '')}`);
  if (notes.length) md.push('', ...notes.map((n) => `- ${n}`));
  md.push('');
  writeFileSync(resolve(dir, `${w.toLowerCase()}.svg`), chart(title, group, labels, engines));
}

// IndexedDB storage: our `storage: 'idb'` beside wa-sqlite's
// IDBBatchAtomicVFS (PowerSync's default), our OPFS path and the raw
// IndexedDB floors, same run.
const idbRows = rows.filter((r) => r.median !== undefined && r.engine === 'resq-wasm idb');
if (idbRows.length) {
  md.push(
    '## IndexedDB storage',
    '',
    "`open(name, { storage: 'idb' })` beside wa-sqlite's IDBBatchAtomicVFS (its Asyncify build, synchronous FULL: each",
    "commit one IndexedDB transaction with durability 'strict', as ours), our OPFS path, and the raw IndexedDB floors",
    '(one value put in a strict transaction; got back).',
    '',
  );
  const cols = ['resq-wasm idb', 'wa-sqlite idb', 'resq-wasm'];
  md.push(
    `| | ${cols.join(' | ')} | IndexedDB floor | idb ÷ IDBBatchAtomicVFS | idb ÷ our OPFS | idb ÷ floor |`,
    `|---|${cols.map(() => '---:').join('|')}|---:|---:|---:|---:|`,
  );
  for (const [w] of GROUPS) {
    for (const label of [...new Set(idbRows.filter((r) => r.workload === w).map((r) => r.row))]) {
      const at = (e) => rows.find((r) => r.workload === w && r.row === label && r.engine === e && r.median !== undefined);
      const cell = (e) =>
        at(e)
          ?.passes.map((p) => fmt(p.median))
          .join(' / ') ?? '';
      const ratio = ratioOf(at, 'resq-wasm idb');
      md.push(
        `| ${w} ${label} | ${cols.map(cell).join(' | ')} | ${IDB_FLOOR[w] ? cell(IDB_FLOOR[w]) : ''} | ${ratio(['wa-sqlite idb'])} | ${ratio(['resq-wasm'])} | ${IDB_FLOOR[w] ? ratio([IDB_FLOOR[w]]) : '—'} |`,
      );
    }
  }
  md.push('');
}

/** `engine`'s median ÷ the best of `others`, pass by pass, as a range. */
function ratioOf(at, engine) {
  return (others) => {
    const resq = at(engine);
    const per = run.results
      .map((_, i) => {
        const best = Math.min(
          ...others
            .map(at)
            .filter(Boolean)
            .map((r) => r.passes[i]?.median ?? Infinity),
        );
        return resq?.passes[i] && Number.isFinite(best) ? resq.passes[i].median / best : undefined;
      })
      .filter((x) => x !== undefined)
      .sort((a, b) => a - b);
    if (!per.length) return '—';
    const [lo, hi] = [per[0].toFixed(2), per[per.length - 1].toFixed(2)];
    return lo === hi ? lo : `${lo}–${hi}`;
  };
}

const sizes = rows.filter((r) => r.row === 'wasm size');
if (sizes.length) {
  md.push('## Shipped wasm', '', '| engine | raw | gzip | file |', '|---|---:|---:|---|');
  for (const r of sizes) md.push(`| ${r.engine} | ${kb(r.raw)} | ${kb(r.gzip)} | \`${r.file}\` |`);
  md.push('');
}
writeFileSync(resolve(dir, 'latest.md'), md.join('\n'));
console.log(`wrote benches/results/latest.md and ${GROUPS.length} charts from ${basename(file)}`);

/** Horizontal bars on a log scale, one group per row label; floors as dashed ticks. */
function chart(title, group, labels, engines) {
  const bars = engines.filter((e) => !e.startsWith('floor'));
  const floorsOf = (label) => group.filter((r) => r.row === label && r.engine.startsWith('floor'));
  const values = group.map((r) => r.median).filter((v) => v > 0);
  const lo = 10 ** Math.floor(Math.log10(Math.min(...values)) - 0.3);
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...values)));
  const W = 860,
    left = 190,
    right = 70,
    barH = 14,
    gap = 3,
    groupGap = 16,
    top = 72;
  const x = (v) => left + ((Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (W - left - right);
  const out = [];
  let y = top;
  for (const label of labels) {
    const inRow = bars.filter((e) => group.some((r) => r.row === label && r.engine === e));
    const h = inRow.length * (barH + gap);
    out.push(`<text x="${left - 10}" y="${y + h / 2 + 4}" text-anchor="end" font-weight="600">${esc(label)}</text>`);
    inRow.forEach((e, i) => {
      const r = group.find((g) => g.row === label && g.engine === e);
      const by = y + i * (barH + gap);
      out.push(
        `<rect x="${left}" y="${by}" width="${Math.max(1, x(r.median) - left).toFixed(1)}" height="${barH}" fill="${COLORS[e] ?? '#888'}"><title>${esc(e)}: ${fmt(r.median)} ms</title></rect>`,
      );
      out.push(`<text x="${(x(r.median) + 4).toFixed(1)}" y="${by + barH - 3}" font-size="11">${fmt(r.median)}</text>`);
    });
    for (const f of floorsOf(label)) {
      const fx = x(f.median).toFixed(1);
      out.push(
        `<line x1="${fx}" x2="${fx}" y1="${y - 3}" y2="${y + h}" ${floorStyle(f.engine)}><title>${esc(f.engine)}: ${fmt(f.median)} ms</title></line>`,
      );
    }
    y += h + groupGap;
  }
  const axis = [];
  for (let v = lo; v <= hi; v *= 10) {
    axis.push(`<line x1="${x(v)}" x2="${x(v)}" y1="${top - 8}" y2="${y - groupGap}" stroke="#ddd"/>`);
    axis.push(
      `<text x="${x(v)}" y="${top - 12}" text-anchor="middle" font-size="11" fill="#555">${v >= 1 ? v : v.toFixed(-Math.log10(v))} ms</text>`,
    );
  }
  const legend = bars.map(
    (e, i) =>
      `<rect x="${left + i * 150}" y="${y + 4}" width="12" height="12" fill="${COLORS[e] ?? '#888'}"/><text x="${left + i * 150 + 16}" y="${y + 14}" font-size="12">${esc(e)}</text>`,
  );
  const floorNames = [...new Set(group.filter((r) => r.engine.startsWith('floor')).map((r) => r.engine))];
  floorNames.forEach((f, i) => {
    const fx = left + i * 300;
    legend.push(
      `<line x1="${fx}" x2="${fx}" y1="${y + 24}" y2="${y + 40}" ${floorStyle(f)}/><text x="${fx + 6}" y="${y + 36}" font-size="12">${esc(f)}</text>`,
    );
  });
  const H = y + 50;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="12" y="22" font-size="15" font-weight="700">${esc(title)}</text>
<text x="12" y="40" font-size="11" fill="#555">median ms${nPasses > 1 ? `, mean of ${nPasses} order-flipped passes` : ''}, log scale; shorter is faster · ${esc(run.date.slice(0, 10))}</text>
${axis.join('\n')}
${out.join('\n')}
${legend.join('\n')}
</svg>
`;
}

/** Floors as ticks: the storage floor dashed black, the messaging floor dotted grey. */
function floorStyle(name) {
  return /OPFS|bare/.test(name)
    ? 'stroke="#222" stroke-width="1.5" stroke-dasharray="4 2"'
    : 'stroke="#888" stroke-width="1.5" stroke-dasharray="1 2"';
}

function esc(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
