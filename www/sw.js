// The service worker: makes the app work offline, and gives stored media
// URLs that a <video> can seek in.
//
// Offline: every GET of this origin goes to the network first and, when that
// fails, to the copy kept from the last time it worked. Nothing is listed
// here: the page tells the worker what it loaded before the worker was in
// control (offline.js), and everything after passes through it: the
// package's dedicated worker, its wasm and its SharedWorker included, which
// is why they are served inside this worker's scope.
//
// Media: `media/<id>?v=<added>` is the BLOB of item <id>. The page that
// asks holds the database; this worker forwards the request (with its Range
// header) to that page and passes on the answer a chunk at a time
// (stream.js). A player seeking in a 500 MB video asks for the range it
// needs, and only that range is read from the database.

const CACHE = 'library-v1';
const MEDIA = new URL('media/', self.registration.scope).pathname;
const pending = new Set(); // cache writes in flight

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('message', (event) => {
  if (!Array.isArray(event.data?.cache)) return;
  // Cache what the page lists, then answer once every write, these and those
  // of requests seen so far, is done: the page then knows it works offline.
  const done = Promise.all(event.data.cache.map((url) => keep(new Request(url)))).then(() => Promise.all(pending));
  event.waitUntil(
    done.then(
      () => event.ports[0]?.postMessage({ cached: true }),
      (err) => event.ports[0]?.postMessage({ error: String(err) }),
    ),
  );
});

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (url.origin !== self.location.origin || event.request.method !== 'GET') return;
  if (url.pathname.startsWith(MEDIA)) return event.respondWith(media(event, url.pathname.slice(MEDIA.length) + url.search));
  event.respondWith(networkFirst(event));
});

async function networkFirst(event) {
  const { request } = event;
  try {
    const response = await fetch(request);
    if (response.ok && response.type === 'basic') event.waitUntil(store(request, response.clone()));
    return response;
  } catch (err) {
    const cache = await caches.open(CACHE);
    // A navigation to the app, with or without a query, is its page.
    const cached = (await cache.match(request)) ?? (request.mode === 'navigate' ? await cache.match(self.registration.scope) : undefined);
    if (cached) return cached;
    throw err;
  }
}

/** Keeps a fresh copy of `request`; offline, the copy already kept will do. */
async function keep(request) {
  try {
    const response = await fetch(request);
    if (response.ok) return await store(request, response);
  } catch {}
  if (!(await caches.match(request))) throw new Error(`${request.url} is not kept`);
}

function store(request, response) {
  const write = caches.open(CACHE).then((cache) => cache.put(request, response));
  pending.add(write);
  return write.finally(() => pending.delete(write));
}

/**
 * Answers `media/…` from the page that asked. The page replies first with
 * { status, headers }, then with { chunk } | { done } | { error } for each
 * 'pull', so no more than one chunk is on its way at a time.
 */
async function media(event, path) {
  const client = (await self.clients.get(event.clientId)) ?? (await self.clients.matchAll({ type: 'window' }))[0];
  if (!client) return new Response('No open page holds the library.', { status: 503 });
  const { port1, port2 } = new MessageChannel();
  const next = () => new Promise((resolve) => (port1.onmessage = ({ data }) => resolve(data)));
  const head = next();
  client.postMessage({ media: path, range: event.request.headers.get('range') }, [port2]);
  const { status, headers } = await head;
  if (status !== 200 && status !== 206) {
    port1.close();
    return new Response(null, { status, headers });
  }
  const body = new ReadableStream(
    {
      async pull(controller) {
        const reply = next();
        port1.postMessage('pull');
        const { chunk, done, error } = await reply;
        if (chunk) return controller.enqueue(chunk);
        port1.close();
        if (done) controller.close();
        else controller.error(new Error(error));
      },
      cancel() {
        port1.postMessage('cancel');
        port1.close();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status, headers });
}
