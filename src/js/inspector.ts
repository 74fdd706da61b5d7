// resq-wasm/inspector: a look at what an app stored, in the page.
//
//   import { mountInspector } from 'resq-wasm/inspector';
//   const unmount = mountInspector(document.querySelector('#debug'), db);
//
// or `<resq-inspector>`, whose `database` property takes a Database; with
// none, it lists the origin's databases to open. It shows tables, views and
// indexes with their rows and bytes, a table's rows a page at a time with
// each BLOB previewed by its bytes' type, a SQL console, and the storage's
// figures. It changes nothing unless the user runs a write in the console,
// and reads large values in ranges, never whole. Its own entry point: the
// core entry does not grow.

import type { Database } from './database.js';
import { ResqError, badParam } from './errors.js';
import { open } from './index.js';
import { STORAGES, type Stored, stored } from './inspector/catalog.js';
import { errorLine, fill, h } from './inspector/dom.js';
import { CSS } from './inspector/style.js';
import { View } from './inspector/view.js';

/** Rows a page shows, unless `pageSize` is set. */
export const DEFAULT_PAGE_SIZE = 50;

// A server render imports the module too: there is no HTMLElement there,
// and nothing is defined.
const Base = (globalThis.HTMLElement ?? class {}) as typeof HTMLElement;

/**
 * `<resq-inspector>`: set `database` to a `Database`, or leave it unset to
 * pick one of the origin's. Its content is in an open shadow root.
 */
export class ResqInspector extends Base {
  #database: Database | null = null;
  /** A database the inspector opened itself (picked from the list): it closes it. */
  #owned: Database | null = null;
  #view: View | null = null;
  #pageSize = DEFAULT_PAGE_SIZE;
  #root: ShadowRoot;
  #header = h('header', {});
  #content = h('div', { class: 'content' });

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: 'open' });
    this.#root.append(h('style', {}, CSS), this.#header, this.#content);
  }

  /** The database shown; null: the origin's databases are listed to pick from. */
  get database(): Database | null {
    return this.#database;
  }

  set database(db: Database | null) {
    this.#let();
    this.#database = db ?? null;
    if (this.isConnected) this.#show();
  }

  /** Rows a page of the grid shows (default {@link DEFAULT_PAGE_SIZE}). */
  get pageSize(): number {
    return this.#pageSize;
  }

  set pageSize(n: number) {
    if (!Number.isInteger(n) || n < 1) throw badParam('pageSize must be a whole number of rows, at least 1');
    this.#pageSize = n;
    if (this.isConnected) this.#show();
  }

  /** Reads the schema, figures and the page shown again. */
  async refresh(): Promise<void> {
    await (this.#view?.refresh() ?? this.#list());
  }

  connectedCallback(): void {
    this.#show();
  }

  disconnectedCallback(): void {
    this.#let();
    fill(this.#header);
    fill(this.#content);
  }

  /** Drops the view (revoking its object URLs) and closes a database the inspector opened. */
  #let() {
    this.#view?.dispose();
    this.#view = null;
    if (this.#owned) {
      const owned = this.#owned;
      this.#owned = null;
      if (this.#database === owned) this.#database = null;
      owned.close().catch(() => {});
    }
  }

  #show() {
    this.#view?.dispose();
    this.#view = null;
    const db = this.#database;
    if (!db) {
      this.#list().catch((e) => this.#fail(e));
      return;
    }
    const view = new View(db, this.#pageSize);
    this.#view = view;
    const title = h('span', { class: 'db' });
    const refresh = () =>
      view
        .refresh()
        .then((f) => (title.textContent = `${f.file.split('/').pop() || 'memory database'} · ${STORAGES[f.storage] ?? f.storage}`))
        .catch((e) => this.#fail(e));
    fill(
      this.#header,
      h('strong', {}, 'resq-wasm inspector'),
      title,
      h('span', { class: 'spacer' }),
      this.#owned ? h('button', { class: 'back', onclick: () => (this.database = null) }, 'All databases') : null,
      h('button', { class: 'refresh', onclick: refresh }, 'Refresh'),
    );
    fill(this.#content, view.element);
    refresh();
  }

  /** The origin's databases, each a button that opens it. */
  async #list() {
    fill(this.#header, h('strong', {}, 'resq-wasm inspector'), h('span', { class: 'db' }, 'databases of this origin'));
    const all = await stored();
    if (this.#database) return;
    const form = h('form', { class: 'key', hidden: true });
    fill(
      this.#content,
      h(
        'div',
        { class: 'picker' },
        all.length === 0
          ? h('p', { class: 'empty' }, 'This origin has no stored databases (memory databases are listed by the page that holds them).')
          : h(
              'ul',
              {},
              ...all.map((d) =>
                h(
                  'li',
                  {},
                  h(
                    'button',
                    { class: 'pick', 'data-name': d.name, onclick: () => this.#open(d, form) },
                    d.name,
                    ` (${STORAGES[d.storage]})`,
                  ),
                ),
              ),
            ),
        form,
      ),
    );
  }

  /** Opens a listed database; one that needs a key asks for it. */
  async #open(d: Stored, form: HTMLFormElement, key?: string) {
    try {
      const db = await open(d.name, key === undefined ? { storage: d.storage } : { storage: d.storage, key });
      if (!this.isConnected || this.#database) {
        await db.close();
        return;
      }
      this.#owned = db;
      this.#database = db;
      this.#show();
    } catch (e) {
      if (e instanceof ResqError && e.code === 'RESQ_BAD_KEY') {
        const input = h('input', { type: 'password', 'aria-label': 'key', placeholder: `key of ${d.name}` });
        form.hidden = false;
        form.onsubmit = (ev) => {
          ev.preventDefault();
          this.#open(d, form, input.value);
        };
        fill(
          form,
          input,
          h('button', { type: 'submit' }, 'Open'),
          key === undefined ? null : h('span', { class: 'error' }, 'RESQ_BAD_KEY: wrong key'),
        );
        return;
      }
      this.#fail(e);
    }
  }

  #fail(e: unknown) {
    this.#content.append(errorLine(e));
  }
}

if (globalThis.customElements && !customElements.get('resq-inspector')) customElements.define('resq-inspector', ResqInspector);

/**
 * Mounts an inspector of `database` (or, without one, of a database picked
 * from the origin's) at the end of `container`; returns `unmount`, which
 * removes it, revokes its object URLs and closes any database it opened.
 */
export function mountInspector(container: Element, database?: Database): () => void {
  const el = document.createElement('resq-inspector') as ResqInspector;
  if (database) el.database = database;
  container.append(el);
  return () => el.remove();
}

declare global {
  interface HTMLElementTagNameMap {
    'resq-inspector': ResqInspector;
  }
}
