//! A file kept as fixed-size blocks in immutable segments: the shape of a
//! database's files in IndexedDB (issue 30; experiment 025).
//!
//! A segment is one stored value (a `Blob`) packing many blocks; a block is
//! never a record of its own (256 small Blobs took 109–587 ms per strict
//! commit, one 1 MiB Blob 6–14 ms). The file's map gives each block its
//! segment and its place there, and is stored in chunks of [`CHUNK`]
//! blocks, so a sync puts only the chunks it changed.
//!
//! Writes go to blocks held in memory until the next sync. Past
//! [`BlockFile::spill_due`] they are packed into a segment of their own
//! (staged: a `Blob` not yet stored), so a large write holds little
//! memory. A held block that is zeros but for a few bytes is kept as those
//! bytes (`sparse.rs`) and is not staged: SQLite writes such pages by the
//! million for a value's placeholder (`zeroblob`), then writes each of them
//! again with the value's bytes, so staging them would make a segment of
//! every one only for the next write to make it dead (experiment 037). A
//! sync packs what is left into one more segment and says what
//! one IndexedDB transaction must store for the file to be as written:
//! the new segments, the changed map chunks and the size, and the
//! segments no block uses any more. So the file in storage is always as
//! of one sync, as a disk is after a power loss, which is all SQLite asks
//! of one. A transaction that fails leaves storage as of the sync before:
//! the file is loaded again from there.

use super::Result;
use sparse::{dense, sparse_write, Runs};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod sparse;

/// Blocks per map chunk: 4,096, a chunk of 32 KiB (two words a block).
pub const CHUNK: u64 = 4096;

/// A block of a segment: the segment's number and the block's place in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub seg: u32,
    pub index: u32,
}

/// What a sync must store, in one transaction (see [`BlockFile::take_sync`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sync {
    /// The blocks held in memory, packed in order as segment `seg`; empty
    /// when none were.
    pub packed: Vec<u8>,
    pub seg: u32,
    /// The segments to store: those staged since the last sync that
    /// blocks still use, and `seg` if it packs anything.
    pub segments: Vec<u32>,
    /// Staged segments no block uses any more: never stored, let go.
    pub released: Vec<u32>,
    /// The map chunks changed since the last sync, as stored: two words a
    /// block (segment, place), `u32::MAX` twice for a block never written.
    pub chunks: Vec<(u64, Vec<u32>)>,
    /// The chunks the map has now: stored ones from here on are deleted.
    pub chunk_count: u64,
    pub size: u64,
    /// Stored segments no block uses any more: deleted in the same
    /// transaction.
    pub dead: Vec<u32>,
}

/// Bytes a sparse block is counted for beyond its runs: its entry in the
/// map of them and its allocation.
const SPARSE_OVERHEAD: usize = 48;
/// Bytes of sparse blocks held before they are staged as well.
const SPARSE_CAP: usize = 16 << 20;

/// A file of `block`-byte blocks: its map, and its writes since the last sync.
pub struct BlockFile {
    block: usize,
    size: u64,
    map: Vec<Option<Loc>>,
    /// Blocks written since the last sync, not yet staged: whole, or
    /// (`sparse`) zeros but for runs of bytes, as `sparse.rs` keeps them,
    /// at most [`Self::sparse_max`] bytes. A block is in one or the other.
    held: BTreeMap<u64, Box<[u8]>>,
    sparse: BTreeMap<u64, Box<[u8]>>,
    /// Bytes the sparse blocks are counted for.
    sparse_bytes: usize,
    /// Segments staged since the last sync.
    staged: Vec<u32>,
    /// Map chunks changed since the last sync.
    changed: BTreeSet<u64>,
    /// Blocks each segment holds for the map.
    live: HashMap<u32, u32>,
    /// Segments whose last block went since the last sync.
    dead: BTreeSet<u32>,
    /// The file's last block as it was last packed, kept: the block the
    /// next append writes in part (a WAL's next frame starts in it), which
    /// would otherwise be read back from its segment first. Never held at
    /// the same time: a write moves it there.
    tail: Option<(u64, Box<[u8]>)>,
}

const NONE: u32 = u32::MAX;

/// Reads bytes of a stored or staged segment: `(segment, offset, into)`.
pub type Fetch<'a> = dyn FnMut(u32, u64, &mut [u8]) -> Result<()> + 'a;

