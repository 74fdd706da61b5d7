// Adding files: photos, audio and video, dropped or picked, many at once.
// Each file gets its thumbnail made in the page, then goes into the
// database as a `File` parameter: the package streams it into its row in
// 1 MB pieces, so the page never reads it and nothing holds it whole.

import { addItem } from './db.js';
import { describe } from './thumbs.js';
import { describeError, formatBytes, progress, toast } from './ui.js';

// Types browsers leave empty or generic for some common media files.
const BY_EXTENSION = {
  heic: 'image/heic',
  avif: 'image/avif',
  webp: 'image/webp',
  jxl: 'image/jxl',
  m4a: 'audio/mp4',
  flac: 'audio/flac',
  opus: 'audio/ogg',
  oga: 'audio/ogg',
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  mkv: 'video/x-matroska',
  mov: 'video/quicktime',
  m4v: 'video/mp4',
  webm: 'video/webm',
  mp4: 'video/mp4',
};

/** The MIME type of `file` and its kind ('image', 'audio', 'video'), or null when it is none of them. */
export function typeOf(file) {
  const ext = file.name.split('.').pop().toLowerCase();
  const type = file.type && file.type !== 'application/octet-stream' ? file.type : (BY_EXTENSION[ext] ?? '');
  const kind = type.split('/')[0];
  return ['image', 'audio', 'video'].includes(kind) ? { type, kind } : null;
}

let queue = Promise.resolve();

/** Stores `files` one after the other; a second drop waits for the first. */
export function addFiles(db, files) {
  const list = [...files]; // now: a file input's FileList empties when the input is reset
  queue = queue.then(() => store(db, list)).catch((err) => toast(describeError(err), { error: true }));
  return queue;
}

async function store(db, files) {
  const wanted = files.filter((f) => typeOf(f) && f.size > 0);
  const failed = files.filter((f) => !wanted.includes(f)).map((f) => `${f.name} (not a photo, audio or video, or empty)`);
  const total = wanted.reduce((n, f) => n + f.size, 0);
  let done = 0;
  if (!wanted.length) return toast(`Not added: ${failed.join('; ')}`, { error: true });
  progress.start(wanted.length === 1 ? `Adding ${wanted[0].name}` : `Adding ${wanted.length} files`);
  try {
    for (const [i, file] of wanted.entries()) {
      const count = wanted.length > 1 ? `${i + 1} of ${wanted.length}: ` : '';
      progress.bytes(done, total, `${count}${file.name}, ${formatBytes(file.size)}`);
      progress.busy(done, done + file.size, total);
      const { type, kind } = typeOf(file);
      const { thumb, ...meta } = await describe(file, kind);
      try {
        await addItem(db, { name: file.name, type, kind, size: file.size, data: file, ...meta }, thumb);
      } catch (err) {
        // A failed call changes nothing, so the next file can still go in.
        failed.push(`${file.name} (${describeError(err)})`);
      }
      done += file.size;
    }
  } finally {
    progress.end();
  }
  const added = files.length - failed.length;
  if (failed.length) toast(`Added ${added} of ${files.length}. Not added: ${failed.join('; ')}`, { error: true });
  else toast(added === 1 ? `Added ${files[0].name}` : `Added ${added} files (${formatBytes(total)})`);
}
