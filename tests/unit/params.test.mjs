// Whether a buffer was transferred away (src/js/params.ts `isDetached`):
// a detached buffer passed as a parameter is RESQ_BAD_PARAM, never a
// TypeError from the view made over it. `ArrayBuffer.prototype.detached`
// is ES2024, and Node 20 (these tests' Node) and older browsers lack it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const { isDetached } = await load('src/js/params.ts');

/** A buffer transferred away: detached. */
function transferred(n) {
  const buffer = new ArrayBuffer(n);
  structuredClone(buffer, { transfer: [buffer] });
  return buffer;
}

test('a transferred buffer is detached, with or without the ES2024 property', () => {
  assert.equal(isDetached(transferred(8)), true);
  assert.equal(isDetached(transferred(0)), true);
  // As an engine before ES2024 sees it.
  const hidden = (b) => Object.defineProperty(b, 'detached', { value: undefined });
  assert.equal(isDetached(hidden(transferred(8))), true);
  assert.equal(isDetached(hidden(transferred(0))), true);
});

test('a buffer still held is not detached, empty or shared ones included', () => {
  assert.equal(isDetached(new ArrayBuffer(8)), false);
  assert.equal(isDetached(new ArrayBuffer(0)), false);
  assert.equal(isDetached(new SharedArrayBuffer(8)), false);
  const hidden = (b) => Object.defineProperty(b, 'detached', { value: undefined });
  assert.equal(isDetached(hidden(new ArrayBuffer(0))), false);
});
