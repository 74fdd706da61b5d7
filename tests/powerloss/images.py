"""Power-loss images from a record of OPFS writes, checked with SQLite.

The SQLite crash-test method, on this package's storage layer: the probe
worker (tests/e2e/probe-worker.js, option `record`) logs every write,
truncate and flush that reached an OPFS sync access handle, plus marks the
page set after each acknowledged transaction. This script cuts that log at
random points and builds the files a power loss could leave:

- every write and truncate of a file before that file's last flush (in the
  cut) is there;
- of the later ones, a random subset, each possibly torn at a 512-byte
  sector boundary (a prefix of its sectors written).

Each image's pool slots (4096-byte header holding the file's name, then the
data) become plain files, opened with SQLite (Python's sqlite3: SQLite's own
C library; a hot journal is rolled back on open) and checked: integrity_check
is ok, every transaction acknowledged before the cut is there with each
row's SHA-256 right, and every transaction that is there is whole.

    python3 images.py LOG.json --images 500 --seed 1 [--ignore-flushes] [--until-failure]

LOG.json: {"log": [...], "txs": {"<n>": rows}} with write bytes in base64.
`--key KEY` checks an encrypted database's images (SQLite3 Multiple
Ciphers' chacha20 under the passphrase KEY): Python's sqlite3 must then run
SQLite3MC, with tests/powerloss/sqlite3mc.sh's library in LD_PRELOAD (this
script checks that it does).
`--ignore-flushes` builds images as if no flush after the schema was
created had happened (a storage layer that stops flushing): the check must
then find lost transactions. `--ignore-flushes-of wal` ignores only the
`-wal` file's flushes after the schema (a commit's flush removed), and
`--ignore-flushes-of db` only the database file's (under WAL, the
checkpoint's flush removed). `--until-failure` stops at the first image
that fails (to show that a check bites, one is enough).
Prints one JSON object: images (checked), failures, first failures, flushes
per commit.
"""

import argparse
import base64
import hashlib
import json
import os
import random
import sqlite3
import tempfile

HEADER = 4096
NAME = 512
SECTOR = 512


