// The storage panel: how big the database is (SQLite's own count of pages ×
// the page size), how much this origin uses of its quota, and whether the
// browser may clear it (`navigator.storage.persist()`).

import { facts } from './db.js';
import { $, describeError, formatBytes, h } from './ui.js';

export async function showStorage(db) {
  const [library, estimate, persisted] = await Promise.all([
    facts(db),
    navigator.storage.estimate(),
    navigator.storage.persisted?.() ?? false,
  ]);
  const rows = [
    ['Items', `${library.items.toLocaleString()} (${formatBytes(library.media)} of media)`],
    ['Database file', `${formatBytes(library.file)} (${library.file.toLocaleString()} bytes)`],
  ];
  if (library.free > 0) rows.push(['Free inside it', `${formatBytes(library.free)}, reused by the next items`]);
  $('#storage-library').replaceChildren(...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  $('#storage-library').dataset.fileBytes = library.file;

  const { usage = 0, quota = 0 } = estimate;
  $('#quota-bar').style.width = `${quota ? Math.max(0.5, (100 * usage) / quota) : 0}%`;
  $('#storage-quota').textContent = quota
    ? `${formatBytes(usage)} used of ${formatBytes(quota)} this browser allows this site (${((100 * usage) / quota).toFixed(usage / quota < 0.01 ? 2 : 0)} %).`
    : 'This browser does not say how much this site may store.';
  showPersisted(persisted);
}

function showPersisted(persisted) {
  $('#persist-state').textContent = persisted
    ? 'Persistent: the browser keeps this library until you delete it.'
    : 'Best effort: the browser may clear this library to make room, or after a long absence.';
  $('#persist-state').dataset.persisted = persisted;
  $('#persist').hidden = persisted;
}

$('#persist').addEventListener('click', async () => {
  try {
    const granted = await navigator.storage.persist();
    showPersisted(granted);
    if (!granted)
      $('#persist-state').textContent += ' The browser said no for now (browsers grant it to sites you use often, or have installed).';
  } catch (err) {
    $('#persist-state').textContent = describeError(err);
  }
});
