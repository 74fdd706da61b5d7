// resq-wasm/inspector as a developer meets it: mounted on a page over the
// app's database, or with none, listing the origin's. Everything the tests
// do goes through the inspector's own buttons (in its open shadow root),
// and what they check is what it renders.
//
// With RESQ_SCREENSHOTS=1 (Chromium), the screenshot the README shows is
// written to tests/e2e/screenshots/inspector.png.

import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from './engines.mjs';
import { ENGINE, start } from './harness.mjs';
import { dbName, withDb } from './util.mjs';

const SHOTS = process.env.RESQ_SCREENSHOTS && ENGINE === 'chromium' ? join(import.meta.dirname, 'screenshots') : null;

let h;
before(async () => (h = await start()));
after(async () => await h?.close());

/**
 * In-page helpers, sent as text: `mount(db)` → the `<resq-inspector>`,
 * `until(fn, what)` (polls `fn` until it gives a truthy value, or fails
 * after 20 s saying `what`), `$`/`$$` (queries in an inspector's shadow
 * root), `png(size, noise)` (a PNG drawn on a canvas: noise makes it big),
 * `wav(seconds)` (a 16-bit mono WAV tone), and `urls`, which counts the
 * page's object URLs made and revoked from the moment it is called.
 */
const helpers = () => ({
  async mount(db, container = document.body) {
    const { mountInspector } = await import('resq-wasm/inspector');
    const unmount = mountInspector(container, db);
    return { el: container.lastElementChild, unmount };
  },
  async until(fn, what, ms = 20_000) {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  },
  $: (el, sel) => el.shadowRoot.querySelector(sel),
  $$: (el, sel) => [...el.shadowRoot.querySelectorAll(sel)],
  async png(size, noise = false) {
    const c = document.createElement('canvas');
    c.width = c.height = size;
    const g = c.getContext('2d');
    g.fillStyle = '#3b6fe0';
    g.fillRect(0, 0, size, size);
    if (noise) {
      const img = g.getImageData(0, 0, size, size);
      for (let i = 0; i < img.data.length; i++) img.data[i] = (i * 2654435761) >>> 24;
      g.putImageData(img, 0, 0);
    }
    const blob = await new Promise((r) => c.toBlob(r, 'image/png'));
    return new Uint8Array(await blob.arrayBuffer());
  },
  wav(seconds, rate = 8000) {
    const n = Math.round(seconds * rate);
    const v = new DataView(new ArrayBuffer(44 + 2 * n));
    const ascii = (at, s) => {
      for (let i = 0; i < s.length; i++) v.setUint8(at + i, s.charCodeAt(i));
    };
    ascii(0, 'RIFF');
    v.setUint32(4, 36 + 2 * n, true);
    ascii(8, 'WAVEfmt ');
    v.setUint32(16, 16, true);
    v.setUint16(20, 1, true);
    v.setUint16(22, 1, true);
    v.setUint32(24, rate, true);
    v.setUint32(28, rate * 2, true);
    v.setUint16(32, 2, true);
    v.setUint16(34, 16, true);
    ascii(36, 'data');
    v.setUint32(40, 2 * n, true);
    for (let i = 0; i < n; i++) v.setInt16(44 + 2 * i, Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), true);
    return new Uint8Array(v.buffer);
  },
  urls() {
    const made = new Set();
    const revoked = new Set();
    const create = URL.createObjectURL;
    const revoke = URL.revokeObjectURL;
    URL.createObjectURL = (b) => {
      const u = create(b);
      made.add(u);
      return u;
    };
    URL.revokeObjectURL = (u) => {
      revoked.add(u);
      revoke(u);
    };
    return {
      made,
      revoked,
      restore() {
        URL.createObjectURL = create;
        URL.revokeObjectURL = revoke;
      },
    };
  },
});

/** Runs `body(db, helpers, arg)` on a new database (closed after), with the inspector's helpers. */
const withInspector = (t, body, arg = null) =>
  withDb(
    h.page,
    dbName(t),
    async (db, api, { src, body, arg }) => {
      const helpers = (0, eval)(`(${src})`)();
      return await (0, eval)(`(${body})`)(db, { ...api, ...helpers }, arg);
    },
    { arg: { src: helpers.toString(), body: body.toString(), arg } },
  );

