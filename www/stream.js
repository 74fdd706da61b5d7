// The page's half of the `media/<id>?v=…` URLs (see sw.js): the service worker
// forwards a request with its Range header; this answers with the status
// and headers, then the bytes, read with `blobStream` one chunk per pull.
// Only the range asked for is read: seeking in a large video reads from the
// new position on, and a player that stops pulling stops the reads.

/** The URL of item `item`'s media; `v` (when it was added) tells it from a later item of the same id. */
export const mediaPath = (item) => `media/${item.id}?v=${item.added}`;

/** Answers the service worker's media requests from `db`. */
export function serveMedia(db) {
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('message', (event) => {
    if (event.data?.media !== undefined) answer(db, event.data, event.ports[0]);
  });
  navigator.serviceWorker.startMessages();
}

// The type and size of items asked for, by URL. A player sends a request
// per seek; a query between two of them would close the package's read
// handle on the value, and the next far read would walk the value's chain
// of pages from its start again (docs/API.md, "Reading stored BLOBs").
const known = new Map();

function lookUp(db, path) {
  if (!known.has(path)) {
    const { pathname, searchParams } = new URL(path, 'x:/');
    const id = Number(pathname.slice(1));
    const added = Number(searchParams.get('v'));
    const item = Number.isSafeInteger(id)
      ? db.query('SELECT id, type, size FROM items WHERE id = ? AND added = ?', [id, added]).then(([row]) => row ?? null)
      : Promise.resolve(null);
    known.set(path, item);
    item.then(
      (found) => found || known.delete(path),
      () => known.delete(path),
    );
  }
  return known.get(path);
}

async function answer(db, { media, range }, port) {
  let reader;
  try {
    const item = await lookUp(db, media);
    if (!item) return port.postMessage({ status: 404, headers: {} });
    const span = parseRange(range, item.size);
    if (!span) return port.postMessage({ status: 416, headers: { 'content-range': `bytes */${item.size}` } });
    const { start, end } = span;
    const headers = {
      'content-type': item.type,
      'content-length': String(end - start + 1),
      'accept-ranges': 'bytes',
      'cache-control': 'no-store',
    };
    if (range) headers['content-range'] = `bytes ${start}-${end}/${item.size}`;
    reader = db.blobStream('items', 'data', item.id, { offset: start, length: end - start + 1 }).getReader();
    port.postMessage({ status: range ? 206 : 200, headers });
  } catch (err) {
    return port.postMessage({ status: 500, headers: {}, error: String(err) });
  }
  port.onmessage = async ({ data }) => {
    if (data === 'cancel') return void reader.cancel().catch(() => {});
    try {
      const { value, done } = await reader.read();
      if (done) port.postMessage({ done });
      else port.postMessage({ chunk: value }, [value.buffer]);
    } catch (err) {
      port.postMessage({ error: `${err.code ?? err.name}: ${err.message}` });
    }
  };
}

/**
 * The bytes a Range header asks for, as { start, end } (inclusive), the
 * whole value without one, or null when it cannot be served. One range only:
 * players ask for one.
 */
export function parseRange(header, size) {
  if (!header) return size > 0 ? { start: 0, end: size - 1 } : null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  const start = m[1] === '' ? Math.max(0, size - Number(m[2])) : Number(m[1]);
  const end = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  return start <= end && start < size ? { start, end } : null;
}
