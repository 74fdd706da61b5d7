// Hostile inputs, one row per class (hostile-kit.mjs runs them): misuse
// from hostile-misuse.mjs: every call after close(), misuse inside
// transactions, garbage posted straight to the worker, damaged database
// files, odd names for the blob reads, and names open() must take or
// refuse. hostile.test.mjs runs the bad values, shapes, SQL and limits.

import { CLOSED_CALLS, TRANSACTIONS, RAW_MESSAGES, DAMAGED_FILES, NAMES, OPEN_NAMES } from './hostile-misuse.mjs';
import { rowTests } from './hostile-kit.mjs';

rowTests([
  ['closed', CLOSED_CALLS],
  ['transaction', TRANSACTIONS],
  ['message', RAW_MESSAGES],
  ['file', DAMAGED_FILES],
  ['name', NAMES],
  ['open', OPEN_NAMES],
]);
