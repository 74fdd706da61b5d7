// The demo app: imports 'resq-wasm' by name like any user (an import map
// points it at the built package), keeps dropped files in an OPFS database.
import { open, transfer } from 'resq-wasm';

const $ = (sel) => document.querySelector(sel);
const status = (text, isError = false) => {
  $('#status').textContent = text;
  $('#status').classList.toggle('error', isError);
};
const size = (n) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KB` : `${(n / (1 << 20)).toFixed(1)} MB`);

const db = await open('demo-media.db');
await db.execute(`CREATE TABLE IF NOT EXISTS media(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
  size INTEGER NOT NULL, stored_at TEXT NOT NULL DEFAULT (datetime('now')), data BLOB NOT NULL)`);
window.resqDemo = { db }; // for the demo's own browser test and for poking around

async function list() {
  const rows = await db.query('SELECT id, name, type, size, stored_at FROM media ORDER BY id DESC');
  const body = $('#files tbody');
  body.replaceChildren(
    ...rows.map((r) => {
      const tr = document.createElement('tr');
      tr.dataset.id = r.id;
      for (const [text, cls] of [[r.name], [r.type || '?'], [size(r.size), 'num'], [r.stored_at]]) {
        const td = document.createElement('td');
        td.textContent = text;
        if (cls) td.className = cls;
        tr.append(td);
      }
      const actions = document.createElement('td');
      const show = Object.assign(document.createElement('button'), { textContent: 'show' });
      show.onclick = () => view(r.id);
      const del = Object.assign(document.createElement('button'), { textContent: 'delete' });
      del.onclick = async () => {
        await db.execute('DELETE FROM media WHERE id = ?', [r.id]);
        $('#viewer').hidden = true;
        await list();
      };
      actions.append(show, ' ', del);
      tr.append(actions);
      return tr;
    }),
  );
  status(rows.length ? `${rows.length} file(s) stored in OPFS.` : 'No files yet.');
}

async function store(files) {
  for (const file of files) {
    status(`Storing ${file.name}…`);
    const bytes = new Uint8Array(await file.arrayBuffer());
    // transfer(): the worker takes the buffer as it is, no copy.
    await db.execute('INSERT INTO media(name, type, size, data) VALUES (?, ?, ?, ?)', [
      file.name, file.type, bytes.byteLength, transfer(bytes),
    ]);
  }
  await list();
}

let shownUrl = null;
async function view(id) {
  const [row] = await db.query('SELECT name, type, data FROM media WHERE id = ?', [id]);
  if (!row) return;
  if (shownUrl) URL.revokeObjectURL(shownUrl);
  shownUrl = URL.createObjectURL(new Blob([row.data], { type: row.type }));
  const kind = row.type.split('/')[0];
  const el = kind === 'image' ? new Image() : kind === 'video' || kind === 'audio' ? document.createElement(kind) : document.createElement('a');
  if (el instanceof HTMLMediaElement) el.controls = true;
  if (el instanceof HTMLAnchorElement) Object.assign(el, { href: shownUrl, download: row.name, textContent: `download ${row.name}` });
  else el.src = shownUrl;
  $('#viewer-name').textContent = row.name;
  $('#viewer-media').replaceChildren(el);
  $('#viewer').hidden = false;
}

const drop = $('#drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  store([...e.dataTransfer.files]).catch((err) => status(`${err.code}: ${err.message}`, true));
});
$('#picker').addEventListener('change', (e) => store([...e.target.files]).catch((err) => status(`${err.code}: ${err.message}`, true)));

await list();
