// The inspector's one way of making elements: `h('button', { class: 'x',
// onclick }, 'Run')`. Text children are text nodes, never HTML, so no
// value from a database is ever parsed as markup.

import { ResqError } from '../errors.js';

type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | ((e: Event) => void) | undefined>;

/** An element with attributes (`on…` ones as listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  el.append(...kids(children));
  return el;
}

/** Replaces `el`'s children. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren(...kids(children));
}

function kids(children: Child[]): (Node | string)[] {
  return children.filter((c) => c !== null && c !== undefined && c !== false).map((c) => (typeof c === 'number' ? String(c) : c)) as (
    | Node
    | string
  )[];
}

/** A failure as the inspector shows it: the `ResqError` code (or 'Error') in bold, then the message. */
export function errorLine(e: unknown): HTMLElement {
  const code = e instanceof ResqError ? e.code : 'Error';
  return h('p', { class: 'error', 'data-code': code }, h('strong', {}, code), ' ', e instanceof Error ? e.message : String(e));
}

/** Bytes as people read them: 0 B, 512 B, 1.5 KB, 2.3 MB, 1.1 GB (powers of 1,000). */
export function size(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = -1;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u += 1;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** An SQL identifier, quoted: `a"b` → `"a""b"`. */
export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;
