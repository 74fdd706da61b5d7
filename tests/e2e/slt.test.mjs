// SQLite's own sqllogictest records (tests/slt/, see its README) run through
// resq-wasm in the browser: statements through `execute`, queries through
// `queryBytes`, each file in a fresh OPFS database. Every answer must match
// the one SQLite produced, and an error is never an answer: a query may fail
// only where KNOWN_DIVERGENCES says, with exactly the error it names. The
// records are parsed and the answers rendered here in Node, as sqlite.org's
// slt_sqlite.c renders them.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { start } from './harness.mjs';
import { inPage } from './util.mjs';

const dir = resolve(import.meta.dirname, '../slt');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.test'))
  .sort();

/**
 * Records where resq-wasm's answer differs from the file's, and why. Keyed
 * by file and the line of the record's `query` head; each gives the error
 * the query must fail with, exactly. Any other error on any record is a
 * failure, and so is a listed record that does not fail this way.
 */
const KNOWN_DIVERGENCES = {
  // sum(x) over two rows of 1<<63 (-2^63) overflows while stepping, as the
  // file's own comment says it must. The file still expects no rows because
  // slt_sqlite.c stops at the first sqlite3_step that is not SQLITE_ROW
  // without asking why; SQLite reports the error, and so does the package.
  'slt_lang_aggfunc.test:480': {
    code: 'SQLITE_ERROR',
    errno: 1,
    message: 'integer overflow (in: SELECT sum(x) FROM t1)',
  },
};

let h;
before(async () => {
  h = await start();
});
after(async () => {
  await h?.close();
});

/**
 * The records of one file that apply to engine `sqlite`, up to a `halt`,
 * each with `line`: the line of its `statement`/`query` head in the file.
 */
function parse(text) {
  const records = [];
  const all = text.split('\n');
  for (let at = 0; at < all.length; ) {
    // One block: the lines up to the next blank one, with their line numbers.
    const block = [];
    for (; at < all.length && all[at].trim() !== ''; at++) block.push([all[at], at + 1]);
    for (; at < all.length && all[at].trim() === ''; at++);
    const numbered = block.filter(([l]) => !l.startsWith('#'));
    let skip = false;
    while (numbered.length && /^(skipif|onlyif) /.test(numbered[0][0])) {
      const [cond, engine] = numbered.shift()[0].split(/\s+/);
      if ((cond === 'skipif') === (engine === 'sqlite')) skip = true;
    }
    if (skip || !numbered.length) continue;
    const lines = numbered.map(([l]) => l);
    const line = numbered[0][1];
    const head = lines[0].split(/\s+/);
    if (head[0] === 'halt') break;
    if (head[0] === 'statement') {
      records.push({ kind: 'statement', line, expect: head[1], sql: lines.slice(1).join('\n') });
    } else if (head[0] === 'query') {
      const sep = lines.indexOf('----');
      records.push({
        kind: 'query',
        line,
        types: head[1],
        sort: head[2] ?? 'nosort',
        sql: lines.slice(1, sep < 0 ? undefined : sep).join('\n'),
        expected: sep < 0 ? [] : lines.slice(sep + 1),
      });
    }
    // hash-threshold: the expected text says whether it is hashed.
  }
  return records;
}

/**
 * The rows of `queryBytes` JSON as arrays of raw tokens, in column order,
 * duplicate column names kept (an object would drop them): strings decoded,
 * numbers as their digits, null as null.
 */
