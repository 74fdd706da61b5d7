// What both power-loss simulations (OPFS and IndexedDB) check encrypted
// images with: SQLite3 Multiple Ciphers, built once by
// tests/powerloss/sqlite3mc.sh, for Python's sqlite3 through LD_PRELOAD.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

let library;

/** The path of the native SQLite3MC library (built on first use). */
export const sqlite3mc = () =>
  (library ??= (() => {
    const r = spawnSync('bash', [resolve(import.meta.dirname, '../powerloss/sqlite3mc.sh')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
  })());
