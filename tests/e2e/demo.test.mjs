// The demo app (www/), used as a person uses it, in a real browser: the
// package packed and installed as a user installs it, served where the demo
// serves it (the app at /, the package at /node_modules/resq-wasm/pkg/).
// The files are made in the page (tests/e2e/media-files.js): photos drawn
// on a canvas, a WAV built sample by sample, a WebM recorded from a canvas.
// The tests run in order, on one browser profile: each goes on from what the
// one before left, as a person's session would.
//
// With RESQ_SCREENSHOTS=1 (Chromium), the screenshots the README shows are
// written to tests/e2e/screenshots/ at 1280 × 800.

import { before, after, beforeEach, test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { ENGINE, installPackedApp, launch, ui } from './harness.mjs';
import { inPage } from './util.mjs';

// WebKitGTK: not run. Its media backend plays no video and records empty
// files (docs/API.md, "Safari and WebKit"), and the steps here drive the
// page through Playwright calls its WebDriver page (webkit.mjs) lacks.
const WEBKIT =
  ENGINE === 'webkit' &&
  'WebKitGTK: its media backend plays and records nothing, and its WebDriver page lacks the Playwright calls these steps use';
const test = (name, fn) => nodeTest(name, { skip: WEBKIT }, fn);

const repo = resolve(import.meta.dirname, '../..');
// What a file input says a chosen backup is: Firefox types files by their
// extension, and has no type for .db.
const BACKUP_TYPE = ENGINE === 'firefox' ? '' : 'application/vnd.sqlite3';
const SHOTS = process.env.RESQ_SCREENSHOTS && ENGINE === 'chromium' ? join(import.meta.dirname, 'screenshots') : null;

let app, server, browser, profile, page;
const sources = new Map(); // name → SHA-256 of the file as it was added

/** Serves the demo where scripts/demo.sh does, with the installed package; `port` 0 picks one. */
const serveDemo = (port) =>
  serve(join(repo, 'www'), port, {
    mounts: { '/node_modules/resq-wasm/pkg/': join(app, 'node_modules/resq-wasm/pkg') },
    overrides: { '/test/media-files.js': readFileSync(join(import.meta.dirname, 'media-files.js'), 'utf8') },
  });

before(async () => {
  if (WEBKIT) return;
  ({ app } = installPackedApp());
  server = await serveDemo(0);
  profile = mkdtempSync(join(tmpdir(), 'resq-demo-'));
  browser = await launch(profile, { fakeMedia: true });
  page = await newPage();
});
after(async () => {
  await browser?.close();
  server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  if (app) rmSync(app, { recursive: true, force: true });
});

// A test that failed may have left a dialog open or a search typed; the
// next one starts from the library itself.
beforeEach(() =>
  page
    ?.evaluate(() => {
      for (const d of document.querySelectorAll('dialog[open]')) d.close();
      const search = document.querySelector('#search');
      if (search.value) (search.value = ''), search.dispatchEvent(new Event('input', { bubbles: true }));
    })
    .catch(() => {}),
);

async function newPage() {
  const p = await browser.newPage();
  p.errors = [];
  p.on('pageerror', (e) => p.errors.push(e));
  if (ENGINE === 'chromium') await p.setViewportSize({ width: 1280, height: 800 });
  return p;
}

/** Loads the app in `p` and waits until its grid has been drawn once. */
async function openApp(p) {
  await p.goto(server.url);
  await until(p, () => document.body.dataset.ready, 'the app never got ready');
}

/** Waits until `fn` (run in the page, with `arg`) gives something truthy; returns it. */
async function until(p, fn, what, arg = null, ms = 30_000) {
  const t0 = Date.now();
  for (;;) {
    const value = await p.evaluate(fn, arg);
    if (value) return value;
    if (Date.now() - t0 > ms) {
      const said = await p
        .evaluate(() =>
          ['#toast', '#progress']
            .map((s) => document.querySelector(`${s}:not([hidden])`)?.textContent.trim())
            .filter(Boolean)
            .join('; '),
        )
        .catch(() => '');
      throw new Error(`${what} (after ${ms} ms${said ? `; the app showed: ${said}` : ''})`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const gridNames = (p) => p.evaluate(() => [...document.querySelectorAll('#grid .card .name')].map((e) => e.textContent));

async function shoot(p, name) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  // Once fonts are in and transitions have ended (the looping ones never do).
  await p.evaluate(() =>
    Promise.all([
      document.fonts.ready,
      ...document
        .getAnimations()
        .filter((a) => a.effect.getComputedTiming().iterations !== Infinity)
        .map((a) => a.finished),
    ]),
  );
  await p.screenshot({ path: join(SHOTS, `${name}.png`) });
}

/**
 * Makes files in the page (`make`: source run there, with the module
 * media-files.js as `m`), notes their SHA-256 and drops them on the app
 * the way a drag from the desktop does. Resolves to their names.
 */
async function dropFiles(p, make) {
  const added = await p.evaluate(async (src) => {
    const m = await import('/test/media-files.js');
    const files = await (0, eval)(`(${src})`)(m);
    const dt = new DataTransfer();
    const out = [];
    for (const f of files) {
      dt.items.add(f);
      const sha = [...new Uint8Array(await crypto.subtle.digest('SHA-256', await f.arrayBuffer()))]
        .map((b) => b.toString(16).padStart(2, '0'))
        .join('');
      out.push({ name: f.name, sha });
    }
    document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    return out;
  }, make.toString());
  for (const { name, sha } of added) sources.set(name, sha);
  return added.map((f) => f.name);
}

/** SHA-256 of every stored item, by name, read back through the package. */
function storedHashes(p) {
  return inPage(p, async ({ open }) => {
    const db = await open('library.db');
    try {
      const out = {};
      for (const { id, name } of await db.query('SELECT id, name FROM items ORDER BY id')) {
        const bytes = await db.readBlob('items', 'data', id);
        out[name] = [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
      }
      return out;
    } finally {
      await db.close();
    }
  });
}

/** Opens the card named `name` in the viewer and waits for its media element. */
async function openItem(p, name) {
  await p.evaluate((name) => [...document.querySelectorAll('#grid .card .open')].find((b) => b.title === name).click(), name);
  return until(
    p,
    (name) => document.querySelector('#viewer').open && document.querySelector('#viewer-name').textContent === name,
    `the viewer never showed ${name}`,
    name,
  );
}
const closeViewer = (p) => ui(p).click('#viewer [data-close]');

test('the library starts empty; dropped and picked photos, audio and video appear in the grid with thumbnails, stored byte for byte', async () => {
  await openApp(page);
  assert.equal(await page.evaluate(() => !document.querySelector('#empty').hidden), true, 'the empty state shows');
  await shoot(page, 'empty');

  const dropped = await dropFiles(page, async (m) => [
    await m.pngFile('beach-sunset.png', { hue: 20 }),
    await m.pngFile('mountain-lake.png', { hue: 200 }),
    await m.pngFile('forest-trail.png', { hue: 110 }),
    await m.pngFile('city-at-night.png', { hue: 250 }),
    m.wavFile('birdsong.wav', { seconds: 3 }),
    new File([await m.longWebm(await m.recordWebm({ seconds: 2 }), 0)], 'city-walk.webm', { type: 'video/webm' }),
  ]);
  // The file picker: a photo made in the page, chosen as a file from disk.
  const png = Buffer.from(
    await page.evaluate(async () => {
      const m = await import('/test/media-files.js');
      const f = await m.pngFile('desert-dunes.png', { hue: 35 });
      return btoa(String.fromCharCode(...new Uint8Array(await f.arrayBuffer())));
    }),
    'base64',
  );
  await until(page, (n) => document.querySelectorAll('#grid .card').length === n, 'the dropped files never all showed', dropped.length);
  await ui(page).setInputFiles('#picker', { name: 'desert-dunes.png', mimeType: 'image/png', buffer: png });
  const { createHash } = await import('node:crypto');
  sources.set('desert-dunes.png', createHash('sha256').update(png).digest('hex'));

  const names = [...dropped, 'desert-dunes.png'];
  await until(page, (n) => document.querySelectorAll('#grid .card').length === n, 'the picked file never showed', names.length);
  assert.deepEqual((await gridNames(page)).sort(), [...names].sort());
  // Newest first: the picked file, added last, leads.
  assert.equal((await gridNames(page))[0], 'desert-dunes.png');
  // Every card shows its thumbnail, read from the thumbs table.
  await until(
    page,
    (n) => [...document.querySelectorAll('#grid .thumb img')].filter((img) => img.complete && img.naturalWidth > 0).length === n,
    'the thumbnails never all showed',
    names.length,
  );
  const thumbs = await inPage(page, async ({ open }) => {
    const db = await open('library.db');
    try {
      return await db.query('SELECT i.name, t.type, length(t.data) AS n FROM items i JOIN thumbs t ON t.item = i.id ORDER BY i.id');
    } finally {
      await db.close();
    }
  });
  assert.equal(thumbs.length, names.length);
  assert.ok(
    thumbs.every((t) => t.n > 100 && t.type.startsWith('image/')),
    JSON.stringify(thumbs),
  );
  assert.deepEqual(await storedHashes(page), Object.fromEntries(sources));
  await until(page, () => document.querySelector('#toast:not([hidden])')?.textContent.startsWith('Added'), 'no message after adding');
  await page.evaluate(() => (document.querySelector('#toast').hidden = true));
  assert.deepEqual(page.errors, []);
});

test('right after the first visit the app works offline: a reload with the server gone shows the library and plays from it', async () => {
  // Ready once the service worker has kept the app, the package's worker and its wasm (offline.js).
  await until(page, () => document.body.dataset.offline === 'ready', 'the app never said it works offline');
  const port = new URL(server.url).port;
  server.close();
  await assert.rejects(fetch(server.url), 'the server is gone: only the service worker answers');
  await page.reload();
  await until(page, () => document.body.dataset.ready, 'the app never got ready offline');
  await until(page, (n) => document.querySelectorAll('#grid .card').length === n, 'the library never showed offline', sources.size);
  await until(page, () => document.body.dataset.offline === 'ready', 'offline, the app did not say it works offline');
  await openItem(page, 'city-walk.webm');
  const ready = await page.evaluate(async () => {
    const v = document.querySelector('#viewer video');
    if (v.readyState < 3) await new Promise((resolve) => v.addEventListener('canplay', resolve, { once: true }));
    return v.readyState;
  });
  assert.ok(ready >= 3);
  await closeViewer(page);
  assert.deepEqual(page.errors, []);
  server = await serveDemo(Number(port)); // online again, at the same origin, for the tests after this one
});

test('search finds items by name and by a tag added in the viewer (FTS5)', async () => {
  const { fill, press } = ui(page);
  const search = async (text, expected) => {
    await fill('#search', text);
    await until(
      page,
      (want) => JSON.stringify([...document.querySelectorAll('#grid .card .name')].map((e) => e.textContent).sort()) === want,
      `search “${text}” never gave ${expected}`,
      JSON.stringify([...expected].sort()),
    );
  };
  await search('sunset', ['beach-sunset.png']);
  await search('CITY', ['city-at-night.png', 'city-walk.webm']); // any case, any word of the name
  await search('cit wal', ['city-walk.webm']); // the start of each word

  await search('', [...sources.keys()]);
  await openItem(page, 'mountain-lake.png');
  for (const tag of ['Holiday', 'summer 2026']) {
    await fill('#tags-input', tag);
    await press('#tags-input', 'Enter');
  }
  await until(page, () => document.querySelectorAll('#tag-list .tag').length === 2, 'the tags never showed');
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('#tag-list .tag')].map((t) => t.textContent)), [
    'holiday',
    'summer 2026',
  ]);
  await shoot(page, 'item');
  await closeViewer(page);

  await search('holi', ['mountain-lake.png']);
  await search('summer lake', ['mountain-lake.png']);
  await search('"); DROP TABLE items; --', []); // typed text is never FTS5 syntax, let alone SQL
  assert.match(await page.evaluate(() => document.querySelector('#no-match').textContent), /Nothing matches/);
  await search('trail', ['forest-trail.png']);
  await fill('#search', 'city');
  await until(page, () => document.querySelectorAll('#grid .card').length === 2, 'search for city');
  await shoot(page, 'search');
  await search('', [...sources.keys()]);
  await page.evaluate(() => document.activeElement.blur());
  await shoot(page, 'grid');
  assert.deepEqual(page.errors, []);
});

test('the video plays from the database through the service worker, and seeks to the middle', async () => {
  await openItem(page, 'city-walk.webm');
  const played = await page.evaluate(async () => {
    const v = document.querySelector('#viewer video');
    const when = (event) =>
      new Promise((resolve, reject) => {
        v.addEventListener(event, resolve, { once: true });
        v.addEventListener('error', () => reject(new Error(`media error: ${v.error?.message}`)), { once: true });
      });
    if (v.readyState < 3) await when('canplay');
    v.pause();
    const middle = v.duration / 2;
    v.currentTime = middle;
    await when('seeked');
    const seekedTo = v.currentTime;
    // Playing on from there: the clock moves past the seek (or the clip
    // ends). Not a timer's worth of play: Firefox can run a page's timers
    // late by more than the second of clip left (experiment 034).
    const moved = new Promise((resolve) => {
      const past = () => v.currentTime > seekedTo + 0.05 && resolve();
      v.addEventListener('timeupdate', past);
      v.addEventListener('ended', resolve, { once: true });
    });
    await v.play();
    await Promise.race([moved, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    return {
      src: v.getAttribute('src'),
      controlled: !!navigator.serviceWorker.controller,
      duration: v.duration,
      middle,
      seekedTo,
      later: v.currentTime,
      paused: v.paused,
      ended: v.ended,
    };
  });
  assert.match(played.src, /^media\/\d+\?v=\d+$/);
  assert.equal(played.controlled, true);
  assert.ok(played.duration > 1.5 && played.duration < 3, `duration ${played.duration}`);
  assert.ok(Math.abs(played.seekedTo - played.middle) < 0.1, JSON.stringify(played));
  assert.ok(played.later > played.seekedTo + 0.05 && (!played.paused || played.ended), JSON.stringify(played));
  // The same URL answers ranges as a server would.
  const ranges = await page.evaluate(async (src) => {
    const head = await fetch(src, { headers: { range: 'bytes=0-3' } });
    const tail = await fetch(src, { headers: { range: 'bytes=-2' } });
    const bad = await fetch(src, { headers: { range: 'bytes=999999999-' } });
    const missing = await fetch(src.replace(/v=\d+/, 'v=1'));
    return {
      head: [head.status, head.headers.get('content-range'), [...new Uint8Array(await head.arrayBuffer())]],
      tail: [tail.status, (await tail.arrayBuffer()).byteLength],
      bad: bad.status,
      missing: missing.status,
    };
  }, played.src);
  assert.equal(ranges.head[0], 206);
  assert.match(ranges.head[1], /^bytes 0-3\/\d+$/);
  assert.deepEqual(ranges.head[2], [0x1a, 0x45, 0xdf, 0xa3]); // EBML
  assert.deepEqual(ranges.tail, [206, 2]);
  assert.equal(ranges.bad, 416);
  assert.equal(ranges.missing, 404);
  await closeViewer(page);

  await openItem(page, 'birdsong.wav');
  const audio = await page.evaluate(async () => {
    const a = document.querySelector('#viewer audio');
    if (a.readyState < 3) await new Promise((resolve) => a.addEventListener('canplay', resolve, { once: true }));
    return { duration: a.duration, art: document.querySelector('#viewer .art')?.tagName };
  });
  assert.ok(Math.abs(audio.duration - 3) < 0.05, `audio duration ${audio.duration}`);
  assert.equal(audio.art, 'IMG'); // the waveform, from the thumbs table
  await closeViewer(page);
  assert.deepEqual(page.errors, []);
});

test('what was added is still there after a reload, byte for byte, with its tags', async () => {
  await page.reload();
  await until(page, () => document.body.dataset.ready, 'the app never got ready after the reload');
  await until(page, (n) => document.querySelectorAll('#grid .card').length === n, 'the items never showed after the reload', sources.size);
  assert.deepEqual((await gridNames(page)).sort(), [...sources.keys()].sort());
  assert.deepEqual(await storedHashes(page), Object.fromEntries(sources));
  const tags = await page.evaluate(
    () =>
      [...document.querySelectorAll('#grid .card')].find((c) => c.textContent.includes('mountain-lake')).querySelector('.tags').textContent,
  );
  assert.equal(tags, 'holidaysummer 2026');
  assert.deepEqual(page.errors, []);
});

test('a voice note and a camera clip are recorded, chunk by chunk, into the library', async () => {
  const { clickButton } = ui(page);
  for (const [button, prefix, kind] of [
    ['Voice note', 'Voice note ', 'audio'],
    ['Camera', 'Camera clip ', 'video'],
  ]) {
    await clickButton(button);
    await until(page, () => document.querySelector('#recorder').open, `the ${kind} recorder never opened`);
    await until(
      page,
      () => document.querySelector('#recorder-time').textContent >= '0:02',
      'the recording clock never reached 0:02',
      null,
      15_000,
    );
    await clickButton('Stop and save');
    const name = await until(
      page,
      (prefix) => [...document.querySelectorAll('#grid .card .name')].map((e) => e.textContent).find((n) => n.startsWith(prefix)),
      `no ${prefix}card`,
      prefix,
    );
    sources.set(name, (await storedHashes(page))[name]); // what was recorded is what is stored, from here on
    const stored = await inPage(
      page,
      async ({ open }, name) => {
        const db = await open('library.db');
        try {
          const [row] = await db.query(
            'SELECT kind, type, size, length(data) AS n, duration, tags, (SELECT length(data) FROM thumbs WHERE item = items.id) AS thumb FROM items WHERE name = ?',
            [name],
          );
          return row;
        } finally {
          await db.close();
        }
      },
      name,
    );
    assert.equal(stored.kind, kind);
    assert.match(stored.type, new RegExp(`^${kind}/`));
    assert.ok(stored.size > 1000 && stored.n === stored.size, JSON.stringify(stored));
    assert.ok(stored.duration >= 1.5 && stored.duration < 30, JSON.stringify(stored)); // the clock rounds: 0:02 from 1.5 s
    assert.ok(stored.thumb > 100, 'a thumbnail was made');
    assert.match(stored.tags, /recording/);
    await openItem(page, name);
    // It plays; and its length, which MediaRecorder does not write, is the
    // recorder's: Chromium's player has it once it has read the short file
    // to its end, Firefox's only once it has played it.
    const findsLength = ENGINE === 'chromium';
    const played = await until(
      page,
      (findsLength) => {
        const m = document.querySelector('#viewer video, #viewer audio');
        if (m.error) return { error: m.error.message };
        return m.readyState >= 2 && (!findsLength || Number.isFinite(m.duration)) && { length: m.duration };
      },
      `the ${kind} recording never played`,
      findsLength,
    );
    // Headless Firefox here has no audio output device: playing sound fails
    // there ("OnMediaSinkAudioError"), whatever the page does.
    if (!(ENGINE === 'firefox' && /MediaSinkAudioError/.test(played.error))) assert.equal(played.error, undefined);
    if (findsLength)
      assert.ok(Math.abs(played.length - stored.duration) < 1, `the player says ${played.length} s, the recorder ${stored.duration} s`);
    await closeViewer(page);
  }
  assert.deepEqual(page.errors, []);
});

test('a second tab sees an item added in the first, without a reload', async () => {
  const second = await newPage();
  await openApp(second);
  await until(
    second,
    (n) => document.querySelectorAll('#grid .card').length === n,
    'the second tab never showed the library',
    sources.size,
  );
  const [name] = await dropFiles(page, async (m) => [await m.pngFile('from-the-first-tab.png', { hue: 320 })]);
  await until(
    second,
    (name) => [...document.querySelectorAll('#grid .card .name')].some((e) => e.textContent === name),
    'the second tab never showed the new item',
    name,
  );
  // And back: a tag set in the second tab shows on the first one's card.
  await openItem(second, name);
  await ui(second).fill('#tags-input', 'shared');
  await ui(second).press('#tags-input', 'Enter');
  await until(
    page,
    (name) =>
      [...document.querySelectorAll('#grid .card')].find((c) => c.querySelector('.name').textContent === name)?.querySelector('.tags')
        ?.textContent === 'shared',
    'the first tab never showed the tag',
    name,
  );
  assert.deepEqual(second.errors, []);
  await second.close();
  assert.deepEqual(page.errors, []);
});

test('the storage panel shows the database size, the quota, and asks to persist', async () => {
  await ui(page).clickButton('Storage');
  await until(
    page,
    () => document.querySelector('#storage').open && document.querySelector('#storage-library').dataset.fileBytes,
    'the storage panel never opened',
  );
  const shown = await page.evaluate(() => ({
    file: Number(document.querySelector('#storage-library').dataset.fileBytes),
    text: document.querySelector('#storage').innerText,
    persisted: document.querySelector('#persist-state').dataset.persisted,
    offline: document.querySelector('#offline-state').dataset.state,
  }));
  const actual = await inPage(page, async ({ open }) => {
    const db = await open('library.db');
    try {
      const [row] = await db.query('SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()');
      return { bytes: row.bytes, estimate: await navigator.storage.estimate() };
    } finally {
      await db.close();
    }
  });
  assert.equal(shown.file, actual.bytes);
  assert.match(shown.text, new RegExp(`${actual.bytes.toLocaleString('en-US')} bytes`));
  assert.match(shown.text, /used of .* this browser allows this site/);
  assert.match(shown.text, /Safari .* 7 days/);
  assert.equal(shown.offline, 'ready');
  await shoot(page, 'storage');
  if (shown.persisted === 'false') {
    await ui(page).clickButton('Ask to keep this library');
    await until(page, () => /Persistent|said no/.test(document.querySelector('#persist-state').textContent), 'no answer to persist()');
  }
  assert.deepEqual(page.errors, []);
});

test('the Inspect view shows the library database: its tables, counted, and the photos as thumbnails; closing it lets them go', async () => {
  await page.evaluate(() => {
    // Notes the object URLs the page revokes from here on.
    const revoked = (window.revokedUrls = new Set());
    const revoke = URL.revokeObjectURL;
    URL.revokeObjectURL = (u) => (revoked.add(u), revoke(u));
  });
  await ui(page).clickButton('Inspect');
  const shown = await until(
    page,
    () => {
      const root = document.querySelector('#inspect[open] resq-inspector')?.shadowRoot;
      const imgs = [...(root?.querySelectorAll('td img') ?? [])];
      if (!imgs.length || !imgs.every((i) => i.complete && i.naturalWidth > 0)) return null;
      return {
        tables: [...root.querySelectorAll('.side .tables button.item')].map((b) => b.dataset.name),
        items: root.querySelector('.side button.item[data-name="items"] small').textContent,
        images: imgs.map((i) => i.src),
        storage: root.querySelector('.figures dd').textContent,
      };
    },
    'the inspector never showed the library',
  );
  const count = await inPage(page, async ({ open }) => {
    const db = await open('library.db');
    try {
      return (await db.query('SELECT count(*) AS n FROM items'))[0].n;
    } finally {
      await db.close();
    }
  });
  // The app's tables and the FTS5 index, not FTS5's own shadow tables.
  assert.deepEqual(shown.tables.sort(), ['items', 'search', 'thumbs']);
  assert.match(shown.items, new RegExp(`^${count} rows · `));
  assert.ok(shown.images.length >= 1 && shown.images.every((u) => u.startsWith('blob:')), JSON.stringify(shown));
  assert.equal(shown.storage, 'OPFS');
  await shoot(page, 'inspect');
  await page.evaluate(() => document.querySelector('#inspect [data-close]').click());
  const left = await until(
    page,
    (images) => !document.querySelector('#inspect resq-inspector') && images.filter((u) => !window.revokedUrls.has(u)),
    'the inspector was not removed on close',
    shown.images,
  );
  assert.deepEqual(left, []);
  assert.deepEqual(page.errors, []);
});

test('export, a damaged backup refused, delete everything, import the export: the same items, byte for byte', async () => {
  const { clickButton, setInputFiles } = ui(page);
  const state = () => page.evaluate(() => document.querySelector('#backup-state').textContent);
  await clickButton('Storage');
  await until(page, () => document.querySelector('#storage').open, 'the storage panel never opened');
  const exported = async () =>
    until(
      page,
      () =>
        /^Export(ed| failed)/.test(document.querySelector('#backup-state').textContent) &&
        document.querySelector('#backup-state').textContent,
      'the export never ended',
    );

  // To disk through the save picker, streamed: the picker is the one thing
  // a test cannot click, so it hands out a file of the origin's own
  // private file system instead of one the user picked.
  await page.evaluate(() => {
    window.showSaveFilePicker = async ({ suggestedName }) =>
      (await navigator.storage.getDirectory()).getFileHandle(`saved-${suggestedName}`, { create: true });
  });
  await clickButton('Export library');
  assert.match(await exported(), /^Exported library-\d{4}-\d\d-\d\d\.db/);
  const saved = await page.evaluate(async () => {
    const dir = await navigator.storage.getDirectory();
    for await (const [name, handle] of dir.entries()) {
      if (!name.startsWith('saved-library-')) continue;
      const bytes = new Uint8Array(await (await handle.getFile()).arrayBuffer());
      let binary = '';
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return btoa(binary);
    }
  });
  const backup = Buffer.from(saved, 'base64');
  assert.equal(backup.subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
  const file = await inPage(page, async ({ open }) => {
    const db = await open('library.db');
    try {
      return (await db.query('SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()'))[0].bytes;
    } finally {
      await db.close();
    }
  });
  assert.equal(backup.length, file, 'the export is the whole database file');

  // As a download, where there is no save picker: a Blob of the chunks.
  if (ENGINE === 'chromium') {
    await page.evaluate(() => delete window.showSaveFilePicker);
    const [download] = await Promise.all([page.waitForEvent('download'), clickButton('Export library')]);
    assert.match(download.suggestedFilename(), /^library-\d{4}-\d\d-\d\d\.db$/);
    assert.ok(readFileSync(await download.path()).equals(backup), 'the download holds the same bytes');
  }

  // A damaged backup is refused, and the library is as it was.
  const before = await storedHashes(page);
  await setInputFiles('#import', { name: 'damaged.db', mimeType: BACKUP_TYPE, buffer: backup.subarray(0, backup.length - 65536) });
  await clickButton('Replace', { within: ['#confirm', ''] });
  await until(
    page,
    () => /^Import failed/.test(document.querySelector('#backup-state').textContent),
    'the damaged backup was never refused',
  );
  assert.match(await state(), /the library is as it was\. SQLITE_CORRUPT/);
  assert.deepEqual(await storedHashes(page), before);

  await clickButton('Delete everything');
  await clickButton('Delete everything', { within: ['#confirm', ''] });
  await until(
    page,
    () => document.querySelectorAll('#grid .card').length === 0 && !document.querySelector('#empty').hidden,
    'the library never emptied',
  );
  assert.deepEqual(await storedHashes(page), {});

  await setInputFiles('#import', { name: 'library-backup.db', mimeType: BACKUP_TYPE, buffer: backup });
  await clickButton('Replace', { within: ['#confirm', ''] });
  await until(page, () => /^Imported/.test(document.querySelector('#backup-state').textContent), 'the import never ended');
  await until(page, (n) => document.querySelectorAll('#grid .card').length === n, 'the imported items never showed', sources.size);
  assert.deepEqual(await storedHashes(page), before);
  assert.deepEqual(before, Object.fromEntries([...sources].filter(([name]) => name in before)));
  assert.equal(Object.keys(before).length, sources.size);
  assert.deepEqual(page.errors, []);
});
