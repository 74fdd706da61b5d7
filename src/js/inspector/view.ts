// The inspector's screen for one database: its tables, views and indexes
// down the side with their rows and bytes, and the storage's figures; the
// chosen table's rows (grid.ts) or the SQL console (console.ts) beside.

import type { Database } from '../database.js';
import { type Figures, type Item, STORAGES, figures, items } from './catalog.js';
import { Console } from './console.js';
import { fill, h, ident, size } from './dom.js';
import { FIRST_PAGE, Grid, type Position } from './grid.js';

export class View {
  readonly element = h('div', { class: 'view' });
  #db: Database;
  #pageSize: number;
  #side = h('aside', { class: 'side', part: 'side' });
  #main = h('div', { class: 'main', part: 'main' });
  #tabs = h('nav', { class: 'tabs' });
  #grid: Grid | null = null;
  #console: Console;
  #items: Item[] = [];
  #chosen: string | null = null;
  #tab: 'rows' | 'sql' = 'rows';
  #error = h('p', { class: 'error', hidden: true });

  constructor(db: Database, pageSize: number) {
    this.#db = db;
    this.#pageSize = pageSize;
    this.#console = new Console(db, () => void this.refresh().catch((e) => this.#report(e)));
    this.element.append(this.#side, h('div', { class: 'body' }, this.#tabs, this.#error, this.#main));
  }

  /** Reads the schema and figures again, and shows the chosen table's page again; resolves to the figures. */
  async refresh(): Promise<Figures> {
    const [list, figs] = await Promise.all([items(this.#db), figures(this.#db)]);
    this.#items = list;
    const shown = this.#chosen;
    if (this.#chosen === null || !list.some((i) => i.name === this.#chosen && i.type !== 'index'))
      this.#chosen = list.find((i) => i.type !== 'index')?.name ?? null;
    this.#renderSide(figs);
    await this.#renderMain(this.#chosen === shown ? this.#grid?.position : undefined);
    return figs;
  }

  /** Shows `name`'s rows. */
  async choose(name: string): Promise<void> {
    this.#chosen = name;
    this.#tab = 'rows';
    this.#renderSide(null);
    await this.#renderMain();
  }

  /** Lets go of the grid's object URLs; the view shows nothing more. */
  dispose(): void {
    this.#grid?.dispose();
    this.#grid = null;
  }

  #report(e: unknown) {
    this.#error.hidden = false;
    const code = (e as { code?: string })?.code;
    this.#error.textContent = `${code ? `${code}: ` : ''}${e instanceof Error ? e.message : String(e)}`;
  }

  #figures: Figures | null = null;

  #renderSide(figs: Figures | null) {
    if (figs) this.#figures = figs;
    const f = this.#figures;
    const group = (type: Item['type'], title: string) => {
      const of = this.#items.filter((i) => i.type === type);
      if (of.length === 0) return null;
      return h(
        'section',
        { class: `items ${type}s` },
        h('h3', {}, title),
        h(
          'ul',
          {},
          ...of.map((i) =>
            h(
              'li',
              {},
              type === 'index'
                ? h('span', { class: 'item', title: i.sql }, i.name, h('small', {}, `on ${i.table}`))
                : h(
                    'button',
                    {
                      class: 'item',
                      'data-name': i.name,
                      'aria-current': i.name === this.#chosen ? 'true' : undefined,
                      title: i.sql,
                      onclick: () => this.choose(i.name).catch((e) => this.#report(e)),
                    },
                    i.name,
                    h(
                      'small',
                      {},
                      i.rows === null ? '' : `${i.rows.toLocaleString('en')} rows`,
                      i.bytes === null ? '' : ` · ${size(i.bytes)}`,
                    ),
                  ),
            ),
          ),
        ),
      );
    };
    const row = (k: string, v: string) => [h('dt', {}, k), h('dd', {}, v)];
    fill(
      this.#side,
      group('table', 'Tables'),
      group('view', 'Views'),
      group('index', 'Indexes'),
      this.#items.length === 0 ? h('p', { class: 'empty' }, 'No tables yet.') : null,
      f &&
        h(
          'section',
          { class: 'figures' },
          h('h3', {}, 'Storage'),
          h(
            'dl',
            {},
            ...row('storage', STORAGES[f.storage] ?? f.storage),
            ...(f.file ? row('file', f.file) : []),
            ...row('size', `${size(f.pages * f.pageSize)} (${f.pages.toLocaleString('en')} pages of ${f.pageSize.toLocaleString('en')} B)`),
            ...row('free pages', `${f.freePages.toLocaleString('en')} (${size(f.freePages * f.pageSize)})`),
            ...row('journal', f.journal),
            ...(f.usage !== null && f.quota !== null ? row('origin', `${size(f.usage)} used of ${size(f.quota)}`) : []),
            ...(f.persisted !== null ? row('persisted', f.persisted ? 'yes' : 'no: the browser may evict it') : []),
          ),
        ),
    );
  }

  async #renderMain(position: Position = FIRST_PAGE) {
    this.#error.hidden = true;
    const tab = (id: 'rows' | 'sql', label: string) =>
      h(
        'button',
        {
          class: `tab ${id}`,
          'aria-selected': String(this.#tab === id),
          onclick: () => {
            this.#tab = id;
            this.#renderMain().catch((e) => this.#report(e));
          },
        },
        label,
      );
    fill(this.#tabs, tab('rows', this.#chosen ? `Rows of ${this.#chosen}` : 'Rows'), tab('sql', 'SQL'));
    this.#grid?.dispose();
    this.#grid = null;
    if (this.#tab === 'sql') {
      fill(this.#main, this.#console.element);
      return;
    }
    const item = this.#items.find((i) => i.name === this.#chosen);
    if (!item) {
      fill(this.#main, h('p', { class: 'empty' }, 'Nothing to show: create a table in the SQL tab.'));
      return;
    }
    if (!this.#console.sql) this.#console.sql = `SELECT * FROM ${ident(item.name)} LIMIT 100`;
    const grid = new Grid(this.#db, item, this.#pageSize, (e) => this.#report(e));
    this.#grid = grid;
    fill(this.#main, grid.element);
    await grid.show(position);
  }
}
