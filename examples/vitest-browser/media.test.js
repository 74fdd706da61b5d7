// Tests of an app's own code against a real resq-wasm database: each test
// gets a fresh OPFS database, and the origin's storage is cleared after it,
// so the next test starts clean.
import { afterEach, beforeEach, expect, test } from 'vitest';
import { open } from 'resq-wasm';

let db;

beforeEach(async () => {
  db = await open('media.db');
  await db.execute('CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
});

afterEach(async () => {
  await db.close();
  const root = await navigator.storage.getDirectory();
  for await (const name of root.keys()) await root.removeEntry(name, { recursive: true });
});

test('a photo goes in and comes back byte for byte', async () => {
  const bytes = crypto.getRandomValues(new Uint8Array(50_000));
  const { lastInsertRowid } = await db.execute('INSERT INTO photos(name, data) VALUES (?, ?)', ['beach.jpg', bytes]);
  const [photo] = await db.query('SELECT name, data FROM photos WHERE id = ?', [lastInsertRowid]);
  expect(photo.name).toBe('beach.jpg');
  expect(photo.data).toEqual(bytes);
});

test('each test starts with an empty database', async () => {
  const [{ n }] = await db.query('SELECT count(*) AS n FROM photos');
  expect(n).toBe(0);
});