test('a table of photos shows a thumbnail of each, sniffed from its bytes; other BLOBs show their size and first bytes', async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $$, png }) => {
    await db.execute('CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
    const small = await png(4); // well under 4 KiB: comes with the page's rows
    const big = await png(256, true); // far over: read as a range, shown through blobFile
    const other = new Uint8Array(100_000).map((_, i) => (i * 7 + 3) & 255);
    await db.executeBatch('INSERT INTO photos(name, data) VALUES (?, ?)', [
      ['small.png', small],
      ['big.png', big],
      ['other.bin', other],
    ]);
    const { el, unmount } = await mount(db);
    try {
      const imgs = await until(() => $$(el, 'td img').length === 2 && $$(el, 'td img'), 'two thumbnails');
      await Promise.all(imgs.map((i) => i.decode()));
      const boxes = $$(el, 'td .blob');
      return {
        sizes: [small.length, big.length],
        images: imgs.map((i) => ({ w: i.naturalWidth, h: i.naturalHeight, blob: i.src.startsWith('blob:') })),
        types: boxes.map((b) => b.dataset.type ?? null),
        kinds: boxes.map((b) => b.dataset.kind ?? null),
        shown: boxes.map((b) => b.querySelector('.size').textContent),
        hex: (await until(() => $$(el, 'td code.hex')[0], 'the hex of other.bin')).textContent,
        items: $$(el, '.side button.item').map((b) => b.textContent),
      };
    } finally {
      unmount();
    }
  });
  assert.ok(r.sizes[0] < 4096 && r.sizes[1] > 4096, JSON.stringify(r.sizes));
  assert.deepEqual(r.images, [
    { w: 4, h: 4, blob: true },
    { w: 256, h: 256, blob: true },
  ]);
  assert.deepEqual(r.types, ['image/png', 'image/png', '']);
  assert.deepEqual(r.kinds, ['image', 'image', 'other']);
  assert.equal(r.shown[2], '100 KB');
  assert.equal(r.hex, '03 0a 11 18 1f 26 2d 34 3b 42 49 50 57 5e 65 6c …');
  assert.match(r.items[0], /^photos3 rows · \d/);
});

// Chromium plays it too (muted, which its autoplay policy allows without a
// gesture): headless Firefox has no audio device here, and WebKitGTK's
// media backend plays nothing.
const PLAYS = ENGINE === 'chromium';

test('a clip plays: an audio BLOB gets a player when asked, which loads it from the database', async (t) => {
  const r = await withInspector(
    t,
    async (db, { mount, until, $, $$, wav }, plays) => {
      await db.execute('CREATE TABLE notes(id INTEGER PRIMARY KEY, clip BLOB)');
      await db.execute('INSERT INTO notes(clip) VALUES (?)', [wav(1.5)]);
      const { el, unmount } = await mount(db);
      try {
        const button = await until(() => $(el, 'td .blob button.play'), 'the play button');
        const label = button.textContent;
        button.click();
        const audio = await until(() => $(el, 'td audio'), 'the player');
        await until(() => audio.readyState >= 1 || audio.error, 'the clip to load');
        let played = null;
        if (plays) {
          audio.muted = true;
          await audio.play();
          played = await until(() => audio.currentTime >= 0.25 && audio.currentTime, 'the clip to play a quarter second');
        }
        return {
          label,
          type: $$(el, 'td .blob')[0].dataset.type,
          error: audio.error?.message ?? audio.error?.code ?? null,
          duration: audio.duration,
          controls: audio.controls,
          played,
        };
      } finally {
        unmount();
      }
    },
    PLAYS,
  );
  if (PLAYS) assert.ok(r.played >= 0.25 && r.played <= 1.5, `played to ${r.played} s`);
  assert.equal(r.label, '▶ Play audio');
  assert.equal(r.type, 'audio/wav');
  assert.equal(r.error, null);
  assert.ok(Math.abs(r.duration - 1.5) < 0.01, `duration ${r.duration}`);
  assert.equal(r.controls, true);
});

