// The demo app (www/) as a person uses it: choose a file, see it listed,
// show it, reload the page, it is still there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { launch, ui } from './harness.mjs';

// A 1×1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPj/HwADAgH/ozTmVQAAAABJRU5ErkJggg==',
  'base64',
);

let server, browser, profile;
before(async () => {
  server = await serve(resolve(import.meta.dirname, '../..'));
  profile = mkdtempSync(join(tmpdir(), 'resq-demo-'));
  browser = await launch(profile);
});
after(async () => {
  await browser?.close();
  server?.close();
  rmSync(profile, { recursive: true, force: true });
});

test('the demo stores a chosen file in OPFS, shows it, and keeps it across a reload', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${server.url}www/`);
  const { waitForText, setInputFiles, element, clickButton } = ui(page);
  await waitForText('No files yet.');
  await setInputFiles('#picker', { name: 'dot.png', mimeType: 'image/png', buffer: PNG });
  await element('#files tbody tr');
  assert.equal(await (await element('#files tbody tr td')).textContent(), 'dot.png');

  await clickButton('show');
  const img = await element('#viewer-media img');
  assert.equal(await img.evaluate((el) => el.decode().then(() => el.naturalWidth)), 1);

  await page.reload();
  await waitForText('1 file(s) stored in OPFS.');
  const stored = await page.evaluate(async () => {
    const [row] = await window.resqDemo.db.query('SELECT size, data FROM media');
    return { size: row.size, bytes: Array.from(row.data) };
  });
  assert.deepEqual(stored, { size: PNG.length, bytes: Array.from(PNG) });
  assert.deepEqual(errors, []);
  await page.close(); // the database is held by one tab at a time
});

test('the demo records a clip into a staged blob and plays it back from the database, seeking to the middle', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${server.url}www/`);
  const { waitForText, element, clickButton } = ui(page);
  await waitForText(/stored in OPFS|No files yet/); // the app is ready
  await clickButton('Record a 3 s test clip');
  await element('#files tbody tr', { hasText: 'clip-', timeout: 20000 }).catch(async (e) => {
    throw new Error(`${e.message}; status: ${await page.evaluate(() => document.querySelector('#status').textContent)}`);
  });
  await clickButton('show', { within: ['#files tbody tr', 'clip-'] });
  const video = await element('#viewer-media video');
  const played = await video.evaluate(async (v) => {
    const when = (event) => new Promise((resolve) => v.addEventListener(event, resolve, { once: true }));
    if (v.readyState < 3) await when('canplay');
    const stored = await window.resqDemo.db.query("SELECT size, length(data) AS n FROM media WHERE name LIKE 'clip-%'");
    v.currentTime = 1.5;
    await when('seeked');
    return { canplay: v.readyState >= 3, seekedTo: v.currentTime, size: stored[0].size, n: stored[0].n };
  });
  assert.equal(played.canplay, true);
  assert.ok(Math.abs(played.seekedTo - 1.5) < 0.5, `seeked to ${played.seekedTo}`);
  assert.ok(played.size > 1000 && played.size === played.n, JSON.stringify(played));
  assert.deepEqual(errors, []);
});
