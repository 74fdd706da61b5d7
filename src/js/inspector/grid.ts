// A table's or view's rows, a page at a time, with each BLOB previewed by
// what its bytes are: an image as a thumbnail, a clip as a player (made
// when asked for), anything else as hex, always with its size. Only the
// page shown is held: its rows, and the object URLs of its previews, which
// are revoked when the page changes and when the grid is disposed.
//
// No value is read whole to be shown: the query selects each column's
// type and size, TEXT cut to its first characters, and a BLOB only when it
// is small; a larger BLOB's first bytes are read as a range (readBlob), and
// its preview is a Blob the worker assembles in pieces (blobFile).
//
// A table with a rowid is paged by it (after the page's last rowid, or
// before its first): a page far into a large table costs what the first
// does, and rows the app adds or deletes meanwhile shift no row out of the
// next page. A view, or a table without a rowid, is paged by OFFSET.

import type { Database } from '../database.js';
import type { SqlValue } from '../params.js';
import type { Item } from './catalog.js';
import { fill, h, ident, size } from './dom.js';
import { HEAD_BYTES, hex, type Kind, sniff } from './sniff.js';

/** BLOBs up to this many bytes come with the page's rows, whole. */
const SMALL = 4096;
/** Images up to this many bytes are shown as thumbnails at once; larger ones when asked. */
const THUMBNAIL = 8_000_000;
/** TEXT is cut to this many characters. */
const TEXT = 300;

type Key = number | bigint;

/** Rows from `key` on (`>=`), after it (`>`), or the ones before it (`<`), by rowid. */
interface Seek {
  op: '>=' | '>' | '<';
  key: Key;
}

/** A page: how many rows come before it (its OFFSET without a rowid), and where it starts by rowid. */
export interface Position {
  before: number;
  seek: Seek | null;
}

export const FIRST_PAGE: Position = { before: 0, seek: null };

interface Cell {
  type: string;
  /** BLOB bytes, TEXT characters. */
  length: number;
  value: unknown;
}

export class Grid {
  readonly element = h('section', { class: 'grid', part: 'grid' });
  #db: Database;
  #item: Item;
  #pageSize: number;
  #position: Position = FIRST_PAGE;
  /** The object URLs of the page shown. */
  #urls = new Set<string>();
  /** Bumped by every show() and by dispose(): a render that is no longer current stops. */
  #generation = 0;
  #report: (e: unknown) => void;

  constructor(db: Database, item: Item, pageSize: number, report: (e: unknown) => void) {
    this.#db = db;
    this.#item = item;
    this.#pageSize = pageSize;
    this.#report = report;
  }

  /** The page shown, to show it again (from its first row). */
  get position(): Position {
    return this.#position;
  }