test('a failing query shows its ResqError code and message, and the next one runs', async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $ }) => {
    await db.execute('CREATE TABLE t(x INTEGER NOT NULL)');
    const { el, unmount } = await mount(db);
    try {
      await until(() => $(el, '.tabs .sql'), 'the SQL tab');
      $(el, '.tabs .sql').click();
      const run = async (sql) => {
        $(el, 'textarea.sql').value = sql;
        $(el, 'button.run').click();
        return await until(() => !$(el, '.out .busy') && $(el, '.out').firstElementChild, `the result of ${sql}`);
      };
      const missing = await run('SELECT * FROM nope');
      const failed = { code: missing.dataset.code, text: missing.textContent };
      const constraint = await run('INSERT INTO t VALUES (NULL)');
      const violated = { code: constraint.dataset.code, text: constraint.textContent };
      const ok = await run('SELECT 41 + 1 AS answer');
      return { failed, violated, ok: ok.textContent, rows: (await db.query('SELECT count(*) AS n FROM t'))[0].n };
    } finally {
      unmount();
    }
  });
  assert.equal(r.failed.code, 'SQLITE_ERROR');
  assert.match(r.failed.text, /^SQLITE_ERROR no such table: nope/);
  assert.equal(r.violated.code, 'SQLITE_CONSTRAINT_NOTNULL');
  assert.match(r.violated.text, /NOT NULL constraint failed: t\.x/);
  assert.match(r.ok, /answer42/);
  assert.equal(r.rows, 0);
});

test("the console runs a write the user types, shows its changes, and the side's row counts follow; Query plan shows the plan", async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $, $$ }) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)');
    await db.execute('CREATE INDEX t_name ON t(name)');
    const { el, unmount } = await mount(db);
    try {
      await until(() => $(el, '.tabs .sql'), 'the SQL tab');
      $(el, '.tabs .sql').click();
      $(el, 'textarea.sql').value = "INSERT INTO t(name) VALUES ('a'), ('b')";
      $(el, 'button.run').click();
      const done = (await until(() => $(el, '.out .done'), 'the write')).textContent;
      const counted = await until(() => $$(el, '.side button.item').find((b) => /2 rows/.test(b.textContent)), 'the new count');
      $(el, 'textarea.sql').value = "SELECT id FROM t WHERE name = 'b'";
      $(el, 'button.plan').click();
      const plan = (await until(() => $(el, '.out pre.plan'), 'the plan')).textContent;
      return { done, counted: counted.textContent, plan, indexes: $$(el, '.side .indexs li').map((l) => l.textContent) };
    } finally {
      unmount();
    }
  });
  assert.equal(r.done, '2 rows changed; last insert rowid 2');
  assert.match(r.counted, /^t2 rows/);
  assert.match(r.plan, /SEARCH t USING COVERING INDEX t_name \(name=\?\)/);
  assert.deepEqual(r.indexes, ['t_nameon t']);
});

test('the console asks SQLite what a statement does: a WITH … INSERT shows its changes, an INSERT … RETURNING its rows, and the counts follow both', async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $, $$ }) => {
    await db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)');
    const { el, unmount } = await mount(db);
    try {
      await until(() => $(el, '.tabs .sql'), 'the SQL tab');
      $(el, '.tabs .sql').click();
      const run = async (sql) => {
        $(el, 'textarea.sql').value = sql;
        $(el, 'button.run').click();
        return await until(() => !$(el, '.out .busy') && $(el, '.out').firstElementChild, `the result of ${sql}`);
      };
      const count = (n) => until(() => $$(el, '.side button.item').find((b) => b.textContent.startsWith(`t${n} rows`)), `${n} rows`);
      const seen = [];
      seen.push((await run("WITH n(i) AS (VALUES (1), (2), (3)) INSERT INTO t(name) SELECT 'n' || i FROM n")).textContent);
      await count(3);
      const returned = await run("INSERT INTO t(name) VALUES ('d') RETURNING id, name");
      const cells = (node) => [...node.querySelectorAll('tbody td')].map((td) => td.textContent);
      seen.push(cells(returned));
      await count(4);
      seen.push(cells(await run('-- the last one\nSELECT name FROM t ORDER BY id DESC LIMIT 1')));
      // A PRAGMA that sets runs with execute (it answers with no rows).
      seen.push((await run('PRAGMA user_version = 7')).className, (await db.query('PRAGMA user_version'))[0].user_version);
      // A script (EXPLAIN takes one statement) runs with execute, whole.
      seen.push((await run('CREATE TABLE u(x); INSERT INTO u VALUES (1), (2)')).textContent);
      await until(() => $(el, 'button.item[data-name="u"]'), 'the new table in the list');
      return seen;
    } finally {
      unmount();
    }
  });
  assert.deepEqual(r, ['3 rows changed; last insert rowid 3', ['4', 'd'], ['d'], 'done', 7, '2 rows changed; last insert rowid 2']);
});