def build(log, cut, rng, ignore_after, ignored=()):
    last_flush = {}
    for i, e in enumerate(log[:cut]):
        if e[0] == 'f' and (i < ignore_after or e[1] not in ignored):
            last_flush[e[1]] = i
    files = {}
    for i, e in enumerate(log[:cut]):
        if e[0] not in ('w', 't'):
            continue
        h = e[1]
        f = files.setdefault(h, bytearray())
        durable = i < last_flush.get(h, -1)
        if e[0] == 't':
            if durable or rng.random() < 0.5:
                size = e[2]
                del f[size:]
                f.extend(b'\0' * (size - len(f)))
            continue
        at, data = e[2], e[3]
        if not durable:
            if rng.random() < 0.5:
                continue  # lost
            if rng.random() < 0.25:
                data = data[: rng.randrange(0, len(data) // SECTOR + 1) * SECTOR]  # torn
        if at > len(f):
            f.extend(b'\0' * (at - len(f)))
        f[at : at + len(data)] = data
    return files


def slot_name(f):
    if len(f) < HEADER:
        return ''
    return os.path.basename(bytes(f[:NAME]).split(b'\0', 1)[0].decode('utf-8', 'replace'))


def slots(files):
    """Pool slots as {file name: data}; unnamed slots are free."""
    return {slot_name(f): bytes(f[HEADER:]) for f in files.values() if slot_name(f)}


def handles_of(log, rng, name):
    """The pool handles whose slot holds the file `name` at the end of the log."""
    files = build(log, len(log), rng, len(log))
    return {h for h, f in files.items() if slot_name(f) == name}


def connect(path, key):
    con = sqlite3.connect(path)
    if key is not None:
        # Before anything reads the file: the hot journal is rolled back
        # with the key.
        con.execute("PRAGMA cipher = 'chacha20'")
        con.execute("PRAGMA key = '%s'" % key.replace("'", "''"))
    return con


def check(image, db_name, txs, acked, workdir, key):
    for n in os.listdir(workdir):
        os.remove(os.path.join(workdir, n))
    for name, data in image.items():
        with open(os.path.join(workdir, name), 'wb') as out:
            out.write(data)
    if db_name not in image:
        return None if acked < 0 else f'no database file, but transaction {acked} was acknowledged'
    con = connect(os.path.join(workdir, db_name), key)
    try:
        ok = con.execute('PRAGMA integrity_check').fetchall()
        if ok != [('ok',)]:
            return f'integrity_check: {ok[:3]}'
        has_table = con.execute("SELECT count(*) FROM sqlite_schema WHERE name = 't'").fetchone()[0]
        rows = con.execute('SELECT tx, k, sum, data FROM t').fetchall() if has_table else []
    except sqlite3.DatabaseError as e:
        return f'SQLite: {e}'
    finally:
        con.close()
    seen = {}
    for tx, k, digest, data in rows:
        if hashlib.sha256(data).hexdigest() != digest:
            return f'transaction {tx} row {k}: bytes do not match their hash'
        seen[tx] = seen.get(tx, 0) + 1
    for tx, count in seen.items():
        if count != txs.get(str(tx)):
            return f'transaction {tx} is partial: {count} of {txs.get(str(tx))} rows'
    for tx in range(1, acked + 1):
        if str(tx) in txs and tx not in seen:
            return f'acknowledged transaction {tx} is missing (cut after mark {acked})'
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument('log')
    p.add_argument('--images', type=int, default=500)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--db', required=True)
    p.add_argument('--ignore-flushes', action='store_true')
    p.add_argument('--ignore-flushes-of', choices=['wal', 'db'])
    p.add_argument('--key')
    p.add_argument('--until-failure', action='store_true')
    a = p.parse_args()
    if a.key is not None:
        try:
            sqlite3.connect(':memory:').execute('SELECT sqlite3mc_version()')
        except sqlite3.OperationalError:
            raise SystemExit('--key needs SQLite3 Multiple Ciphers: run with LD_PRELOAD=$(bash tests/powerloss/sqlite3mc.sh)')
    with open(a.log) as f:
        rec = json.load(f)
    log = [[e[0], e[1], e[2], base64.b64decode(e[3])] if e[0] == 'w' else e for e in rec['log']]
    txs = rec['txs']
    marks = [(i, e[1]) for i, e in enumerate(log) if e[0] == 'm']
    rng = random.Random(a.seed)
    ignore_after = marks[0][0] if (a.ignore_flushes or a.ignore_flushes_of) and marks else len(log)
    ignored = set()
    if a.ignore_flushes_of:
        name = a.db + '-wal' if a.ignore_flushes_of == 'wal' else a.db
        ignored = handles_of(log, random.Random(0), name)
        if not ignored:
            raise SystemExit(f'no file {name} in the record')
    elif a.ignore_flushes:
        ignored = {e[1] for e in log if e[0] == 'f'}
    failures = []
    images = 0
    with tempfile.TemporaryDirectory() as workdir:
        for n in range(a.images):
            if a.until_failure and failures:
                break
            images += 1
            cut = rng.randrange(1, len(log) + 1)
            acked = max([m for i, m in marks if i < cut], default=-1)
            why = check(slots(build(log, cut, rng, ignore_after, ignored)), a.db, txs, acked, workdir, a.key)
            if why:
                failures.append({'image': n, 'cut': cut, 'why': why})
    # Flushes per commit: between consecutive marks (one commit each).
    per = [sum(1 for e in log[i + 1 : j] if e[0] == 'f') for (i, _), (j, _) in zip(marks, marks[1:])]
    print(json.dumps({
        'images': images,
        'entries': len(log),
        'failures': len(failures),
        'first': failures[:5],
        'commits': len(per),
        'flushesPerCommit': sorted(per)[len(per) // 2] if per else None,
        'flushesPerCommitRange': [min(per), max(per)] if per else None,
    }))


if __name__ == '__main__':
    main()
