// The temp file a staged value spills into where there is no OPFS sync
// access handle and no synchronous Blob read (Node's worker_threads):
// `memoryFile` in src/js/worker/spill.ts, written at its end, read
// anywhere. The e2e media tests stage values past the memory cap through
// it when they run in Node.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const { memoryFile, spareFile } = await load('src/js/worker/spill.ts');

test('a temp file in memory reads back exactly what was written, across chunk boundaries', () => {
  const file = memoryFile();
  const whole = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 255);
  for (const [from, to] of [
    [0, 10],
    [10, 300],
    [300, 301],
    [301, 1000],
  ])
    assert.equal(file.write(whole.subarray(from, to), { at: from }), to - from);
  for (const [at, n] of [
    [0, 1000],
    [5, 10],
    [9, 2],
    [299, 3],
    [600, 400],
    [990, 50],
  ]) {
    const view = new Uint8Array(n);
    const got = file.read(view, { at });
    const want = whole.subarray(at, at + n);
    assert.equal(got, want.length, `read at ${at}`);
    assert.deepEqual(view.subarray(0, got), want, `bytes at ${at}`);
  }
  assert.equal(file.read(new Uint8Array(4), { at: 1000 }), 0, 'nothing past the end');
  assert.throws(() => file.write(new Uint8Array(1), { at: 5 }), /written at its end/);
});

test('without a synchronous Blob read, the spare temp file is kept in memory', () => {
  assert.equal(typeof globalThis.FileReaderSync, 'undefined');
  const file = spareFile();
  file.write(new Uint8Array([1, 2, 3]), { at: 0 });
  const view = new Uint8Array(3);
  assert.equal(file.read(view, { at: 0 }), 3);
  assert.deepEqual([...view], [1, 2, 3]);
});
