import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

test('a module of src/js loads from its TypeScript', async () => {
  const { ResqError } = await load('src/js/errors.ts');
  const e = new ResqError('RESQ_BAD_PARAM', 'x');
  assert.equal(e.code, 'RESQ_BAD_PARAM');
  assert.ok(e instanceof Error);
});
