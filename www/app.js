// The library app: the photos, audio and video kept on this device, in an
// SQLite database that the package 'resq-wasm' keeps in this origin's
// private file system. It imports the package by name, like any user; the
// import map in index.html says where it is installed. This file starts the
// app and wires its controls; each part lives in a module of its own.

import { open } from 'resq-wasm';
import { addFiles } from './add.js';
import { backupSupport, exportLibrary, importLibrary } from './backup.js';
import { deleteAll, facts, migrate, NAME, SORTS } from './db.js';
import { createGrid } from './grid.js';
import { createInspect } from './inspect.js';
import { keepForOffline, takeControl } from './offline.js';
import { createPlayer } from './player.js';
import { createRecorder } from './record.js';
import { showStorage } from './storage.js';
import { serveMedia } from './stream.js';
import { $, confirmed, describeError, formatBytes, h, progress, toast } from './ui.js';

async function start() {
  // The service worker first, so that the package's worker is fetched through it (offline.js).
  const controlled = await takeControl();
  const db = await open(NAME);
  await migrate(db);
  serveMedia(db);
  const grid = createGrid(db, { onOpen: (id) => player.open(id) });
  const player = createPlayer(db, { order: grid.ids, thumbUrl: grid.thumbUrl });
  const recorder = createRecorder(db);
  const panel = createPanel(db, player);
  createInspect(db);
  wireControls({ db, grid, recorder });
  const offline = controlled && (await keepForOffline()) ? 'ready' : 'unavailable';
  panel.setOffline(offline);
  document.body.dataset.offline = offline;
}

function wireControls({ db, grid, recorder }) {
  const view = { text: '', kind: '', sort: SORTS.includes(localStorage.sort) ? localStorage.sort : 'newest' };
  grid.show(view);

  let typing;
  $('#search').addEventListener('input', (e) => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      view.text = e.target.value.trim();
      grid.show({ ...view });
    }, 120);
  });
  $('#sort').value = view.sort;
  $('#sort').addEventListener('change', (e) => {
    view.sort = localStorage.sort = e.target.value;
    grid.show({ ...view });
  });
  const filters = document.querySelectorAll('.filters button');
  for (const button of filters) {
    button.addEventListener('click', () => {
      view.kind = button.dataset.kind;
      for (const b of filters) b.setAttribute('aria-pressed', b === button);
      grid.show({ ...view });
    });
  }

  for (const picker of ['#picker', '#picker-empty']) {
    $(picker).addEventListener('change', (e) => {
      addFiles(db, e.target.files);
      e.target.value = ''; // so that choosing the same file again is a change
    });
  }
  $('#record-audio').addEventListener('click', () => recorder.start('audio'));
  $('#record-empty').addEventListener('click', () => recorder.start('audio'));
  $('#record-video').addEventListener('click', () => recorder.start('video'));

  // Drop anywhere: an overlay while files are dragged over the page.
  let depth = 0;
  const overlay = $('#drop-overlay');
  const carriesFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes('Files');
  addEventListener('dragenter', (e) => {
    if (!carriesFiles(e)) return;
    depth++;
    overlay.hidden = false;
  });
  addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (!depth) overlay.hidden = true;
  });
  addEventListener('dragover', (e) => carriesFiles(e) && e.preventDefault());
  addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    overlay.hidden = true;
    if (e.dataTransfer.files.length) addFiles(db, e.dataTransfer.files);
  });
}

/** The storage panel: sizes, persistence, offline, backup and starting over. */
function createPanel(db, player) {
  const panel = $('#storage');
  let offline = 'checking';

  async function show() {
    const { canExport, canImport } = backupSupport(db);
    $('#export').disabled = !canExport;
    $('#import').disabled = !canImport;
    $('#import-label').classList.toggle('disabled', !canImport);
    const missing = [!canExport && 'export()', !canImport && 'importDatabase()'].filter(Boolean);
    if (missing.length)
      $('#backup-state').textContent = `Backup needs ${missing.join(' and ')}, which this build of resq-wasm does not have yet.`;
    $('#offline-state span').textContent = {
      checking: 'Getting ready to work offline…',
      ready: 'Ready: this app and your library open without a network.',
      unavailable: 'Not available now: the service worker is not running this page (a hard reload bypasses it; reload normally).',
    }[offline];
    $('#offline-state').dataset.state = offline;
    try {
      await showStorage(db);
    } catch (err) {
      toast(describeError(err), { error: true });
    }
    if (!panel.open) panel.showModal();
  }
  $('#open-storage').addEventListener('click', show);
  panel.querySelector('[data-close]').addEventListener('click', () => panel.close());

  $('#export').addEventListener('click', async () => {
    const fileName = `library-${new Date().toISOString().slice(0, 10)}.db`;
    progress.start(`Exporting ${fileName}`);
    // Not awaited: the save picker must open in the click's own turn. The
    // query still answers before the export's first chunk (calls keep their order).
    let total = 0;
    facts(db).then(
      (f) => (total = f.file),
      () => {},
    );
    try {
      const written = await exportLibrary(db, { fileName, onBytes: (n) => progress.bytes(n, total, formatBytes(n)) });
      if (written !== null) $('#backup-state').textContent = `Exported ${fileName} (${formatBytes(written)}).`;
    } catch (err) {
      $('#backup-state').textContent = `Export failed: ${describeError(err)}`;
    } finally {
      progress.end();
    }
  });

  $('#import').addEventListener('change', async (e) => {
    const [file] = e.target.files;
    e.target.value = '';
    if (
      !file ||
      !(await confirmed(`Replace this library with the backup “${file.name}”? Items that are not in the backup will be gone.`, 'Replace'))
    )
      return;
    progress.start(`Importing ${file.name}`);
    player.close();
    const onBytes = (n) => {
      progress.bytes(n, file.size, n < file.size ? formatBytes(n) : 'checking every page, then copying it in');
      if (n === file.size) progress.busy(0, 1, 1);
    };
    try {
      // In place: the package replaces the database in the worker that holds
      // it, and the live queries of every tab run again, this grid's too.
      await importLibrary(NAME, file, { onBytes });
      $('#backup-state').textContent = `Imported ${file.name} (${formatBytes(file.size)}).`;
    } catch (err) {
      $('#backup-state').textContent = `Import failed; the library is as it was. ${describeError(err)}`;
    } finally {
      progress.end();
      await show();
    }
  });

  $('#clear').addEventListener('click', async () => {
    if (!(await confirmed('Delete every item in this library? Only a backup can bring them back.', 'Delete everything'))) return;
    try {
      await deleteAll(db);
      await show();
    } catch (err) {
      toast(describeError(err), { error: true });
    }
  });

  return {
    setOffline(state) {
      offline = state;
      if (panel.open) show();
    },
  };
}

start().catch((err) => {
  document.body.dataset.ready = 'failed';
  $('#summary').textContent = 'The library could not be opened';
  $('main').replaceChildren(
    h(
      'section',
      { className: 'empty' },
      h('h2', {}, 'This browser cannot keep the library'),
      h('p', {}, describeError(err)),
      h(
        'p',
        { className: 'fine' },
        'It needs the origin private file system (OPFS) in a Web Worker: a current Chrome, Edge, Firefox or Safari, outside a private window.',
      ),
    ),
  );
});
