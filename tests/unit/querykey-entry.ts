// querykey.ts with params.ts's `Transfer` and `prepareParams` from the same
// bundle (load() bundles each entry on its own, and `instanceof Transfer`
// needs the one class), for querykey.test.mjs.
export * from '../../src/js/querykey.js';
export { prepareParams, Transfer } from '../../src/js/params.js';
