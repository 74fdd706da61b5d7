// An app's own module: the photo library's data, on a resq-wasm Database.
// The app opens its database in OPFS; its tests hand it one in memory.

export async function createLibrary(db) {
  await db.execute('CREATE TABLE IF NOT EXISTS photos(id INTEGER PRIMARY KEY, name TEXT NOT NULL, taken INTEGER, data BLOB)');
}

/** Stores a photo (a File, a Blob or bytes); resolves to its id. */
export async function addPhoto(db, name, data, taken = Date.now()) {
  const { lastInsertRowid } = await db.execute('INSERT INTO photos(name, taken, data) VALUES (?, ?, ?)', [name, taken, data]);
  return lastInsertRowid;
}

/** The newest photos first, without their bytes. */
export function recentPhotos(db, limit = 20) {
  return db.query('SELECT id, name, taken, length(data) AS size FROM photos ORDER BY taken DESC LIMIT ?', [limit]);
}

/** A photo's first bytes, to sniff its type without reading it whole. */
export function photoHeader(db, id, length = 12) {
  return db.readBlob('photos', 'data', id, { offset: 0, length });
}
