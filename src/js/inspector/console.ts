// The inspector's SQL console: what the user types runs as written (the
// only way the inspector changes data), with the rows, the changes, or the
// error's code and message, and a statement's query plan. Whether it
// answers with rows, and whether it writes, SQLite's EXPLAIN says.
//
// A SELECT here is db.query's: its values come whole, as that call brings
// them (a large BLOB included). The grid reads BLOBs in ranges; the
// console shows each BLOB's size and first bytes.

import type { Database } from '../database.js';
import { errorLine, fill, h, size } from './dom.js';
import { HEAD_BYTES, hex } from './sniff.js';

/** Rows the console shows of a result; it says how many more there were. */
const SHOWN = 500;

/** An EXPLAIN (SQLite prepares no EXPLAIN of one): it answers with rows. */
const EXPLAINED = /^\s*EXPLAIN\b/i;

/**
 * Where EXPLAIN cannot say (a script of many statements, which `query`
 * refuses; SQL with an error, which the run then reports): statements
 * that begin like these answer with rows, anything else runs with execute().
 */
const READS = /^\s*(SELECT|WITH|VALUES|PRAGMA)\b/i;

/**
 * What SQLite's own program for `sql` says of it: whether it answers with
 * rows (a `ResultRow`: a SELECT, a PRAGMA that reports, a RETURNING) and
 * whether it writes (a write transaction). Read from `EXPLAIN`, which
 * prepares the statement without running it (`query` refuses a script
 * before it runs any of it); where that fails, by its first word.
 */
async function shape(db: Database, sql: string): Promise<{ rows: boolean; writes: boolean }> {
  if (EXPLAINED.test(sql)) return { rows: true, writes: false };
  try {
    const ops = await db.query(`EXPLAIN ${sql}`);
    return {
      rows: ops.some((o) => o.opcode === 'ResultRow'),
      writes: ops.some((o) => o.opcode === 'Transaction' && Number(o.p2) !== 0),
    };
  } catch {
    return { rows: READS.test(sql), writes: true };
  }
}

export class Console {
  readonly element: HTMLElement;
  #db: Database;
  #sql = h('textarea', { class: 'sql', spellcheck: 'false', rows: 5, 'aria-label': 'SQL', placeholder: 'SELECT * FROM …' });
  #out = h('div', { class: 'out', role: 'status' });
  /** Called after a statement that may have changed the schema or rows. */
  #changed: () => void;

  constructor(db: Database, changed: () => void) {
    this.#db = db;
    this.#changed = changed;
    this.#sql.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) this.run();
    });
    this.element = h(
      'section',
      { class: 'console', part: 'console' },
      this.#sql,
      h(
        'div',
        { class: 'actions' },
        h('button', { class: 'run', onclick: () => this.run() }, 'Run'),
        h('button', { class: 'plan', onclick: () => this.plan() }, 'Query plan'),
        h('span', { class: 'hint' }, 'Ctrl+Enter runs'),
      ),
      this.#out,
    );
  }

  /** The console's SQL. */
  get sql(): string {
    return this.#sql.value;
  }

  set sql(sql: string) {
    this.#sql.value = sql;
  }

  /** Runs the console's SQL and shows what it gave. */
  async run(): Promise<void> {
    const sql = this.#sql.value;
    if (!sql.trim()) return;
    await this.#show(async () => {
      const { rows, writes } = await shape(this.#db, sql);
      if (rows) {
        const answered = await this.#db.query(sql);
        if (writes) this.#changed();
        return this.#rows(answered);
      }
      const { changes, lastInsertRowid } = await this.#db.execute(sql);
      this.#changed();
      return h('p', { class: 'done' }, `${changes} row${changes === 1 ? '' : 's'} changed; last insert rowid ${lastInsertRowid}`);
    });
  }

  /** Shows the console's statement's EXPLAIN QUERY PLAN, as a tree. */
  async plan(): Promise<void> {
    const sql = this.#sql.value;
    if (!sql.trim()) return;
    await this.#show(async () => {
      const steps = await this.#db.query(`EXPLAIN QUERY PLAN ${sql}`);
      const depth = new Map<unknown, number>([[0, -1]]);
      const lines = steps.map((s) => {
        const d = (depth.get(s.parent) ?? -1) + 1;
        depth.set(s.id, d);
        return `${'   '.repeat(d)}${d > 0 ? '└─ ' : ''}${s.detail}`;
      });
      return h('pre', { class: 'plan' }, lines.join('\n') || '(no plan)');
    });
  }

  async #show(make: () => Promise<Node>) {
    fill(this.#out, h('p', { class: 'busy' }, 'Running…'));
    const started = performance.now();
    try {
      const node = await make();
      fill(this.#out, node, h('p', { class: 'time' }, `${Math.round(performance.now() - started)} ms`));
    } catch (e) {
      fill(this.#out, errorLine(e));
    }
  }

  #rows(rows: Record<string, unknown>[]): Node {
    if (rows.length === 0) return h('p', { class: 'done' }, 'no rows');
    const names = Object.keys(rows[0]);
    const shown = rows.slice(0, SHOWN);
    return h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, ...names.map((n) => h('th', {}, n)))),
        h('tbody', {}, ...shown.map((r) => h('tr', {}, ...names.map((n) => value(r[n]))))),
      ),
      rows.length > SHOWN ? h('p', { class: 'more' }, `${SHOWN} of ${rows.length} rows shown`) : null,
    );
  }
}

function value(v: unknown): HTMLElement {
  if (v === null) return h('td', { class: 'null' }, h('span', { class: 'null' }, 'NULL'));
  if (v instanceof Uint8Array)
    return h(
      'td',
      { class: 'blob' },
      h('span', { class: 'size' }, size(v.length)),
      ' ',
      h('code', { class: 'hex' }, hex(v.subarray(0, HEAD_BYTES)) + (v.length > HEAD_BYTES ? ' …' : '')),
    );
  return h('td', { class: typeof v === 'string' ? 'text' : 'number' }, String(v));
}
