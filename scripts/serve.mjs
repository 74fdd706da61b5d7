// A static file server for the demo, the tests and the benchmarks: serves a
// folder on 127.0.0.1 with the MIME types module workers and wasm need.
//
//   node scripts/serve.mjs <folder> [port] [path] [--mount <url-prefix>=<folder>]…   (prints the URL)
//   import { serve } from './serve.mjs'; const { url, close } = await serve(folder);
//
// With { isolated: true } pages are cross-origin isolated (COOP + COEP), which
// gives benchmarks 5 µs timers instead of 100 µs and tests SharedArrayBuffer.
// `overrides` maps URL paths to text served in place of the file there (the
// benchmarks' probe worker; see tests/e2e/probe-worker.js). `headers` are
// added to every response (a Content-Security-Policy, say); `log`, an array,
// gets { path, status, dest } for each request (`dest`: the browser's
// Sec-Fetch-Dest, such as 'worker' or 'sharedworker'). `mounts` maps URL
// prefixes to other folders: the demo serves www/ at / and the package's
// pkg/ at /node_modules/resq-wasm/pkg/, inside its service worker's scope.

import { createServer } from 'node:http';
import { createReadStream, statSync } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.webm': 'video/webm',
  '.mp4': 'video/mp4',
  '.map': 'application/json',
};

export function serve(folder, port = 0, { isolated = false, overrides = {}, headers = {}, log = null, mounts = {} } = {}) {
  const roots = [...Object.entries(mounts).map(([prefix, dir]) => [prefix, resolve(dir)]), ['/', resolve(folder)]];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    res.on('finish', () => log?.push({ path, status: res.statusCode, dest: req.headers['sec-fetch-dest'] }));
    const extra = {
      ...(isolated ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' } : {}),
      ...headers,
    };
    if (path in overrides) {
      const body = Buffer.from(overrides[path]);
      const type = TYPES[extname(path)] ?? 'application/octet-stream';
      return void res
        .writeHead(200, { 'content-type': type, 'content-length': body.length, 'cache-control': 'no-store', ...extra })
        .end(body);
    }
    const [prefix, root] = roots.find(([prefix]) => path.startsWith(prefix));
    let file = normalize(join(root, path.slice(prefix.length)));
    if (!file.startsWith(root)) return void res.writeHead(403).end();
    try {
      if (statSync(file).isDirectory()) file = join(file, 'index.html');
      const size = statSync(file).size;
      res.writeHead(200, {
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        'content-length': size,
        'cache-control': 'no-store',
        ...extra,
      });
      createReadStream(file).pipe(res);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  return new Promise((done) => {
    server.listen(port, '127.0.0.1', () => {
      // close() also ends open connections (a kept-alive socket would
      // otherwise go on answering): a closed server is as good as offline.
      done({
        url: `http://127.0.0.1:${server.address().port}/`,
        close: () => {
          server.close();
          server.closeAllConnections();
        },
      });
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const mounts = {};
  for (let i; (i = args.indexOf('--mount')) >= 0; ) {
    const [prefix, dir] = args.splice(i, 2)[1].split('=');
    mounts[prefix] = dir;
  }
  const [folder = '.', port = '8080', path = ''] = args;
  const { url } = await serve(folder, Number(port), { mounts });
  console.log(`serving ${folder}: open ${url}${path}`);
}
