"""Power-loss images from a record of IndexedDB transactions, checked with SQLite.

The IndexedDB side of the power-loss simulation: the probe worker
(tests/e2e/probe-worker.js, option `recordIdb`) logs every readwrite
transaction on the package's IndexedDB database that completed, with its
puts and deletes, plus marks the page set after each acknowledged
transaction. IndexedDB commits a transaction whole or not at all, in the
order they were made, so a power loss leaves the stores as of some prefix of
that sequence of transactions. This script cuts the sequence at every point
(before the first transaction, between each two, after the last), builds the
database's files from the stores as they were there, and checks each with
the checks of images.py: integrity_check ok, every transaction acknowledged
before the cut there with each row's SHA-256 right, every transaction that
is there whole.

    python3 idb_images.py LOG.json --db NAME [--key KEY] [--split] [--until-failure]

The files are read as src/codec/blocks.rs lays them out: `files` [name,
path] → { size, block }, `chunks` [name, path, n] → two little-endian u32
words a block (segment, place; u32::MAX twice for a block never written),
4,096 blocks a chunk, and `segments` [name, path, seg] → the packed blocks.
A WAL whose record has `frames` (its own size) is laid out as
src/codec/frames.rs lays it out, and is laid out again as a plain file here:
groups of (block - 32) // 24 frames, each a block of their 24-byte headers
(the WAL's 32-byte header first, in the first group) and then a block a page.

`--split` also cuts inside each transaction, after each of its puts and
deletes: the stores as they would be had a commit been split over several
transactions. The check must then find failures. `--until-failure` stops
at the first image that fails (to show that the check bites, one is
enough).
Prints one JSON object: images, failures (and by kind), first failures,
transactions.
"""

import argparse
import base64
import json
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from images import check  # noqa: E402

# Failures by kind, by what their reason says.
KINDS = {
    'which is not stored': 'a block in a segment not stored',
    'past the end of segment': 'a block past its segment',
    'integrity_check': 'integrity_check not ok',
    'SQLite:': 'SQLite could not read it',
    'is missing': 'an acknowledged transaction lost',
    'is partial': 'a partial transaction',
    'do not match': 'bytes not as written',
    'no database file': 'no database file',
}
CHUNK = 4096
NONE = 0xFFFFFFFF


def value(v):
    if isinstance(v, dict) and 'bytes' in v:
        return base64.b64decode(v['bytes'])
    if isinstance(v, dict) and 'words' in v:
        raw = base64.b64decode(v['words'])
        return struct.unpack('<%dI' % (len(raw) // 4), raw)
    return v


def key(k):
    # JSON has no Infinity: an upper bound's Infinity came as null.
    return tuple(float('inf') if x is None else x for x in k)


def apply(stores, op):
    store, kind, k = op[0], op[1], op[2]
    s = stores.setdefault(store, {})
    if kind == 'put':
        s[key(k)] = value(op[3])
    elif isinstance(k, dict):
        lo, hi = key(k['lower']), key(k['upper'])
        for have in [h for h in s if len(h) == len(lo) and lo <= h <= hi]:
            del s[have]
    else:
        s.pop(key(k), None)


def files_of(stores, name):
    """The database `name`'s files as the stores hold them: {file name: bytes}, or a reason they cannot be read."""
    out = {}
    for k, rec in stores.get('files', {}).items():
        if len(k) != 2 or k[0] != name:
            continue
        path, size, block = k[1], rec['size'], rec['block']
        data = bytearray(size)
        for i in range((size + block - 1) // block):
            words = stores.get('chunks', {}).get((name, path, i // CHUNK))
            if words is None or 2 * (i % CHUNK) + 1 >= len(words):
                continue
            seg, place = words[2 * (i % CHUNK)], words[2 * (i % CHUNK) + 1]
            if seg == NONE:
                continue
            packed = stores.get('segments', {}).get((name, path, seg))
            if packed is None:
                return f'{path}: block {i} is in segment {seg}, which is not stored'
            part = packed[place * block : (place + 1) * block]
            if len(part) != block:
                return f'{path}: block {i} lies past the end of segment {seg}'
            end = min(size, (i + 1) * block)
            data[i * block : end] = part[: end - i * block]
        if 'frames' in rec:
            data = unframed(data, rec['frames'], block)
        out[os.path.basename(path)] = bytes(data)
    return out


def unframed(stored, size, block):
    """A WAL of `size` bytes from its frame groups' blocks `stored` (pages of a block's size)."""
    group = (block - 32) // 24
    out = bytearray(stored[:32])
    k = 0
    while len(out) < size:
        base = (k // group) * (group + 1) * block
        slot = base + 32 + (k % group) * 24
        page = base + block * (1 + k % group)
        out += stored[slot : slot + 24] + stored[page : page + block]
        k += 1
    return out[:size]


def main():
    p = argparse.ArgumentParser()
    p.add_argument('log')
    p.add_argument('--db', required=True)
    p.add_argument('--key')
    p.add_argument('--split', action='store_true')
    p.add_argument('--until-failure', action='store_true')
    a = p.parse_args()
    with open(a.log) as f:
        rec = json.load(f)
    txs = rec['txs']
    stores = {}
    acked = -1
    images = 0
    transactions = 0
    failures = []

    class Found(Exception):
        pass

    def cut(where):
        nonlocal images
        if a.until_failure and failures:
            raise Found
        images += 1
        image = files_of(stores, a.db)
        why = image if isinstance(image, str) else check(image, os.path.basename(a.db), txs, acked, workdir, a.key)
        if why:
            failures.append({'image': images - 1, 'cut': where, 'why': why})

    def walk():
        nonlocal acked, transactions
        cut('before the first transaction')
        for e in rec['log']:
            if e[0] == 'm':
                acked = e[1]
                continue
            if e[0] != 'x':
                continue
            transactions += 1
            ops = e[1]
            for i, op in enumerate(ops):
                apply(stores, op)
                if a.split and i < len(ops) - 1:
                    cut(f'transaction {transactions}, after {i + 1} of its {len(ops)} operations')
            cut(f'after transaction {transactions}')

    with tempfile.TemporaryDirectory() as workdir:
        try:
            walk()
        except Found:
            pass
    kinds = {}
    for f in failures:
        kind = KINDS.get(next((k for k in KINDS if k in f['why']), None), 'other')
        kinds[kind] = kinds.get(kind, 0) + 1
    print(json.dumps({'images': images, 'failures': len(failures), 'kinds': kinds, 'first': failures[:5], 'transactions': transactions}))


if __name__ == '__main__':
    main()