  /** Shows a page in place of the one shown. */
  async show({ before, seek }: Position): Promise<void> {
    const generation = ++this.#generation;
    const item = this.#item;
    const { columns } = item;
    const select = columns.flatMap((c, i) => {
      const q = ident(c.name);
      return [
        `typeof(${q}) AS t${i}`,
        `length(${q}) AS n${i}`,
        `CASE typeof(${q}) WHEN 'blob' THEN CASE WHEN length(${q}) <= ${SMALL} THEN ${q} END WHEN 'text' THEN substr(${q}, 1, ${TEXT}) ELSE ${q} END AS v${i}`,
      ];
    });
    let from = ident(item.name);
    const params: SqlValue[] = [];
    if (item.rowid) {
      select.push(`${item.rowid} AS r`);
      if (seek) {
        from += ` WHERE ${item.rowid} ${seek.op} ?`;
        params.push(seek.key);
      }
      from += ` ORDER BY ${item.rowid}${seek?.op === '<' ? ' DESC' : ''}`;
    }
    from += ' LIMIT ?';
    params.push(this.#pageSize);
    if (!(item.rowid && seek)) {
      from += ' OFFSET ?';
      params.push(before);
    }
    // Shown again from its first row: the rows before it are counted again.
    const counted =
      item.rowid && seek?.op === '>='
        ? this.#db.query(`SELECT count(*) AS n FROM ${ident(item.name)} WHERE ${item.rowid} < ?`, [seek.key])
        : null;
    const [rows, count] = await Promise.all([this.#db.query(`SELECT ${select.join(', ')} FROM ${from}`, params), counted]);
    if (generation !== this.#generation) return;
    if (seek?.op === '<') {
      rows.reverse();
      // Fewer rows before it than a page: the first page is shown.
      if (rows.length < this.#pageSize) return this.show(FIRST_PAGE);
    }
    if (count) before = Number(count[0].n);
    this.#revoke();
    const keys: [Key, Key] | null = item.rowid && rows.length > 0 ? [rows[0].r as Key, rows[rows.length - 1].r as Key] : null;
    this.#position = { before, seek: keys && { op: '>=', key: keys[0] } };
    const total = item.rows ?? 0;
    const body = h('tbody');
    for (const r of rows) {
      const tr = h('tr');
      columns.forEach((c, i) => {
        const cell = { type: String(r[`t${i}`]), length: Number(r[`n${i}`] ?? 0), value: r[`v${i}`] };
        tr.append(h('td', { class: cell.type }, this.#cell(c.name, cell, r.r as number | bigint | undefined, generation)));
      });
      body.append(tr);
    }
    fill(
      this.element,
      h(
        'nav',
        { class: 'pager' },
        h(
          'button',
          {
            class: 'prev',
            disabled: before === 0,
            onclick: () =>
              this.show({ before: Math.max(0, before - this.#pageSize), seek: keys && { op: '<', key: keys[0] } }).catch(this.#report),
          },
          '‹ Previous',
        ),
        h(
          'span',
          { class: 'range' },
          rows.length === 0 ? 'no rows' : `rows ${before + 1}–${before + rows.length} of ${total.toLocaleString('en')}`,
        ),
        h(
          'button',
          {
            class: 'next',
            disabled: before + rows.length >= total,
            onclick: () => this.show({ before: before + rows.length, seek: keys && { op: '>', key: keys[1] } }).catch(this.#report),
          },
          'Next ›',
        ),
      ),
      h(
        'div',
        { class: 'scroll' },
        h('table', {}, h('thead', {}, h('tr', {}, ...columns.map((c) => h('th', { title: c.type }, c.name)))), body),
      ),
    );
  }

  /** Revokes the page's object URLs and stops any render under way. */
  dispose(): void {
    this.#generation += 1;
    this.#revoke();
  }

  #revoke() {
    for (const url of this.#urls) URL.revokeObjectURL(url);
    this.#urls.clear();
  }

  #url(blob: Blob): string {
    const url = URL.createObjectURL(blob);
    this.#urls.add(url);
    return url;
  }

  #cell(column: string, cell: Cell, rowid: number | bigint | undefined, generation: number): Node | string {
    switch (cell.type) {
      case 'null':
        return h('span', { class: 'null' }, 'NULL');
      case 'text':
        return cell.length > TEXT ? `${cell.value}…` : String(cell.value);
      case 'blob':
        return this.#blob(column, cell, rowid, generation);
      default:
        return String(cell.value);
    }
  }

  /** A BLOB cell: its size at once, its preview once its first bytes are known. */
  #blob(column: string, cell: Cell, rowid: number | bigint | undefined, generation: number): Node {
    const meta = h('div', { class: 'meta' }, h('span', { class: 'size' }, size(cell.length)));
    const box = h('div', { class: 'blob' }, meta);
    const small = cell.value instanceof Uint8Array ? cell.value : null;
    const readable = rowid !== undefined && this.#item.rowid !== null;
    if (!small && !readable) {
      meta.append(h('span', { class: 'note' }, 'not readable by rowid'));
      return box;
    }
    const head = small
      ? Promise.resolve(small.subarray(0, HEAD_BYTES))
      : this.#db.readBlob(this.#item.name, column, rowid!, { length: Math.min(HEAD_BYTES, cell.length) });
    /** The value as a Blob of `type`: from the bytes at hand, or assembled by the worker. */
    const whole = (type: string) =>
      small
        ? Promise.resolve(new Blob([small as Uint8Array<ArrayBuffer>], { type }))
        : this.#db.blobFile(this.#item.name, column, rowid!, { type });
    head
      .then((bytes) => {
        if (generation !== this.#generation) return;
        const { type, kind } = sniff(bytes);
        box.dataset.type = type;
        box.dataset.kind = kind;
        box.prepend(this.#preview(kind, type, bytes, cell.length, whole, generation));
        if (type) meta.append(h('span', { class: 'type' }, type));
      })
      .catch((e) => meta.append(h('span', { class: 'error' }, e?.code ?? String(e))));
    return box;
  }

  #preview(kind: Kind, type: string, head: Uint8Array, length: number, whole: (type: string) => Promise<Blob>, generation: number): Node {
    const slot = h('div', { class: 'preview' });
    const load = (make: (url: string) => HTMLElement) =>
      whole(type)
        .then((blob) => {
          if (generation !== this.#generation) return;
          const el = make(this.#url(blob));
          slot.replaceChildren(el);
          return el;
        })
        .catch((e) => slot.replaceChildren(h('span', { class: 'error' }, e?.code ?? String(e))));
    const image = () => load((src) => h('img', { src, alt: `${type}, ${size(length)}` }));
    if (kind === 'image') {
      if (length <= THUMBNAIL) image();
      else slot.append(h('button', { class: 'show', onclick: image }, 'Show image'));
    } else if (kind === 'audio' || kind === 'video') {
      const play = () =>
        load((src) => h(kind, { src, controls: true, preload: 'metadata' })).then((el) =>
          (el as HTMLMediaElement | undefined)?.play().catch(() => {}),
        );
      slot.append(h('button', { class: 'play', onclick: play }, `▶ Play ${kind}`));
    } else {
      slot.append(h('code', { class: 'hex' }, hex(head) + (length > head.length ? ' …' : '')));
    }
    return slot;
  }
}