function rowsOf(json) {
  const rows = [];
  let row = null;
  let value = false;
  for (const [t] of json.matchAll(/"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|null|true|false|[{}:,]/g)) {
    if (t === '{') (row = []), (value = false);
    else if (t === '}') rows.push(row);
    else if (t === ':') value = true;
    else if (t === ',') value = false;
    else if (value) row.push(t[0] === '"' ? JSON.parse(t) : t === 'null' ? null : { number: t });
  }
  return rows;
}

/** A value as slt_sqlite.c prints it for column type `I`, `R` or `T`. */
function render(v, type) {
  if (v === null) return 'NULL';
  if (type === 'I') {
    // sqlite3_column_int: a number truncates; text keeps its leading integer.
    if (typeof v === 'object') return /[.eE]/.test(v.number) ? String(Math.trunc(Number(v.number))) : String(BigInt(v.number));
    const m = /^\s*[+-]?\d+/.exec(v);
    return m ? String(BigInt(m[0].trim())) : '0';
  }
  if (type === 'R') {
    const m = typeof v === 'object' ? [v.number] : /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(v);
    return fixed3(m ? Number(m[0]) : 0);
  }
  const s = typeof v === 'object' ? v.number : v;
  return s === '' ? '(empty)' : s.replace(/[^\x20-\x7e]/g, '@');
}

/**
 * printf("%.3f") as SQLite's own printf does it: at most 16 significant
 * digits, then zeros (-2^63 prints as -9223372036854776000.000).
 */
function fixed3(x) {
  const [mantissa, exp] = Math.abs(x).toExponential(15).split('e');
  if (x === 0 || Number(exp) + 4 <= 16) return x.toFixed(3);
  const digits = mantissa.replace('.', '').padEnd(Number(exp) + 1, '0');
  return `${x < 0 ? '-' : ''}${digits}.000`;
}

/** The answer in the form the file gives it: values one per line, or their hash. */
function answer(record, rows) {
  const rendered = rows.map((r) => r.map((v, i) => render(v, record.types[i] ?? 'T')));
  if (record.sort === 'rowsort')
    rendered.sort((a, b) => (a.join('\u0000') < b.join('\u0000') ? -1 : a.join('\u0000') > b.join('\u0000') ? 1 : 0));
  let values = rendered.flat();
  if (record.sort === 'valuesort') values = values.sort();
  const hashed = /^\d+ values hashing to [0-9a-f]{32}$/.test(record.expected[0] ?? '');
  if (!hashed) return values;
  const md5 = createHash('md5');
  for (const v of values) md5.update(`${v}\n`);
  return [`${values.length} values hashing to ${md5.digest('hex')}`];
}

for (const file of files) {
  test(`sqllogictest ${file}: every record answers as SQLite does`, async (t) => {
    const records = parse(readFileSync(resolve(dir, file), 'utf8').replace(/\r\n/g, '\n'));
    const results = await inPage(
      h.page,
      async ({ open }, { name, records }) => {
        const db = await open(name);
        const out = [];
        try {
          for (const r of records) {
            try {
              if (r.kind === 'statement') await db.execute(r.sql);
              else out.push(new TextDecoder().decode(await db.queryBytes(r.sql)));
              if (r.kind === 'statement') out.push(null);
            } catch (e) {
              out.push({ error: { code: e.code, errno: e.errno, message: e.message } });
            }
          }
        } finally {
          await db.close();
        }
        return out;
      },
      { name: `slt-${file}-${Math.random().toString(36).slice(2, 8)}.db`, records },
    );
    const failures = [];
    const known = [];
    const listed = Object.keys(KNOWN_DIVERGENCES).filter((k) => k.startsWith(`${file}:`));
    const check = (r, i) => {
      const got = results[i];
      const key = `${file}:${r.line}`;
      const label = `${key} (record ${i + 1}): ${r.sql.slice(0, 120)}`;
      const said = (e) => `${e.code} (${e.errno}): ${e.message}`;
      if (key in KNOWN_DIVERGENCES) {
        const want = KNOWN_DIVERGENCES[key];
        if (!got?.error) return failures.push(`${label}\n  expected the known error ${said(want)}, got ${got === null ? 'ok' : 'rows'}`);
        if (!isDeepStrictEqual(got.error, want))
          return failures.push(`${label}\n  expected the known error ${said(want)}\n  got                      ${said(got.error)}`);
        return known.push(`${label}: ${said(got.error)}`);
      }
      if (r.kind === 'statement') {
        const failed = got !== null;
        if (failed !== (r.expect === 'error'))
          failures.push(`${label}\n  expected statement ${r.expect}, got ${failed ? said(got.error) : 'ok'}`);
        return;
      }
      // An error is never an answer, not even to a query expecting no rows.
      if (got?.error) return failures.push(`${label}\n  ${said(got.error)}`);
      const actual = answer(r, rowsOf(got));
      if (JSON.stringify(actual) !== JSON.stringify(r.expected)) {
        failures.push(`${label}\n  expected ${r.expected.slice(0, 6).join(' ')}\n  got      ${actual.slice(0, 6).join(' ')}`);
      }
    };
    for (const [i, r] of records.entries()) check(r, i);
    t.diagnostic(`${records.length} records (${records.filter((r) => r.kind === 'query').length} queries)`);
    for (const k of known) t.diagnostic(`known divergence, failed as expected: ${k}`);
    assert.ok(records.length > 0, `${file}: no records parsed`);
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} of ${records.length} records differ`);
    assert.deepEqual(
      listed.filter((k) => !records.some((r) => `${file}:${r.line}` === k)),
      [],
      'known divergences that name no record of this file',
    );
  });
}
