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
//! memory. A sync packs what is left into one more segment and says what
//! one IndexedDB transaction must store for the file to be as written:
//! the new segments, the changed map chunks and the size, and the
//! segments no block uses any more. So the file in storage is always as
//! of one sync, as a disk is after a power loss, which is all SQLite asks
//! of one. A transaction that fails leaves storage as of the sync before:
//! the file is loaded again from there.

use super::Result;
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

/// A file of `block`-byte blocks: its map, and its writes since the last sync.
pub struct BlockFile {
    block: usize,
    size: u64,
    map: Vec<Option<Loc>>,
    /// Blocks written since the last sync, not yet staged.
    held: BTreeMap<u64, Box<[u8]>>,
    /// Segments staged since the last sync.
    staged: Vec<u32>,
    /// Map chunks changed since the last sync.
    changed: BTreeSet<u64>,
    /// Blocks each segment holds for the map.
    live: HashMap<u32, u32>,
    /// Segments whose last block went since the last sync.
    dead: BTreeSet<u32>,
}

const NONE: u32 = u32::MAX;

/// Reads bytes of a stored or staged segment: `(segment, offset, into)`.
pub type Fetch<'a> = dyn FnMut(u32, u64, &mut [u8]) -> Result<()> + 'a;

impl BlockFile {
    /// A file of `size` bytes whose map is `chunks` (as a sync stores them).
    pub fn load(block: usize, size: u64, chunks: &[(u64, Vec<u32>)]) -> BlockFile {
        assert!(block > 0, "a block holds bytes");
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
            staged: Vec::new(),
            changed: BTreeSet::new(),
            live,
            dead: BTreeSet::new(),
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes of blocks held in memory.
    pub fn held_bytes(&self) -> usize {
        self.held.len() * self.block
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
            if let Some(bytes) = self.held.get(&block) {
                let n = (b - within).min(end - pos) as usize;
                let o = (pos - at) as usize;
                out[o..o + n].copy_from_slice(&bytes[within as usize..within as usize + n]);
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
            if !self.held.contains_key(&block) {
                let mut fresh = vec![0u8; self.block].into_boxed_slice();
                if n < self.block && block * b < self.size {
                    self.read(block * b, &mut fresh, fetch)?;
                }
                self.held.insert(block, fresh);
            }
            let o = (pos - at) as usize;
            self.held.get_mut(&block).expect("held above")[within..within + n].copy_from_slice(&bytes[o..o + n]);
            pos += n as u64;
        }
        if end > self.size {
            self.resize(end);
        }
        Ok(())
    }

    /// Cuts the file to `size` bytes, or lengthens it with zeros. A last
    /// block cut in part is read first (`fetch`), so what lay past the new
    /// end reads as zeros if the file grows again.
    pub fn truncate(&mut self, size: u64, fetch: &mut Fetch) -> Result<()> {
        let b = self.block as u64;
        if size < self.size && !size.is_multiple_of(b) {
            let last = size / b;
            if !self.held.contains_key(&last) {
                let mut bytes = vec![0u8; self.block].into_boxed_slice();
                self.read(last * b, &mut bytes, fetch)?;
                self.held.insert(last, bytes);
            }
            self.held.get_mut(&last).expect("held above")[(size % b) as usize..].fill(0);
        }
        let keep = size.div_ceil(b);
        self.held.retain(|&k, _| k < keep);
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

    /// Whether the blocks held in memory have reached `bytes`: time to stage them.
    pub fn spill_due(&self, bytes: usize) -> bool {
        self.held_bytes() >= bytes
    }

    /// Packs the blocks held in memory, in order, as staged segment `seg`:
    /// the bytes that segment holds (the caller keeps them outside wasm
    /// memory, and reads them back through `fetch`).
    pub fn stage(&mut self, seg: u32) -> Vec<u8> {
        let packed = self.pack(seg);
        if !packed.is_empty() {
            self.staged.push(seg);
        }
        packed
    }

    fn pack(&mut self, seg: u32) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        let mut packed = Vec::with_capacity(held.len() * self.block);
        // Held blocks lie within the file: a truncate drops those past it.
        for (i, (k, bytes)) in held.into_iter().enumerate() {
            self.set(k, Some(Loc { seg, index: i as u32 }));
            packed.extend_from_slice(&bytes);
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
        let packed = self.pack(seg);
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
mod tests {
    use super::*;

    /// Segments as storage keeps them, and the fetches made.
    #[derive(Default)]
    struct Store {
        segs: HashMap<u32, Vec<u8>>,
        chunks: BTreeMap<u64, Vec<u32>>,
        size: u64,
        next: u32,
        fetches: usize,
    }

    impl Store {
        fn fetch(&mut self) -> impl FnMut(u32, u64, &mut [u8]) -> Result<()> + '_ {
            move |seg, at, buf| {
                self.fetches += 1;
                let s = &self.segs[&seg];
                buf.copy_from_slice(&s[at as usize..at as usize + buf.len()]);
                Ok(())
            }
        }

        fn stage(&mut self, f: &mut BlockFile) {
            self.next += 1;
            let bytes = f.stage(self.next);
            if !bytes.is_empty() {
                self.segs.insert(self.next, bytes);
            }
        }

        /// Stores a sync as its transaction would.
        fn sync(&mut self, f: &mut BlockFile) -> Sync {
            self.next += 1;
            let s = f.take_sync(self.next);
            if !s.packed.is_empty() {
                self.segs.insert(s.seg, s.packed.clone());
            }
            for seg in s.released.iter().chain(&s.dead) {
                assert!(self.segs.remove(seg).is_some(), "segment {seg} was kept");
            }
            for seg in &s.segments {
                assert!(self.segs.contains_key(seg));
            }
            for (n, words) in &s.chunks {
                self.chunks.insert(*n, words.clone());
            }
            self.chunks.retain(|&n, _| n < s.chunk_count);
            self.size = s.size;
            s
        }

        fn load(&self, block: usize) -> BlockFile {
            let chunks: Vec<(u64, Vec<u32>)> = self.chunks.iter().map(|(n, w)| (*n, w.clone())).collect();
            BlockFile::load(block, self.size, &chunks)
        }
    }

    fn read_all(f: &BlockFile, store: &mut Store) -> Vec<u8> {
        let mut out = vec![0u8; f.size() as usize];
        f.read(0, &mut out, &mut store.fetch()).unwrap();
        out
    }

    #[test]
    fn written_bytes_come_back_before_and_after_a_sync_and_a_reload() {
        let mut store = Store::default();
        let mut f = BlockFile::load(4096, 0, &[]);
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
        f.write(100, &data, &mut store.fetch()).unwrap();
        assert_eq!(f.size(), 20_100);
        let mut want = vec![0u8; 100];
        want.extend_from_slice(&data);
        assert_eq!(read_all(&f, &mut store), want);
        store.sync(&mut f);
        assert_eq!(f.held_bytes(), 0);
        assert_eq!(read_all(&f, &mut store), want);
        let again = store.load(4096);
        assert_eq!(read_all(&again, &mut store), want);
    }

    #[test]
    fn blocks_that_follow_each_other_in_a_segment_are_read_in_one_call() {
        let mut store = Store::default();
        let mut f = BlockFile::load(4096, 0, &[]);
        f.write(0, &vec![3u8; 64 * 4096], &mut store.fetch()).unwrap();
        store.sync(&mut f);
        store.fetches = 0;
        let mut out = vec![0u8; 60 * 4096];
        f.read(4096 + 10, &mut out, &mut store.fetch()).unwrap();
        assert_eq!(store.fetches, 1);
        assert!(out.iter().all(|&b| b == 3));
        // A block written over since splits the run: three calls.
        f.write(30 * 4096, &[9u8; 4096], &mut store.fetch()).unwrap();
        store.sync(&mut f);
        store.fetches = 0;
        f.read(4096 + 10, &mut out, &mut store.fetch()).unwrap();
        assert_eq!(store.fetches, 3);
    }

    #[test]
    fn blocks_of_one_segment_out_of_order_are_read_each_from_its_place() {
        // A map as storage may hold it: blocks 0 and 1 in one segment, but
        // not side by side there.
        let mut store = Store::default();
        store.segs.insert(1, [vec![1u8; 16], vec![9u8; 16], vec![2u8; 16]].concat());
        let f = BlockFile::load(16, 32, &[(0, vec![1, 0, 1, 2])]);
        let mut want = vec![1u8; 16];
        want.extend_from_slice(&[2u8; 16]);
        assert_eq!(read_all(&f, &mut store), want);
    }

    #[test]
    fn staged_blocks_leave_memory_and_read_back() {
        let mut store = Store::default();
        let mut f = BlockFile::load(8192, 0, &[]);
        let mut want = Vec::new();
        for i in 0..64u8 {
            let part = vec![i; 100_000];
            f.write(want.len() as u64, &part, &mut store.fetch()).unwrap();
            want.extend_from_slice(&part);
            if f.spill_due(1 << 20) {
                store.stage(&mut f);
            }
            assert!(f.held_bytes() < (1 << 20) + 8192 * 14);
        }
        assert_eq!(read_all(&f, &mut store), want);
        let s = store.sync(&mut f);
        assert!(s.segments.len() > 4, "{} segments", s.segments.len());
        assert_eq!(read_all(&store.load(8192), &mut store), want);
    }

    #[test]
    fn a_segment_no_block_uses_is_deleted_or_never_stored() {
        let mut store = Store::default();
        let mut f = BlockFile::load(4096, 0, &[]);
        f.write(0, &[1u8; 8192], &mut store.fetch()).unwrap();
        let first = store.sync(&mut f).seg;
        // Both blocks written over: the first segment is dead.
        f.write(0, &[2u8; 8192], &mut store.fetch()).unwrap();
        let s = store.sync(&mut f);
        assert_eq!(s.dead, vec![first]);
        // A staged segment written over before the sync is let go.
        f.write(0, &[3u8; 8192], &mut store.fetch()).unwrap();
        store.stage(&mut f);
        let staged = store.next;
        f.write(0, &[4u8; 8192], &mut store.fetch()).unwrap();
        let s = store.sync(&mut f);
        assert_eq!(s.released, vec![staged]);
        assert_eq!(s.segments, vec![s.seg]);
        assert_eq!(read_all(&store.load(4096), &mut store), vec![4u8; 8192]);
    }

    #[test]
    fn what_a_truncate_cuts_off_reads_as_zeros_when_the_file_grows_again() {
        let mut store = Store::default();
        let mut f = BlockFile::load(4096, 0, &[]);
        f.write(0, &[7u8; 3 * 4096], &mut store.fetch()).unwrap();
        store.sync(&mut f);
        f.truncate(5000, &mut store.fetch()).unwrap();
        f.write(10_000, &[8u8; 10], &mut store.fetch()).unwrap();
        store.sync(&mut f);
        let mut want = vec![7u8; 5000];
        want.resize(10_000, 0);
        want.extend_from_slice(&[8u8; 10]);
        assert_eq!(read_all(&f, &mut store), want);
        assert_eq!(read_all(&store.load(4096), &mut store), want);
        // Cut to nothing: the map's chunks go, and every segment.
        f.truncate(0, &mut store.fetch()).unwrap();
        let s = store.sync(&mut f);
        assert_eq!((s.size, s.chunk_count), (0, 0));
        assert!(store.segs.is_empty() && store.chunks.is_empty());
    }

    /// Random writes, truncates, stages and syncs against a plain buffer,
    /// across map chunks: the file, and the file loaded again after each
    /// sync, always read as the buffer.
    #[test]
    fn random_operations_read_as_a_plain_buffer() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let block = 512;
        let mut store = Store::default();
        let mut f = BlockFile::load(block, 0, &[]);
        let mut model: Vec<u8> = Vec::new();
        for step in 0..3000u32 {
            match rand(10) {
                0..=5 => {
                    let at = rand(CHUNK * block as u64 * 2 + 5000);
                    let len = 1 + rand(3 * block as u64) as usize;
                    let bytes: Vec<u8> = (0..len).map(|i| (step as usize + i) as u8).collect();
                    f.write(at, &bytes, &mut store.fetch()).unwrap();
                    let end = at as usize + len;
                    if model.len() < end {
                        model.resize(end, 0);
                    }
                    model[at as usize..end].copy_from_slice(&bytes);
                }
                6 => {
                    let size = rand(model.len() as u64 + 2000);
                    f.truncate(size, &mut store.fetch()).unwrap();
                    model.resize(size as usize, 0);
                }
                7 => store.stage(&mut f),
                _ => {
                    store.sync(&mut f);
                    assert_eq!(read_all(&store.load(block), &mut store), model, "loaded again after step {step}");
                }
            }
            if step % 50 == 0 {
                assert_eq!(read_all(&f, &mut store), model, "after step {step}");
            }
        }
    }
}
