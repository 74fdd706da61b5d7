// The key of a live query (src/js/querykey.ts): the same for queries that
// bind the same, different for any two that do not. The page's stores key
// the user's parameters with it; the worker keys them as they arrive there,
// prepared (params.ts) and structured-cloned.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { load } from './load.mjs';

let queryKey, keptParams, prepareParams, Transfer;
before(async () => ({ queryKey, keptParams, prepareParams, Transfer } = await load('tests/unit/querykey-entry.ts')));

const SQL = 'SELECT typeof(?1) AS t, quote(?1) AS q';
/** The key of `SQL` with the one positional parameter `v`. */
const key1 = (v) => queryKey(SQL, [v], false);
const bufferOf = (...bytes) => new Uint8Array(bytes).buffer;
const detached = () => {
  const b = new ArrayBuffer(4);
  structuredClone(b, { transfer: [b] });
  return b;
};

/** A value of every kind API.md's parameter table names, and of what it refuses. */
const everyKind = () => [
  ['null', null],
  ['true', true],
  ['false', false],
  ['0', 0],
  ['1', 1],
  ['-1', -1],
  ['-0', -0],
  ['1.5', 1.5],
  ['2 ** 53 (not safe: REAL)', 2 ** 53],
  ['1n', 1n],
  ['0n', 0n],
  ['2n ** 53n', 2n ** 53n],
  ['2n ** 64n (outside i64)', 2n ** 64n],
  ["''", ''],
  ["'1'", '1'],
  ["'a'", 'a'],
  ['a lone surrogate', '\ud800'],
  ['Uint8Array [1, 2, 3]', new Uint8Array([1, 2, 3])],
  ['Uint8Array []', new Uint8Array(0)],
  ['Int16Array [1] (bytes 1, 0)', new Int16Array([1])],
  ['Float64Array [1]', new Float64Array([1])],
  ['ArrayBuffer [9, 9, 9]', bufferOf(9, 9, 9)],
  ['DataView [4, 5]', new DataView(bufferOf(4, 5))],
  ['transfer([7, 7])', new Transfer(new Uint8Array([7, 7]))],
  ['a detached buffer', detached()],
  ['a Blob', new Blob(['abc'])],
  ['undefined', undefined],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['-Infinity', Number.NEGATIVE_INFINITY],
  ['an object', { a: 1 }],
  ['a function', () => 1],
  ['a symbol', Symbol('s')],
];

test('every kind of parameter has a key of its own', () => {
  const seen = new Map();
  for (const [name, v] of everyKind()) {
    const k = key1(v);
    assert.equal(typeof k, 'string', name);
    assert.ok(!seen.has(k), `${name} has the key of ${seen.get(k)}`);
    seen.set(k, name);
  }
});

test('the key is the same for the same query: SQL, parameters (by value) and form', () => {
  const same = [
    ['new arrays of the same values', [1, 'a', null, 2n, -0, 1.5], [1, 'a', null, 2n, -0, 1.5]],
    ['NaN and NaN', [Number.NaN], [Number.NaN]],
    ['a hole and undefined (both bind as undefined)', Object.assign([], { 1: 1 }), [undefined, 1]],
    ['an ArrayBuffer and another with the same bytes', [bufferOf(1, 2, 3)], [bufferOf(1, 2, 3)]],
    ['an ArrayBuffer and a Uint8Array of its bytes', [bufferOf(1, 2, 3)], [new Uint8Array([1, 2, 3])]],
    ['a Uint8Array and an Int8Array of the same bytes', [new Uint8Array([1, 255])], [new Int8Array([1, -1])]],
    ['an Int16Array and its bytes (little-endian)', [new Int16Array([258])], [new Uint8Array([2, 1])]],
    ['a DataView and its bytes', [new DataView(bufferOf(4, 5))], [new Uint8Array([4, 5])]],
    ['a view of a range and exactly those bytes', [new Uint8Array(bufferOf(0, 1, 2, 3), 1, 2)], [bufferOf(1, 2)]],
    ['transfer(bytes) and the bytes', [new Transfer(new Uint8Array([7, 7]))], [new Uint8Array([7, 7])]],
    ['two detached buffers', [detached()], [detached()]],
    ['named, in another order', { a: 1, b: bufferOf(2) }, { b: new Uint8Array([2]), a: 1 }],
    ['no parameters, undefined or null', undefined, null],
  ];
  for (const [what, a, b] of same) assert.equal(queryKey(SQL, a, false), queryKey(SQL, b, false), what);
  const blob = new Blob(['x']);
  assert.equal(key1(blob), key1(blob), 'the same Blob twice');
  assert.equal(queryKey(SQL, [1], true), queryKey(SQL, [1], true), 'the same form');
});

