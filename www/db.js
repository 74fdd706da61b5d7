// The library's database: its schema and every query the app runs. Media
// live in `items.data`; a small picture of each in `thumbs`; `search` is an
// FTS5 index of names and tags that triggers keep in step with `items`.

/** The database's name in this origin's private file system. */
export const NAME = 'library.db';

// Idempotent, so any tab can run it at any time: a second tab, or one that
// opens while another migrates, changes nothing. The BLOB column comes last
// (SQLite then leaves a large value's zeros unwritten until it is filled).
const SCHEMA = `
CREATE TABLE IF NOT EXISTS items(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('image', 'audio', 'video')),
  size INTEGER NOT NULL,
  tags TEXT NOT NULL DEFAULT '',
  added INTEGER NOT NULL,
  width INTEGER,
  height INTEGER,
  duration REAL,
  data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS thumbs(
  item INTEGER PRIMARY KEY,
  type TEXT NOT NULL,
  data BLOB NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(
  name, tags, content = 'items', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
CREATE TRIGGER IF NOT EXISTS items_added AFTER INSERT ON items BEGIN
  INSERT INTO search(rowid, name, tags) VALUES (new.id, new.name, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS items_deleted AFTER DELETE ON items BEGIN
  INSERT INTO search(search, rowid, name, tags) VALUES ('delete', old.id, old.name, old.tags);
  DELETE FROM thumbs WHERE item = old.id;
END;
CREATE TRIGGER IF NOT EXISTS items_renamed AFTER UPDATE OF name, tags ON items BEGIN
  INSERT INTO search(search, rowid, name, tags) VALUES ('delete', old.id, old.name, old.tags);
  INSERT INTO search(rowid, name, tags) VALUES (new.id, new.name, new.tags);
END;
`;

export async function migrate(db) {
  // 64 KB pages, for a new database (an existing one keeps its own): a
  // large value is a chain of pages, so a player's far seek, which walks
  // the chain from its start, visits a sixteenth as many pages as at 4 KB.
  // With a 532 MB video on this machine, the first read of 1 MB at 256 MB
  // after open took 125-138 ms instead of 272-302 ms, and storing the
  // video 4.9-5.0 s instead of 11.7-13.1 s
  // (benches/results/2026-11-30T18-39-22-demo.json).
  await db.execute('PRAGMA page_size = 65536');
  await db.execute(SCHEMA);
}

const ORDER = {
  newest: 'added DESC, id DESC',
  oldest: 'added, id',
  largest: 'size DESC, id DESC',
  smallest: 'size, id',
  type: 'kind, type, name COLLATE NOCASE, id',
  name: 'name COLLATE NOCASE, id',
};
export const SORTS = Object.keys(ORDER);

const COLUMNS = `id, name, type, kind, size, tags, added, width, height, duration,
  (SELECT type FROM thumbs WHERE item = items.id) AS thumb`;

/**
 * The grid's query for a search text, a kind ('' for all) and a sort:
 * { sql, params } for `db.watch`, which runs it again after every commit
 * that changes what it reads, in any tab.
 */
export function listQuery({ text = '', kind = '', sort = 'newest' } = {}) {
  const where = [];
  const params = [];
  const match = matchExpression(text);
  if (match) {
    where.push('id IN (SELECT rowid FROM search WHERE search MATCH ?)');
    params.push(match);
  }
  if (kind) {
    where.push('kind = ?');
    params.push(kind);
  }
  const sql = `SELECT ${COLUMNS} FROM items ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${ORDER[sort] ?? ORDER.newest}`;
  return { sql, params };
}

/**
 * What the user typed, as an FTS5 query: every word must match the start
 * of a word of the name or the tags ("sun beach" finds "beach-sunset.jpg").
 * Words are quoted, so FTS5's own syntax in the input is plain text.
 */
export function matchExpression(text) {
  const words = text.match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.map((w) => `"${w}"*`).join(' ');
}

/** Items and bytes per kind, for the filters and the header. */
export const COUNTS = 'SELECT kind, count(*) AS n, coalesce(sum(size), 0) AS bytes FROM items GROUP BY kind';

export async function item(db, id) {
  const [row] = await db.query(`SELECT ${COLUMNS} FROM items WHERE id = ?`, [id]);
  return row ?? null;
}

/**
 * Stores one item and its thumbnail together. `data` is a `File`, `Blob` or
 * `StagedBlob`: the package streams it into the row, so the page never
 * reads the file.
 */
export function addItem(db, { name, type, kind, size, data, tags = '', width = null, height = null, duration = null }, thumb) {
  return db.transaction(async (tx) => {
    const { lastInsertRowid: id } = await tx.execute(
      'INSERT INTO items(name, type, kind, size, tags, added, width, height, duration, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [name, type, kind, size, tags, Date.now(), width, height, duration, data],
    );
    if (thumb) await tx.execute('INSERT INTO thumbs(item, type, data) VALUES (?, ?, ?)', [id, thumb.type, thumb]);
    return id;
  });
}

/** Tags as the user sees them: lower case, each once, in the order given. */
export function normalizeTags(list) {
  return [...new Set(list.map((t) => t.trim().toLowerCase()).filter(Boolean))];
}
export const splitTags = (tags) =>
  tags
    ? tags
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean)
    : [];

export function setTags(db, id, tags) {
  return db.execute('UPDATE items SET tags = ? WHERE id = ?', [normalizeTags(tags).join(', '), id]);
}

export function deleteItem(db, id) {
  return db.execute('DELETE FROM items WHERE id = ?', [id]);
}

/** Deletes every item (the triggers empty the thumbnails and the index). */
export function deleteAll(db) {
  return db.execute('DELETE FROM items');
}

/** The database file's size (pages × page size), the part of it free for reuse, and what it holds. */
export async function facts(db) {
  const [row] = await db.query(`SELECT
    (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size()) AS file,
    (SELECT freelist_count FROM pragma_freelist_count()) * (SELECT page_size FROM pragma_page_size()) AS free,
    (SELECT count(*) FROM items) AS items,
    (SELECT coalesce(sum(size), 0) FROM items) AS media`);
  return row;
}
