// The viewer: one item at a time, a photo full size, audio and video played
// straight from the database, with its facts, its tags and its actions.
//
// Where the bytes come from: with the service worker in control, the media
// element gets `media/<id>?v=…`, and the worker streams the range it asks for
// from the database (sw.js, stream.js): playback starts after the first
// chunk, and a seek reads from the new position. Without one (a hard
// reload, a browser without service workers) it gets `blobFile`: a Blob the
// package assembles in its worker, which reads the whole value first.
// benches/demo.mjs measures both on a 500 MB video.

import { deleteItem, item as loadItem, normalizeTags, setTags, splitTags } from './db.js';
import { mediaPath } from './stream.js';
import { $, confirmed, describeError, formatBytes, formatDate, formatDuration, h, icon, toast } from './ui.js';

/** A URL for the media of `item`: { url, release() }. */
export async function mediaUrl(db, item) {
  if (navigator.serviceWorker?.controller) return { url: mediaPath(item), release() {} };
  const url = URL.createObjectURL(await db.blobFile('items', 'data', item.id, { type: item.type }));
  return { url, release: () => URL.revokeObjectURL(url) };
}

/**
 * The viewer dialog. `order()` gives the ids in the grid's order (for the
 * arrows); `thumbUrl(item)` the thumbnail's URL (an audio item's artwork).
 */
export function createPlayer(db, { order, thumbUrl }) {
  const dialog = $('#viewer');
  let current = null; // { item, release }
  let opening = 0;

  async function open(id) {
    const ticket = ++opening;
    const item = await loadItem(db, id);
    if (ticket !== opening) return;
    if (!item) return close();
    const media = await mediaUrl(db, item);
    if (ticket !== opening) return media.release();
    stop();
    current = { item, release: media.release };
    $('#viewer-media').replaceChildren(await element(item, media.url));
    $('#viewer-name').textContent = item.name;
    $('#viewer-facts').replaceChildren(...facts(item));
    showTags(item);
    Object.assign($('#viewer-download'), { href: media.url, download: item.name });
    const { prev, next } = neighbours(order(), id);
    $('#viewer-prev').disabled = prev === null;
    $('#viewer-next').disabled = next === null;
    dialog.dataset.id = id;
    if (!dialog.open) dialog.showModal();
  }

  async function element(item, url) {
    if (item.kind === 'image') return h('img', { src: url, alt: item.name, decoding: 'async' });
    if (item.kind === 'video') return h('video', { src: url, controls: true, autoplay: true, playsInline: true });
    const art = item.thumb
      ? h('img', { src: await thumbUrl(item), alt: '', className: 'art' })
      : h('div', { className: 'art' }, icon('audio'));
    return h('figure', { className: 'audio' }, art, h('audio', { src: url, controls: true, autoplay: true }));
  }

  function facts(item) {
    const rows = [
      ['Type', item.type],
      ['Size', `${formatBytes(item.size)} (${item.size.toLocaleString()} bytes)`],
      ['Added', formatDate(item.added)],
      item.width && ['Dimensions', `${item.width} × ${item.height}`],
      item.duration && ['Length', formatDuration(item.duration)],
      ['Stored', `BLOB, rowid ${item.id} of items`],
      ['Read', navigator.serviceWorker?.controller ? 'by range, blobStream (service worker)' : 'whole, blobFile'],
    ].filter(Boolean);
    return rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]);
  }

  function showTags(item) {
    const tags = splitTags(item.tags);
    $('#tag-list').replaceChildren(
      ...tags.map((tag) =>
        h(
          'span',
          { className: 'tag' },
          tag,
          h('button', { type: 'button', title: `Remove ${tag}`, onclick: () => saveTags(tags.filter((t) => t !== tag)) }, icon('close')),
        ),
      ),
    );
  }

  /**
   * Shows the new tags at once and stores them. The next edit builds on
   * what is shown, not on what is stored yet: two tags typed quickly both
   * stay (the package runs one Database's calls in the order they were made).
   */
  async function saveTags(tags) {
    const { item } = current;
    const before = item.tags;
    item.tags = normalizeTags(tags).join(', ');
    showTags(item);
    try {
      await setTags(db, item.id, tags);
    } catch (err) {
      item.tags = before;
      if (current?.item === item) showTags(item);
      toast(describeError(err), { error: true });
    }
  }

  function stop() {
    for (const media of $('#viewer-media').querySelectorAll('video, audio')) {
      media.pause();
      media.removeAttribute('src');
      media.load(); // ends the stream the service worker was serving
    }
    current?.release();
    current = null;
  }

  function close() {
    opening++;
    stop();
    $('#viewer-media').replaceChildren();
    if (dialog.open) dialog.close();
  }

  $('#tags-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('#tags-input');
    const added = input.value.split(',');
    input.value = '';
    if (current) saveTags([...splitTags(current.item.tags), ...added]);
  });
  $('#viewer-delete').addEventListener('click', async () => {
    if (!current) return;
    const { item } = current;
    if (!(await confirmed(`Delete “${item.name}” from the library?`, 'Delete'))) return;
    try {
      const { next, prev } = neighbours(order(), item.id);
      await deleteItem(db, item.id);
      toast(`Deleted ${item.name}`);
      (next ?? prev) ? open(next ?? prev) : close();
    } catch (err) {
      toast(describeError(err), { error: true });
    }
  });
  const step = (dir) => {
    if (!current) return;
    const id = neighbours(order(), current.item.id)[dir];
    if (id !== null) open(id);
  };
  $('#viewer-prev').addEventListener('click', () => step('prev'));
  $('#viewer-next').addEventListener('click', () => step('next'));
  dialog.querySelector('[data-close]').addEventListener('click', close);
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    close();
  });
  dialog.addEventListener('keydown', (e) => {
    if (e.target.closest('input, video, audio')) return; // they use the arrows themselves
    if (e.key === 'ArrowLeft') step('prev');
    if (e.key === 'ArrowRight') step('next');
  });

  return { open, close };
}

/** The ids before and after `id` in `ids`. */
function neighbours(ids, id) {
  const i = ids.indexOf(id);
  return { prev: i > 0 ? ids[i - 1] : null, next: i >= 0 && i < ids.length - 1 ? ids[i + 1] : null };
}
