// The grid of cards, drawn from a live query (`db.watch`): the rows now,
// and again after every commit in any tab that changes them, so an item
// added, tagged or deleted anywhere shows up here without a reload.
// Thumbnails load as their cards come near the screen.

import { COUNTS, listQuery, splitTags } from './db.js';
import { $, describeError, formatBytes, formatDate, formatDuration, h, icon, toast } from './ui.js';

export function createGrid(db, { onOpen }) {
  let ids = []; // the items shown, in order
  let view = {};
  let stop = () => {};
  const cards = new Map(); // id → { el, key: the row it was drawn from }
  const thumbs = new Map(); // `${id}/${added}` (an id may be used again) → Promise of an object URL
  const thumbKey = (row) => `${row.id}/${row.added}`;

  const observer = new IntersectionObserver(
    (entries) => {
      for (const e of entries.filter((e) => e.isIntersecting)) {
        observer.unobserve(e.target);
        e.target.load();
      }
    },
    { rootMargin: '400px' },
  );

  /** A thumbnail's URL: the stored image, as a Blob the package assembles, read once per item. */
  function thumbUrl(row) {
    const key = thumbKey(row);
    if (!thumbs.has(key)) thumbs.set(key, db.blobFile('thumbs', 'data', row.id, { type: row.thumb }).then(URL.createObjectURL));
    return thumbs.get(key);
  }

  function render(rows) {
    ids = rows.map((r) => r.id);
    const shown = new Set(ids);
    const shownThumbs = new Set(rows.map(thumbKey));
    for (const [key, url] of thumbs) {
      if (shownThumbs.has(key)) continue;
      url.then(URL.revokeObjectURL, () => {});
      thumbs.delete(key);
    }
    for (const id of cards.keys()) if (!shown.has(id)) cards.delete(id);
    $('#grid').replaceChildren(
      ...rows.map((row) => {
        const key = JSON.stringify(row);
        let card = cards.get(row.id);
        if (card?.key !== key) cards.set(row.id, (card = { el: cardFor(row), key }));
        return card.el;
      }),
    );
    const filtered = view.text || view.kind;
    $('#empty').hidden = rows.length > 0 || filtered;
    $('#no-match').hidden = rows.length > 0 || !filtered;
    $('#no-match').textContent = view.text ? `Nothing matches “${view.text}”.` : 'Nothing of this kind yet.';
    $('#found').textContent = view.text && rows.length ? `${rows.length} found for “${view.text}”` : '';
    document.body.dataset.ready = 'true';
  }

  function cardFor(row) {
    const art = h('div', { className: `thumb kind-${row.kind}` });
    if (row.thumb) {
      const img = h('img', { alt: '', decoding: 'async' });
      art.append(img);
      art.load = () =>
        thumbUrl(row).then(
          (url) => (img.src = url),
          () => {},
        );
      observer.observe(art);
    } else {
      art.append(icon(row.kind));
    }
    art.append(h('span', { className: 'kind' }, icon(row.kind)));
    if (row.duration) art.append(h('span', { className: 'badge' }, formatDuration(row.duration)));
    const tags = splitTags(row.tags);
    return h(
      'li',
      { className: 'card' },
      h(
        'button',
        { type: 'button', className: 'open', title: row.name, onclick: () => onOpen(row.id) },
        art,
        h('span', { className: 'name' }, row.name),
        h('span', { className: 'meta' }, `${formatBytes(row.size)} · ${formatDate(row.added)}`),
        tags.length ? h('span', { className: 'tags' }, ...tags.map((t) => h('span', { className: 'tag' }, t))) : null,
      ),
    );
  }

  function renderCounts(rows) {
    const by = Object.fromEntries(rows.map((r) => [r.kind, r.n]));
    const n = rows.reduce((sum, r) => sum + r.n, 0);
    const bytes = rows.reduce((sum, r) => sum + r.bytes, 0);
    $('#summary').textContent = n
      ? `${n.toLocaleString()} item${n === 1 ? '' : 's'} · ${formatBytes(bytes)} · on this device`
      : 'Nothing stored yet';
    for (const button of document.querySelectorAll('.filters button')) {
      const kind = button.dataset.kind;
      button.querySelector('span').textContent = (kind ? (by[kind] ?? 0) : n).toLocaleString();
    }
  }
  db.watch(COUNTS, [], renderCounts);

  return {
    /** Shows `{ text, kind, sort }`: (re)starts the live query. */
    show(next) {
      view = next;
      stop();
      const { sql, params } = listQuery(view);
      const onError = (err) => toast(describeError(err), { error: true });
      stop = db.watch(sql, params, render, { onError });
      stop.ready.catch(onError);
    },
    /** The ids shown, in order (the viewer's arrows follow them). */
    ids: () => ids,
    thumbUrl,
  };
}
