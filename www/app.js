// The demo app: imports 'resq-wasm' by name like any user (an import map
// points it at the built package), keeps dropped files in an OPFS database.
import { open } from 'resq-wasm';

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
    // A File parameter streams into the row in chunks: the page never reads it.
    await db.execute('INSERT INTO media(name, type, size, data) VALUES (?, ?, ?, ?)', [file.name, file.type, file.size, file]);
  }
  await list();
}

/** Records a few seconds of an animated canvas, appending each chunk to a staged blob as it arrives. */
async function recordClip(seconds = 3) {
  const canvas = Object.assign(document.createElement('canvas'), { width: 320, height: 180 });
  const g = canvas.getContext('2d');
  const t0 = performance.now();
  let frame = requestAnimationFrame(function draw(now) {
    const t = (now - t0) / 1000;
    g.fillStyle = `hsl(${(t * 90) % 360} 70% 45%)`;
    g.fillRect(0, 0, 320, 180);
    g.fillStyle = '#fff';
    g.font = 'bold 40px system-ui';
    g.fillText(`${t.toFixed(1)} s`, 100, 105);
    frame = requestAnimationFrame(draw);
  });
  const type = MediaRecorder.isTypeSupported('video/webm;codecs=vp9') ? 'video/webm;codecs=vp9' : 'video/webm';
  const recorder = new MediaRecorder(canvas.captureStream(30), { mimeType: type });
  const staged = await db.stageBlob();
  recorder.ondataavailable = (e) => staged.append(e.data);
  const stopped = new Promise((resolve) => (recorder.onstop = resolve));
  recorder.start(250);
  status(`Recording ${seconds} s…`);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  recorder.stop();
  await stopped;
  cancelAnimationFrame(frame);
  const name = `clip-${new Date().toISOString().slice(11, 19).replace(/:/g, '')}.webm`;
  await db.execute('INSERT INTO media(name, type, size, data) VALUES (?, ?, ?, ?)', [name, 'video/webm', staged.size, staged]);
  await list();
}

let shownUrl = null;
async function view(id) {
  const [row] = await db.query('SELECT name, type FROM media WHERE id = ?', [id]);
  if (!row) return;
  if (shownUrl) URL.revokeObjectURL(shownUrl);
  // Read in chunks by incremental blob I/O, handed over as a Blob.
  shownUrl = URL.createObjectURL(await db.blobFile('media', 'data', id, { type: row.type }));
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
$('#record').addEventListener('click', () => recordClip().catch((err) => status(`${err.code ?? err.name}: ${err.message}`, true)));
$('#picker').addEventListener('change', (e) => store([...e.target.files]).catch((err) => status(`${err.code}: ${err.message}`, true)));

await list();