test('paging a 10,000-row table keeps one page of rows in the page, the right ones', async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $, $$ }) => {
    await db.execute('CREATE TABLE big(id INTEGER PRIMARY KEY, label TEXT)');
    await db.execute(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) INSERT INTO big SELECT i, 'row ' || i FROM n",
    );
    const { el, unmount } = await mount(db);
    try {
      const firstOf = (want) =>
        until(() => $$(el, 'tbody tr')[0]?.firstElementChild.textContent === want && $$(el, 'tbody tr'), `the page starting at ${want}`);
      const seen = [];
      let rows = await firstOf('1');
      seen.push({ rows: rows.length, range: $(el, '.pager .range').textContent });
      for (let i = 0; i < 3; i++) $(el, '.pager .next').click(), (rows = await firstOf(String(51 + 50 * i)));
      seen.push({ rows: $$(el, 'tr').length, range: $(el, '.pager .range').textContent, last: rows.at(-1).textContent });
      $(el, '.pager .prev').click();
      rows = await firstOf('101');
      seen.push({ rows: rows.length, prev: $(el, '.pager .prev').disabled });
      el.pageSize = 7;
      rows = await firstOf('1');
      seen.push({ rows: rows.length });
      return seen;
    } finally {
      unmount();
    }
  });
  assert.deepEqual(r, [
    { rows: 50, range: 'rows 1–50 of 10,000' },
    // 50 rows and the header's.
    { rows: 51, range: 'rows 151–200 of 10,000', last: '200row 200' },
    { rows: 50, prev: false },
    { rows: 7 },
  ]);
});

test('a table is paged by rowid: rows the app deletes before the page shown skip none on Next, Previous or refresh; a view pages by position', async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $, $$ }) => {
    await db.execute('CREATE TABLE big(id INTEGER PRIMARY KEY, label TEXT)');
    await db.execute(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO big SELECT i, 'row ' || i FROM n",
    );
    await db.execute('CREATE VIEW odd AS SELECT id, label FROM big WHERE id % 2 = 1');
    const { el, unmount } = await mount(db);
    try {
      const first = () => $$(el, 'tbody tr')[0]?.firstElementChild.textContent;
      const firstOf = (want) => until(() => first() === want && $$(el, 'tbody tr'), `the page starting at ${want}`);
      const seen = [];
      await firstOf('1');
      $(el, '.pager .next').click();
      await firstOf('51');
      // The app deletes 20 rows before the page shown.
      await db.execute('DELETE FROM big WHERE id <= 20');
      $(el, '.pager .next').click();
      seen.push((await firstOf('101')).length);
      $(el, '.pager .prev').click();
      seen.push((await firstOf('51')).length);
      await el.refresh();
      seen.push(first(), $(el, '.pager .range').textContent);
      // A view has no rowid: its pages go by position.
      (await until(() => $(el, 'button.item[data-name="odd"]'), 'the view in the list')).click();
      await firstOf('21');
      $(el, '.pager .next').click();
      seen.push((await firstOf('121')).length);
      return seen;
    } finally {
      unmount();
    }
  });
  // Refreshed, the page starts where it did, and says how many rows come before it now.
  assert.deepEqual(r, [50, 50, '51', 'rows 31–80 of 280', 50]);
});

test('unmounting revokes every object URL the inspector made, the players included', async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $, $$, png, wav, urls }) => {
    await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
    await db.executeBatch('INSERT INTO media(data) VALUES (?)', [[await png(4)], [await png(200, true)], [wav(0.5)]]);
    const seen = urls();
    try {
      const { el, unmount } = await mount(db);
      await until(() => $$(el, 'td img').length === 2, 'the thumbnails');
      (await until(() => $(el, 'button.play'), 'the play button')).click();
      await until(() => $(el, 'td audio'), 'the player');
      const before = { made: seen.made.size, revoked: seen.revoked.size };
      unmount();
      return { before, made: seen.made.size, left: [...seen.made].filter((u) => !seen.revoked.has(u)).length, attached: el.isConnected };
    } finally {
      seen.restore();
    }
  });
  assert.deepEqual(r, { before: { made: 3, revoked: 0 }, made: 3, left: 0, attached: false });
});

