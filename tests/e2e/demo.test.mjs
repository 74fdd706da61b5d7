// The demo app (www/) as a person uses it: choose a file, see it listed,
// show it, reload the page, it is still there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve.mjs';
import { CHROMIUM_ARGS } from './harness.mjs';

// A 1×1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPj/HwADAgH/ozTmVQAAAABJRU5ErkJggg==',
  'base64',
);

let server, context, profile;
before(async () => {
  server = await serve(resolve(import.meta.dirname, '../..'));
  profile = mkdtempSync(join(tmpdir(), 'resq-demo-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
  });
});
after(async () => {
  await context?.close();
  server?.close();
  rmSync(profile, { recursive: true, force: true });
});

test('the demo stores a chosen file in OPFS, shows it, and keeps it across a reload', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${server.url}www/`);
  await page.getByText('No files yet.').waitFor();
  await page.setInputFiles('#picker', { name: 'dot.png', mimeType: 'image/png', buffer: PNG });
  await page.locator('#files tbody tr').first().waitFor();
  assert.equal(await page.locator('#files tbody tr td').first().textContent(), 'dot.png');

  await page.getByRole('button', { name: 'show' }).click();
  const img = page.locator('#viewer-media img');
  await img.waitFor();
  assert.equal(await img.evaluate((el) => el.decode().then(() => el.naturalWidth)), 1);

  await page.reload();
  await page.getByText('1 file(s) stored in OPFS.').waitFor();
  const stored = await page.evaluate(async () => {
    const [row] = await window.resqDemo.db.query('SELECT size, data FROM media');
    return { size: row.size, bytes: Array.from(row.data) };
  });
  assert.deepEqual(stored, { size: PNG.length, bytes: Array.from(PNG) });
  assert.deepEqual(errors, []);
  await page.close(); // the database is held by one tab at a time
});

test('the demo records a clip into a staged blob and plays it back from the database, seeking to the middle', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${server.url}www/`);
  await page.getByText(/stored in OPFS|No files yet/).waitFor(); // the app is ready
  await page.getByRole('button', { name: 'Record a 3 s test clip' }).click();
  const row = page.locator('#files tbody tr', { hasText: 'clip-' });
  await row.waitFor({ timeout: 20000 }).catch(async (e) => {
    throw new Error(`${e.message}; status: ${await page.locator('#status').textContent()}`);
  });
  await row.getByRole('button', { name: 'show' }).click();
  const video = page.locator('#viewer-media video');
  await video.waitFor();
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
