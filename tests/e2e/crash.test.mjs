// No data loss across a crash: rows whose INSERT had resolved are there
// after the whole browser is killed with SIGKILL mid-work and started again
// on the same profile; a transaction that had not committed is not.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve.mjs';
import { CHROMIUM_ARGS, installPackedApp } from './harness.mjs';
import { inPage } from './util.mjs';

const { app } = installPackedApp();
const server = await serve(app);
const profile = mkdtempSync(join(tmpdir(), 'resq-crash-'));
after(() => {
  server.close();
  rmSync(profile, { recursive: true, force: true });
  rmSync(app, { recursive: true, force: true });
});

async function launch() {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
  });
  const page = await context.newPage();
  await page.goto(server.url);
  return { context, page };
}

/** SIGKILL every Chromium process of this profile: no shutdown, no flush. */
function killBrowser() {
  execFileSync('pkill', ['-KILL', '-f', '--', `user-data-dir=${profile}`]);
}

test('committed rows survive a SIGKILL of the browser; an open transaction does not', async () => {
  const first = await launch();
  const written = await inPage(first.page, async ({ open }) => {
    const db = await open('crash.db');
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)');
    const blob = new Uint8Array(300000).map((_, i) => i & 255);
    for (let i = 0; i < 20; i++) await db.execute('INSERT INTO t(data) VALUES (?)', [blob]);
    // Leave a transaction open with more rows in it, and never commit.
    let release;
    const hold = new Promise((r) => (release = r));
    db.transaction(async (tx) => {
      await tx.execute('INSERT INTO t(data) VALUES (?)', [blob]);
      await tx.execute('INSERT INTO t(data) VALUES (?)', [blob]);
      await hold;
    });
    await new Promise((r) => setTimeout(r, 200));
    window.__release = release;
    return 20;
  });
  killBrowser();
  await first.context.close().catch(() => {});

  const second = await launch();
  const after = await inPage(second.page, async ({ open }) => {
    const db = await open('crash.db');
    const [row] = await db.query("SELECT count(*) AS n, sum(length(data)) AS bytes, (SELECT integrity_check FROM pragma_integrity_check) AS ok FROM t");
    const [{ first }] = await db.query('SELECT data AS first FROM t ORDER BY id LIMIT 1');
    await db.close();
    return { ...row, sample: Array.from(first.subarray(0, 4)).concat(first[299999]) };
  });
  await second.context.close();
  assert.deepEqual(after, { n: written, bytes: written * 300000, ok: 'ok', sample: [0, 1, 2, 3, 299999 & 255] });
});