test('browsing changes nothing: the database file is the same bytes before and after', async (t) => {
  const r = await withInspector(t, async (db, { mount, until, $, $$, png, sha }) => {
    await db.execute('CREATE TABLE p(id INTEGER PRIMARY KEY, data BLOB)');
    await db.executeBatch('INSERT INTO p(data) VALUES (?)', [[await png(64, true)], [new Uint8Array(300_000).fill(9)]]);
    const file = async () => sha(await new Response(db.export()).blob());
    const before = await file();
    const { el, unmount } = await mount(db);
    try {
      await until(() => $$(el, 'td img').length === 1, 'the thumbnail');
      await until(() => $(el, 'td code.hex'), 'the hex');
      $(el, '.tabs .sql').click();
      $(el, 'button.plan').click();
      await until(() => $(el, '.out pre.plan'), 'the plan');
      $(el, '.tabs .rows').click();
      await until(() => $$(el, 'td img').length === 1, 'the thumbnail again');
    } finally {
      unmount();
    }
    return { same: before === (await file()), changes: (await db.query('SELECT total_changes() AS n'))[0].n };
  });
  assert.deepEqual(r, { same: true, changes: 2 });
});

test("without a database it lists the origin's stored databases, opens the one picked, and closes it when unmounted", async (t) => {
  const name = `${dbName(t)} é`;
  const r = await withInspector(
    t,
    async (_db, { open, mount, until, $, $$ }, name) => {
      const db = await open(name);
      const storage = db.storage;
      await db.execute('CREATE TABLE kept(x)');
      await db.execute('INSERT INTO kept VALUES (1), (2)');
      await db.close();
      const { el, unmount } = await mount(undefined);
      const pick = await until(() => $$(el, 'button.pick').find((b) => b.dataset.name === name), `${name} in the list`);
      const listed = $$(el, 'button.pick').filter((b) => b.dataset.name === name).length;
      const label = pick.textContent;
      pick.click();
      const item = await until(() => $$(el, '.side button.item')[0] ?? $(el, '.error:not([hidden])'), 'its tables');
      const text = item.textContent;
      $(el, 'button.back').click();
      await until(() => $(el, 'button.pick'), 'the list again');
      unmount();
      // The inspector closed what it opened: no tab leads the name any more
      // (the leader's lock, election.ts), and it opens again here.
      const leading = async () => (await navigator.locks.query()).held.some((l) => l.name === `resq-wasm-leader:${name}`);
      await until(async () => !(await leading()), 'the inspector to close the database');
      const again = await open(name);
      const n = (await again.query('SELECT count(*) AS n FROM kept'))[0].n;
      await again.close();
      return { storage, listed, label, text, n };
    },
    name,
  );
  assert.equal(r.label, `${name} (${r.storage === 'opfs' ? 'OPFS' : 'IndexedDB'})`);
  assert.equal(r.listed, 1);
  assert.match(r.text, /^kept2 rows/);
  assert.equal(r.n, 2);
});

test('an encrypted database picked from the list asks for its key, refuses a wrong one, and opens with the right one', {
  opfs: { key: 'k' },
}, async (t) => {
  const r = await withInspector(
    t,
    async (_db, { open, mount, until, $, $$ }, name) => {
      const db = await open(name, { key: 'right key' });
      await db.execute('CREATE TABLE secret(x)');
      await db.close();
      const { el, unmount } = await mount(undefined);
      try {
        (await until(() => $$(el, 'button.pick').find((b) => b.dataset.name === name), `${name} in the list`)).click();
        const submit = async (key) => {
          const input = await until(() => $(el, 'form.key input'), 'the key field');
          input.value = key;
          $(el, 'form.key button').click();
        };
        await submit('wrong key');
        const refused = (await until(() => $(el, 'form.key .error'), 'the refusal')).textContent;
        await submit('right key');
        const item = (await until(() => $$(el, '.side button.item')[0], 'its tables')).dataset.name;
        return { refused, item };
      } finally {
        unmount();
      }
    },
    dbName(t),
  );
  assert.deepEqual(r, { refused: 'RESQ_BAD_KEY: wrong key', item: 'secret' });
});