test('the key differs for queries that bind differently', () => {
  const differ = [
    ['ArrayBuffers with other bytes', [bufferOf(1, 2, 3)], [bufferOf(9, 9, 9)]],
    ['Uint8Arrays with other bytes', [new Uint8Array([1, 2])], [new Uint8Array([1, 3])]],
    ['an empty buffer and a detached one', [new ArrayBuffer(0)], [detached()]],
    ['a view of a range and its whole buffer', [new Uint8Array(bufferOf(0, 1, 2, 3), 1, 2)], [bufferOf(0, 1, 2, 3)]],
    ['transfer(bytes) with other bytes', [new Transfer(new Uint8Array([7]))], [new Transfer(new Uint8Array([8]))]],
    ['0 and -0', [0], [-0]],
    ['a number and a bigint', [1], [1n]],
    ['2 ** 53 and 2n ** 53n', [2 ** 53], [2n ** 53n]],
    ['NaN and Infinity', [Number.NaN], [Number.POSITIVE_INFINITY]],
    ['Infinity and -Infinity', [Number.POSITIVE_INFINITY], [Number.NEGATIVE_INFINITY]],
    ['NaN and null', [Number.NaN], [null]],
    ['null and undefined', [null], [undefined]],
    ['true and 1', [true], [1]],
    ['false and 0', [false], [0]],
    ['a string and a number', ['1'], [1]],
    ['a string and a bigint', ['1'], [1n]],
    ['a string and its bytes', ['abc'], [new TextEncoder().encode('abc')]],
    ['positional and named', [1], { 0: 1 }],
    ['no parameters and an empty set', undefined, []],
    ['an empty positional and an empty named set', [], {}],
    ['an order of values and another', [1, 2], [2, 1]],
    ['named values swapped', { a: 1, b: 2 }, { a: 2, b: 1 }],
    ['another name', { a: 1 }, { b: 1 }],
    ['a named undefined and no such name', { a: undefined }, {}],
    ['values split differently', ['ab', 'c'], ['a', 'bc']],
    ['a string that spells another key', ['s1:a'], ['s', 1]],
    ['two Blobs with the same bytes (keyed by identity)', [new Blob(['x'])], [new Blob(['x'])]],
    ['two objects alike (keyed by identity)', [{ a: 1 }], [{ a: 1 }]],
  ];
  for (const [what, a, b] of differ) assert.notEqual(queryKey(SQL, a, false), queryKey(SQL, b, false), what);
  assert.notEqual(queryKey(SQL, [1], false), queryKey(SQL, [1], true), 'rows and JSON bytes');
  assert.notEqual(queryKey('SELECT ?', [1], false), queryKey('SELECT  ?', [1], false), 'another SQL');
  assert.notEqual(queryKey('SELECT ?', ['1'], false), queryKey("SELECT ?'", [''], false), 'SQL and a string run together');
});

test('bytes are keyed by every byte: each of the 256 values, and a change anywhere in a buffer of several chunks', () => {
  const keys = new Set(Array.from({ length: 256 }, (_, i) => key1(new Uint8Array([i]))));
  assert.equal(keys.size, 256);
  const big = new Uint8Array(3 << 20).map((_, i) => (i * 7) & 255);
  const k = key1(big);
  assert.equal(key1(big.slice()), k, 'a copy has the same key');
  for (const at of [0, 8191, 8192, big.length - 1]) {
    const other = big.slice();
    other[at] ^= 1;
    assert.notEqual(key1(other), k, `a change at byte ${at}`);
  }
  assert.notEqual(key1(big.subarray(1)), k, 'one byte less');
});

test('in the worker: parameters as prepareParams sends them and the structured clone delivers them are keyed alike', () => {
  // What the worker sees: a watch prepares its parameters with threshold 0 (database.ts).
  const arrive = (params) => structuredClone(prepareParams(params, 0, { owner: {}, transfer: new Set(), staged: [] }));
  const pairs = [
    [[bufferOf(1, 2, 3)], [bufferOf(9, 9, 9)]],
    [[new Uint8Array([1, 2])], [new Uint8Array([3, 4])]],
    [[new Uint8Array(bufferOf(0, 1, 2, 3), 1, 2)], [bufferOf(0, 1, 2, 3)]],
    [[0], [-0]],
    [[1], [1n]],
    [[null], [undefined]],
    [[true], [1]],
    [[1], { 0: 1 }],
  ];
  for (const [a, b] of pairs) {
    const [ka, kb] = [arrive(a), arrive(b)].map((p) => queryKey(SQL, p, false));
    assert.notEqual(ka, kb, `${String(a[0] ?? a)} and ${String(b[0] ?? b)}`);
    assert.equal(ka, queryKey(SQL, arrive(a), false), 'the same parameters arriving again');
    assert.equal(ka, queryKey(SQL, a, false), 'the page keys the same query alike');
  }
});

test('keptParams: the bytes keyed, copied; every other value as it is', () => {
  const buf = bufferOf(1, 2, 3);
  const view = new Uint8Array(bufferOf(0, 1, 2, 3), 1, 2);
  const blob = new Blob(['x']);
  const gone = detached();
  const params = [buf, view, new Transfer(new Uint8Array([7])), blob, 1n, -0, 'a', null, gone];
  const key = queryKey(SQL, params, false);
  const kept = keptParams(params);
  assert.notEqual(kept, params);
  new Uint8Array(buf).fill(0);
  view.fill(0);
  assert.deepEqual(kept.slice(0, 3), [new Uint8Array([1, 2, 3]), new Uint8Array([1, 2]), new Uint8Array([7])]);
  assert.equal(kept[3], blob, 'a Blob is kept itself');
  assert.equal(kept[8], gone, 'a detached buffer stays detached');
  assert.deepEqual(kept.slice(4, 8), [1n, -0, 'a', null]);
  assert.ok(Object.is(kept[5], -0));
  assert.equal(queryKey(SQL, kept, false), key, 'the copy has the key the parameters had when it was made');
  assert.notEqual(queryKey(SQL, params, false), key, 'and the changed parameters have another');
  const named = keptParams({ b: bufferOf(5), a: 1 });
  assert.deepEqual(named, { b: new Uint8Array([5]), a: 1 });
  assert.equal(keptParams(undefined), undefined);
});