impl BlockFile {
    /// A file of `size` bytes whose map is `chunks` (as a sync stores them).
    pub fn load(block: usize, size: u64, chunks: &[(u64, Vec<u32>)]) -> BlockFile {
        assert!(block > 0 && block <= 1 << 16, "a block holds bytes, placed by two-byte offsets");
        let blocks = size.div_ceil(block as u64);
        let mut map = vec![None; blocks as usize];
        let mut live = HashMap::new();
        for (n, words) in chunks {
            for (i, pair) in words.chunks_exact(2).enumerate() {
                let at = n * CHUNK + i as u64;
                if pair[0] == NONE || at >= blocks {
                    continue;
                }
                map[at as usize] = Some(Loc { seg: pair[0], index: pair[1] });
                *live.entry(pair[0]).or_insert(0) += 1;
            }
        }
        BlockFile {
            block,
            size,
            map,
            held: BTreeMap::new(),
            sparse: BTreeMap::new(),
            sparse_bytes: 0,
            staged: Vec::new(),
            changed: BTreeSet::new(),
            live,
            dead: BTreeSet::new(),
            tail: None,
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes a block.
    pub fn block(&self) -> usize {
        self.block
    }

    /// Bytes of blocks held in memory: the dense ones whole, the sparse
    /// ones as they are kept.
    pub fn held_bytes(&self) -> usize {
        self.held.len() * self.block + self.sparse_bytes
    }

    /// The most bytes a sparse block keeps: past them it is dense.
    fn sparse_max(&self) -> usize {
        (self.block / 16).min(512)
    }

    /// Reads `out.len()` bytes from `at`: what lies past the end is zeros,
    /// as are blocks never written. `fetch(seg, offset, buf)` reads bytes of
    /// a segment; blocks that follow each other in one segment are read in
    /// one call.
    pub fn read(&self, at: u64, out: &mut [u8], fetch: &mut Fetch) -> Result<()> {
        out.fill(0);
        let end = (at + out.len() as u64).min(self.size);
        let b = self.block as u64;
        let mut pos = at;
        while pos < end {
            let block = pos / b;
            let within = pos % b;
            let tail = self.tail.as_ref().filter(|(k, _)| *k == block).map(|(_, bytes)| bytes);
            if let Some(bytes) = self.held.get(&block).or(tail) {
                let n = (b - within).min(end - pos) as usize;
                let o = (pos - at) as usize;
                out[o..o + n].copy_from_slice(&bytes[within as usize..within as usize + n]);
                pos += n as u64;
                continue;
            }
            if let Some(runs) = self.sparse.get(&block) {
                let n = (b - within).min(end - pos) as usize;
                let (o, within) = ((pos - at) as usize, within as usize);
                for (from, run) in Runs(runs) {
                    let (lo, hi) = (from.max(within), (from + run.len()).min(within + n));
                    if lo < hi {
                        out[o + lo - within..o + hi - within].copy_from_slice(&run[lo - from..hi - from]);
                    }
                }
                pos += n as u64;
                continue;
            }
            let Some(first) = self.map.get(block as usize).copied().flatten() else {
                // Never written: zeros, already there.
                pos = ((block + 1) * b).min(end);
                continue;
            };
            // The run of blocks that follow it in its segment, read as one.
            let follows = |k: u64| {
                k * b < end
                    && !self.held.contains_key(&k)
                    && !self.sparse.contains_key(&k)
                    && self.map.get(k as usize).copied().flatten()
                        == Some(Loc { seg: first.seg, index: first.index + (k - block) as u32 })
            };
            let mut last = block;
            while follows(last + 1) {
                last += 1;
            }
            let n = (((last + 1) * b).min(end) - pos) as usize;
            let o = (pos - at) as usize;
            fetch(first.seg, u64::from(first.index) * b + within, &mut out[o..o + n])?;
            pos += n as u64;
        }
        Ok(())
    }

    /// Writes `bytes` at `at`, the file growing to hold them. A block
    /// written in part is read first (`fetch`, as in [`Self::read`]).
    pub fn write(&mut self, at: u64, bytes: &[u8], fetch: &mut Fetch) -> Result<()> {
        let b = self.block as u64;
        let end = at + bytes.len() as u64;
        let mut pos = at;
        while pos < end {
            let block = pos / b;
            let within = (pos % b) as usize;
            let n = (b as usize - within).min((end - pos) as usize);
            let o = (pos - at) as usize;
            self.write_block(block, within, &bytes[o..o + n], fetch)?;
            pos += n as u64;
        }
        if end > self.size {
            self.resize(end);
        }
        Ok(())
    }

    /// Writes `bytes` into block `block` from `within`.
    fn write_block(&mut self, block: u64, within: usize, bytes: &[u8], fetch: &mut Fetch) -> Result<()> {
        let to = within..within + bytes.len();
        if self.tail.as_ref().is_some_and(|(k, _)| *k == block) {
            let (_, d) = self.tail.take().expect("the tail block");
            self.held.insert(block, d);
        }
        if let Some(d) = self.held.get_mut(&block) {
            d[to].copy_from_slice(bytes);
            return Ok(());
        }
        let runs = match self.sparse.remove(&block) {
            Some(runs) => {
                self.sparse_bytes -= runs.len() + SPARSE_OVERHEAD;
                runs
            }
            // Zeros: past the end, never written, or about to be written whole.
            None if bytes.len() == self.block || !self.stored(block) => Box::new([]),
            None => {
                let mut d = vec![0u8; self.block].into_boxed_slice();
                self.read(block * self.block as u64, &mut d, fetch)?;
                d[to].copy_from_slice(bytes);
                self.held.insert(block, d);
                return Ok(());
            }
        };
        match sparse_write(&runs, within, bytes, self.sparse_max()) {
            Some(kept) => {
                self.sparse_bytes += kept.len() + SPARSE_OVERHEAD;
                self.sparse.insert(block, kept);
            }
            None if bytes.len() == self.block => {
                self.held.insert(block, bytes.into());
            }
            None => {
                let mut d = dense(&runs, self.block);
                d[to].copy_from_slice(bytes);
                self.held.insert(block, d);
            }
        }
        Ok(())
    }

    /// Whether block `block` is in a segment, within the file.
    fn stored(&self, block: u64) -> bool {
        block * (self.block as u64) < self.size && self.map.get(block as usize).copied().flatten().is_some()
    }

    /// Cuts the file to `size` bytes, or lengthens it with zeros. A last
    /// block cut in part is read first (`fetch`), so what lay past the new
    /// end reads as zeros if the file grows again.
    pub fn truncate(&mut self, size: u64, fetch: &mut Fetch) -> Result<()> {
        let b = self.block as u64;
        if size < self.size && !size.is_multiple_of(b) {
            // Zeros from the new end to the block's end.
            let (last, from) = (size / b, (size % b) as usize);
            self.write_block(last, from, &vec![0u8; self.block - from], fetch)?;
        }
        let keep = size.div_ceil(b);
        self.tail = self.tail.take().filter(|(k, _)| *k < keep);
        self.held.split_off(&keep);
        for (_, runs) in self.sparse.split_off(&keep) {
            self.sparse_bytes -= runs.len() + SPARSE_OVERHEAD;
        }
        for k in keep..self.map.len() as u64 {
            self.set(k, None);
        }
        self.resize(size);
        Ok(())
    }

    fn resize(&mut self, size: u64) {
        self.size = size;
        let blocks = size.div_ceil(self.block as u64) as usize;
        if blocks > self.map.len() {
            self.map.resize(blocks, None);
        } else {
            self.map.truncate(blocks);
        }
    }

    /// Whether the dense blocks held in memory have reached `bytes`, or the
    /// sparse ones their own bound: time to stage them.
    pub fn spill_due(&self, bytes: usize) -> bool {
        self.held.len() * self.block >= bytes || self.sparse_bytes >= SPARSE_CAP
    }

    /// Packs the dense blocks held in memory, in order, as staged segment
    /// `seg`: the bytes that segment holds (the caller keeps them outside
    /// wasm memory, and reads them back through `fetch`). Sparse blocks
    /// stay held, unless they are past their bound: then the first of them
    /// are packed too, up to `bytes` of them.
    pub fn stage(&mut self, seg: u32, bytes: usize) -> Vec<u8> {
        if self.sparse_bytes >= SPARSE_CAP {
            self.densify(bytes / self.block);
        }
        let held = std::mem::take(&mut self.held);
        let packed = self.pack(seg, held);
        if !packed.is_empty() {
            self.staged.push(seg);
        }
        packed
    }

    /// Bytes the blocks held take once packed: the dense ones, and the
    /// sparse ones made whole.
    pub fn packed_bytes(&self) -> usize {
        (self.held.len() + self.sparse.len()) * self.block
    }

    /// Before a sync: packs the first of the blocks held, dense and sparse
    /// alike, up to `bytes` of them (one block at least), as staged segment
    /// `seg`. A sync packs everything held, and the sparse blocks can be
    /// many (a value that is zeros but for a few bytes a page keeps each of
    /// its pages sparse): staged a part at a time, they never take more
    /// than `bytes` of memory at once.
    pub fn stage_for_sync(&mut self, seg: u32, bytes: usize) -> Vec<u8> {
        let n = (bytes / self.block).max(1);
        let mut part = BTreeMap::new();
        while part.len() < n {
            let dense_first = match (self.held.first_key_value(), self.sparse.first_key_value()) {
                (Some((h, _)), Some((s, _))) => h < s,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if dense_first {
                let (k, bytes) = self.held.pop_first().expect("a first block");
                part.insert(k, bytes);
            } else {
                let (k, runs) = self.sparse.pop_first().expect("a first block");
                self.sparse_bytes -= runs.len() + SPARSE_OVERHEAD;
                part.insert(k, dense(&runs, self.block));
            }
        }
        let packed = self.pack(seg, part);
        if !packed.is_empty() {
            self.staged.push(seg);
        }
        packed
    }

    /// Makes the first `n` sparse blocks whole, to be packed with the others.
    fn densify(&mut self, n: usize) {
        for _ in 0..n {
            let Some((k, runs)) = self.sparse.pop_first() else { return };
            self.sparse_bytes -= runs.len() + SPARSE_OVERHEAD;
            self.held.insert(k, dense(&runs, self.block));
        }
    }

    /// Packs whole blocks `held` (taken from those held), in order, as segment `seg`.
    fn pack(&mut self, seg: u32, held: BTreeMap<u64, Box<[u8]>>) -> Vec<u8> {
        let mut packed = Vec::with_capacity(held.len() * self.block);
        let last = self.size.div_ceil(self.block as u64).checked_sub(1);
        // Held blocks lie within the file: a truncate drops those past it.
        for (i, (k, bytes)) in held.into_iter().enumerate() {
            self.set(k, Some(Loc { seg, index: i as u32 }));
            packed.extend_from_slice(&bytes);
            if Some(k) == last {
                self.tail = Some((k, bytes));
            }
        }
        packed
    }

    fn set(&mut self, k: u64, to: Option<Loc>) {
        let from = self.map[k as usize];
        if from == to {
            return;
        }
        self.changed.insert(k / CHUNK);
        if let Some(l) = from {
            let n = self.live.get_mut(&l.seg).expect("a mapped segment is counted");
            *n -= 1;
            if *n == 0 {
                self.live.remove(&l.seg);
                self.dead.insert(l.seg);
            }
        }
        if let Some(l) = to {
            *self.live.entry(l.seg).or_insert(0) += 1;
            self.dead.remove(&l.seg);
        }
        self.map[k as usize] = to;
    }

    /// What a sync must store for the file to be as written, the blocks
    /// still held packed as segment `seg`. The file counts it stored.
    pub fn take_sync(&mut self, seg: u32) -> Sync {
        self.densify(usize::MAX);
        let held = std::mem::take(&mut self.held);
        let packed = self.pack(seg, held);
        let mut staged = std::mem::take(&mut self.staged);
        if !packed.is_empty() {
            staged.push(seg);
        }
        let (segments, released): (Vec<u32>, Vec<u32>) = staged.into_iter().partition(|s| self.live.contains_key(s));
        let dead = std::mem::take(&mut self.dead).into_iter().filter(|s| !released.contains(s)).collect();
        let chunk_count = (self.map.len() as u64).div_ceil(CHUNK);
        let chunks = std::mem::take(&mut self.changed)
            .into_iter()
            .filter(|&n| n < chunk_count)
            .map(|n| (n, self.chunk(n)))
            .collect();
        Sync { packed, seg, segments, released, chunks, chunk_count, size: self.size, dead }
    }

    /// Map chunk `n` as stored.
    fn chunk(&self, n: u64) -> Vec<u32> {
        let from = (n * CHUNK) as usize;
        let to = ((n + 1) * CHUNK).min(self.map.len() as u64) as usize;
        let mut words = Vec::with_capacity((to.saturating_sub(from)) * 2);
        for l in self.map.get(from..to).unwrap_or(&[]) {
            match l {
                Some(l) => words.extend_from_slice(&[l.seg, l.index]),
                None => words.extend_from_slice(&[NONE, NONE]),
            }
        }
        words
    }
}

#[cfg(test)]
mod tests;
