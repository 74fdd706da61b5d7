// The app's module tested in Vitest's default environment, Node: resq-wasm
// runs there with databases in memory (its Node entry), one per test.
import { afterEach, beforeEach, expect, test } from 'vitest';
import { open } from 'resq-wasm';
import { addPhoto, createLibrary, photoHeader, recentPhotos } from './photos.js';

let db;

beforeEach(async () => {
  db = await open(':memory:');
  await createLibrary(db);
});

afterEach(async () => {
  await db.close();
});

test('photos come back newest first, with their sizes', async () => {
  await addPhoto(db, 'beach.jpg', new Uint8Array(50_000), 1);
  await addPhoto(db, 'hills.jpg', new Uint8Array(70_000), 2);
  expect(await recentPhotos(db)).toEqual([
    { id: 2, name: 'hills.jpg', taken: 2, size: 70_000 },
    { id: 1, name: 'beach.jpg', taken: 1, size: 50_000 },
  ]);
});

test('a large File goes in whole, and its header reads back without the rest', async () => {
  const jpeg = new Uint8Array(5_000_000);
  jpeg.set([0xff, 0xd8, 0xff, 0xe0]);
  const id = await addPhoto(db, 'big.jpg', new File([jpeg], 'big.jpg'));
  expect([...(await photoHeader(db, id, 4))]).toEqual([0xff, 0xd8, 0xff, 0xe0]);
  const [{ size }] = await recentPhotos(db, 1);
  expect(size).toBe(5_000_000);
});

test('each test starts with an empty library', async () => {
  expect(await recentPhotos(db)).toEqual([]);
});
