// The page-side helpers of backup.test.mjs, sent as source text (see
// util.mjs) and made with `kit(api)` in each snippet.
export const KIT = `(api) => {
  const MB = 1 << 20;
  /** n deterministic bytes that do not compress, from a seed. */
  const fill = (n, seed) => {
    const b = new Uint8Array(n);
    let x = (seed + 1) * 2654435761 >>> 0 || 1;
    for (let i = 0; i < n; i++) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
      b[i] = x;
    }
    return b;
  };
  const sha = async (bytes) => Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (x) => x.toString(16).padStart(2, '0')).join('');
  const bytesOf = async (stream) => new Uint8Array(await new Response(stream).arrayBuffer());
  /**
   * Everything a database holds, as one string: its schema, user_version and
   * every row of every table in rowid (or key) order, each BLOB as its
   * length and SHA-256; and what PRAGMA integrity_check says.
   */
  const snapshot = async (db) => {
    const schema = await db.query("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name");
    const out = { schema, version: await db.query('PRAGMA user_version'), check: await db.query('PRAGMA integrity_check'), tables: {} };
    for (const { name, sql } of schema.filter((s) => s.type === 'table' && !s.name.startsWith('sqlite_'))) {
      const order = /WITHOUT ROWID/i.test(sql) ? '1' : 'rowid';
      const rows = await db.query('SELECT * FROM "' + name + '" ORDER BY ' + order);
      for (const r of rows) for (const [k, v] of Object.entries(r)) {
        if (v instanceof Uint8Array) r[k] = { blob: v.length, sha: await sha(v) };
        else if (typeof v === 'bigint') r[k] = { bigint: String(v) };
      }
      out.tables[name] = rows;
    }
    return JSON.stringify(out);
  };
  /** The names of the files in this origin's staging directories (temp space). */
  const staged = async () => {
    const root = await navigator.storage.getDirectory();
    const top = await root.getDirectoryHandle('.resq-wasm-stage', { create: true });
    const names = [];
    for await (const [dir, handle] of top.entries()) {
      if (handle.kind !== 'directory') continue;
      for await (const file of handle.keys()) names.push(dir + '/' + file);
    }
    return names;
  };
  /** The same bytes except the header fields every commit rewrites (change counter, schema cookie, version). */
  const samePages = (a, b) => {
    if (a.length !== b.length) return 'lengths ' + a.length + ' and ' + b.length;
    const skip = (i) => (i >= 24 && i < 28) || (i >= 40 && i < 44) || (i >= 92 && i < 100);
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !skip(i)) return 'first difference at byte ' + i;
    return 'same';
  };
  /** A database with a little of everything, streamed Blob included. */
  const build = async (db, seed) => {
    await db.execute(\`
      CREATE TABLE items(id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB, n);
      CREATE INDEX items_t ON items(t);
      CREATE TABLE tags(item INTEGER, tag TEXT, PRIMARY KEY (item, tag)) WITHOUT ROWID;
      CREATE VIEW tagged AS SELECT items.id, tags.tag FROM items JOIN tags ON tags.item = items.id;
      CREATE TABLE log(at INTEGER PRIMARY KEY, what TEXT);
      CREATE TRIGGER items_log AFTER INSERT ON items BEGIN INSERT INTO log(what) VALUES ('item ' || NEW.id); END;
      PRAGMA user_version = \${7 + seed};
    \`);
    const values = [
      [1, 0.5, 'plain', new Uint8Array(0), null],
      [9007199254740993n, -1e300, 'ünïcödé ✓ 🎞', fill(1, seed), 1],
      [-42, 1.5e-300, '', fill(100 * 1024, seed + 1), 'x'],
      [null, null, null, null, null],
      [3, 2.25, 'a big one', new File([fill(5 * MB + 17, seed + 2)], 'clip.bin'), 2.5],
    ];
    for (const v of values) await db.execute('INSERT INTO items(i, r, t, b, n) VALUES (?, ?, ?, ?, ?)', v);
    await db.executeBatch('INSERT INTO tags(item, tag) VALUES (?, ?)', [[1, 'a'], [2, 'b'], [2, 'c'], [5, 'z' + seed]]);
    await db.execute('UPDATE items SET r = 9e999 WHERE id = 4');
  };
  return { MB, fill, sha, bytesOf, snapshot, staged, samePages, build, ...api };
}`;