test("large BLOBs are shown and played without reaching the worker's wasm memory whole", async (t) => {
  const hp = await start({ probe: {} });
  const name = dbName(t);
  try {
    const r = await withDb(
      hp.page,
      name,
      async (db, { probe }, { src, name }) => {
        const { mount, until, $, $$ } = (0, eval)(`(${src})`)();
        const MB = 1024 * 1024;
        // 40 MiB each, with a PNG's and a WebM's first bytes: sniffed as such, never decoded.
        const big = (head) => {
          const b = new Uint8Array(40 * MB);
          for (let i = 0; i < b.length; i += 4096) b[i] = i >>> 12;
          b.set(head);
          return new File([b], 'big');
        };
        await db.execute('CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)');
        await db.execute('INSERT INTO media(data) VALUES (?), (?)', [
          big([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
          big([0x1a, 0x45, 0xdf, 0xa3]),
        ]);
        const before = await probe(name, 'memory');
        const { el, unmount } = await mount(db);
        try {
          (await until(() => $(el, 'button.show'), 'the Show image button')).click();
          (await until(() => $(el, 'button.play'), 'the play button')).click();
          await until(() => $(el, 'td img') && $(el, 'td video'), 'the image and the player');
          const types = $$(el, 'td .blob').map((b) => b.dataset.type);
          const inspected = await probe(name, 'memory');
          // The control: a SELECT of one value does hold it whole in wasm memory.
          await db.query('SELECT data FROM media WHERE id = 1');
          return { types, before, inspected, selected: await probe(name, 'memory') };
        } finally {
          unmount();
        }
      },
      { arg: { src: helpers.toString(), name } },
    );
    t.diagnostic(`wasm memory: ${r.before} bytes before, ${r.inspected} after the inspector, ${r.selected} after a SELECT of one value`);
    assert.deepEqual(r.types, ['image/png', 'video/webm']);
    assert.ok(r.inspected - r.before < 16 * 1024 * 1024, `the inspector grew wasm memory by ${r.inspected - r.before} bytes`);
    assert.ok(r.selected - r.before >= 40 * 1024 * 1024, `the control: a SELECT grew it by ${r.selected - r.before} bytes`);
  } finally {
    await hp.close();
  }
});

test('the inspector module imports where there is no DOM, and defines nothing there', async () => {
  const { execFileSync } = await import('node:child_process');
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const m = await import('resq-wasm/inspector'); console.log(typeof m.mountInspector, typeof m.ResqInspector)",
    ],
    { cwd: h.app, encoding: 'utf8' },
  );
  assert.equal(out.trim(), 'function function');
});

test('screenshot', { skip: !SHOTS && 'RESQ_SCREENSHOTS=1 in Chromium writes it' }, async () => {
  // A small media library, as the demo keeps one, with its photos and a
  // voice note made by media-files.js.
  await h.page.setViewportSize({ width: 1280, height: 800 });
  const media = readFileSync(join(import.meta.dirname, 'media-files.js'), 'utf8');
  await h.page.evaluate(
    async ([src, media]) => {
      const { open } = await import('resq-wasm');
      const { pngFile, wavFile } = await import(URL.createObjectURL(new Blob([media], { type: 'text/javascript' })));
      const { mount } = (0, eval)(`(${src})`)();
      const db = await open('library.db');
      await db.execute('CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, kind TEXT, added TEXT, data BLOB)');
      await db.execute('CREATE TABLE tags(item INTEGER REFERENCES items, tag TEXT)');
      await db.execute('CREATE INDEX items_kind ON items(kind)');
      const names = ['harbour at dawn', 'ridge walk', 'voice note', 'lake, late', 'first snow', 'market day', 'voice note 2', 'pass road'];
      for (const [i, name] of names.entries()) {
        const audio = name.startsWith('voice');
        const file = audio
          ? wavFile(`${name}.wav`, { seconds: 3 + i })
          : await pngFile(`${name}.png`, { width: 480, height: 320, hue: (i * 47) % 360 });
        await db.execute("INSERT INTO items(name, kind, added, data) VALUES (?, ?, datetime('2026-12-01 08:00', ?), ?)", [
          file.name,
          audio ? 'audio' : 'photo',
          `+${i * 7} hours`,
          file,
        ]);
      }
      await db.execute('INSERT INTO tags SELECT id, kind FROM items');
      document.body.style.margin = '16px';
      document.body.replaceChildren();
      await mount(db);
    },
    [helpers.toString(), media],
  );
  await h.page.waitForFunction(() => {
    const imgs = [...document.querySelector('resq-inspector').shadowRoot.querySelectorAll('td img')];
    return imgs.length === 6 && imgs.every((i) => i.complete && i.naturalWidth > 0);
  });
  await h.page.screenshot({ path: join(SHOTS, 'inspector.png') });
});
