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
        let bytes = f.stage(self.next, 1 << 20);
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

/// A WAL's commits: each appends frames from where the last one ended, in
/// the middle of a block that the last sync packed.
#[test]
fn an_append_after_a_sync_reads_nothing_back() {
    let mut store = Store::default();
    let mut f = BlockFile::load(4096, 0, &[]);
    let mut model = Vec::new();
    for commit in 0..20u32 {
        let frame: Vec<u8> = (0..4120u32).map(|i| (i + commit * 31) as u8).collect();
        let at = model.len() as u64;
        f.write(at, &frame, &mut store.fetch()).unwrap();
        model.extend_from_slice(&frame);
        store.sync(&mut f);
    }
    assert_eq!(store.fetches, 0, "no block written in part was read back");
    assert_eq!(read_all(&f, &mut store), model);
    assert_eq!(read_all(&store.load(4096), &mut store), model);
    // A cut inside the kept block, then growth: zeros past the cut, as
    // stored and as held.
    f.truncate(model.len() as u64 - 100, &mut store.fetch()).unwrap();
    f.write(model.len() as u64 + 50, &[7], &mut store.fetch()).unwrap();
    model.truncate(model.len() - 100);
    model.resize(model.len() + 150, 0);
    model.push(7);
    store.sync(&mut f);
    assert_eq!(read_all(&f, &mut store), model);
    assert_eq!(read_all(&store.load(4096), &mut store), model);
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

/// A WAL's frames of a value's placeholder, as SQLite writes them: a
/// 24-byte header, then a page of zeros but for its first 4 bytes.
fn placeholder_frames(f: &mut BlockFile, store: &mut Store, frames: u64, page: usize) {
    for k in 0..frames {
        let at = 32 + k * (24 + page as u64);
        f.write(at, &[7u8; 24], &mut store.fetch()).unwrap();
        let mut p = vec![0u8; page];
        p[..4].copy_from_slice(&(k as u32 + 2).to_be_bytes());
        f.write(at + 24, &p, &mut store.fetch()).unwrap();
    }
}

#[test]
fn pages_of_zeros_but_a_few_bytes_stay_small_and_are_not_staged() {
    let (page, frames) = (8192, 2000);
    let mut store = Store::default();
    let mut f = BlockFile::load(8192, 0, &[]);
    placeholder_frames(&mut f, &mut store, frames, page);
    let size = f.size() as usize;
    assert!(f.held_bytes() < size / 50, "{} bytes held for {size}", f.held_bytes());
    assert!(!f.spill_due(1 << 20));
    store.stage(&mut f);
    assert!(store.segs.is_empty(), "a sparse block was staged");
    // Read back (as SQLite reads each page before it writes the value
    // into it) from memory, and written over with the value.
    let mut want = vec![0u8; size];
    for k in 0..frames {
        let at = 32 + k as usize * (24 + page);
        let mut p = vec![0u8; page];
        f.read(at as u64 + 24, &mut p, &mut store.fetch()).unwrap();
        assert_eq!(p[..4], (k as u32 + 2).to_be_bytes());
        assert!(p[4..].iter().all(|&x| x == 0));
        let value: Vec<u8> = (0..page).map(|i| (i * 31 + k as usize) as u8 | 1).collect();
        f.write(at as u64 + 24, &value, &mut store.fetch()).unwrap();
        want[at..at + 24].fill(7);
        want[at + 24..at + 24 + page].copy_from_slice(&value);
        if f.spill_due(1 << 20) {
            store.stage(&mut f);
        }
    }
    // Only the block a segment ends with is read back, by the page
    // that goes on in the next block: twice (SQLite's read and its write).
    assert!(store.segs.len() >= 10);
    assert!(store.fetches <= 2 * store.segs.len(), "{} fetches", store.fetches);
    store.sync(&mut f);
    assert_eq!(read_all(&f, &mut store), want);
    assert_eq!(read_all(&store.load(8192), &mut store), want);
}

#[test]
fn sparse_blocks_past_their_bound_are_staged_a_segment_at_a_time() {
    let mut store = Store::default();
    let mut f = BlockFile::load(4096, 0, &[]);
    let mut k = 0u64;
    while !f.spill_due(1 << 20) {
        f.write(k * 4096 + 100, &[9, 9, 9, 9], &mut store.fetch()).unwrap();
        k += 1;
    }
    let before = f.held_bytes();
    store.stage(&mut f);
    assert_eq!(store.segs[&store.next].len(), 1 << 20, "one segment of the bound's bytes");
    assert!(f.held_bytes() < before && !f.spill_due(1 << 20));
    let s = store.sync(&mut f);
    assert_eq!(f.held_bytes(), 0);
    assert!(s.segments.len() == 2 && s.packed.len() == (k as usize - 256) * 4096);
    let mut want = vec![0u8; f.size() as usize];
    for i in 0..k as usize {
        want[i * 4096 + 100..i * 4096 + 104].fill(9);
    }
    assert_eq!(read_all(&store.load(4096), &mut store), want);
}

#[test]
fn a_sync_of_many_sparse_blocks_packs_them_a_bound_at_a_time() {
    // 16 MiB of blocks that are zeros but for four bytes each, and a few
    // dense ones among them: all held until the sync.
    let mut store = Store::default();
    let mut f = BlockFile::load(4096, 0, &[]);
    let mut want = vec![0u8; 4096 * 4096];
    for k in 0..4096usize {
        let bytes: Vec<u8> =
            if k % 1000 == 7 { (0..4096).map(|i| (i * 7 + k) as u8 | 1).collect() } else { vec![k as u8 | 1; 4] };
        let at = k * 4096 + if bytes.len() == 4 { 100 } else { 0 };
        f.write(at as u64, &bytes, &mut store.fetch()).unwrap();
        want[at..at + bytes.len()].copy_from_slice(&bytes);
    }
    assert!(!f.spill_due(1 << 20), "nothing is staged before the sync");
    assert_eq!(f.packed_bytes(), 16 << 20);
    let mut parts = 0;
    while f.packed_bytes() > 1 << 20 {
        store.next += 1;
        let packed = f.stage_for_sync(store.next, 1 << 20);
        assert_eq!(packed.len(), 1 << 20, "one bound's bytes a part");
        store.segs.insert(store.next, packed);
        parts += 1;
    }
    let s = store.sync(&mut f);
    assert_eq!(parts, 15);
    assert_eq!((s.segments.len(), s.packed.len()), (16, 1 << 20));
    assert_eq!(f.held_bytes(), 0);
    let first_wrong = |got: Vec<u8>| got.iter().zip(&want).position(|(a, b)| a != b);
    assert_eq!(first_wrong(read_all(&f, &mut store)), None);
    let loaded = store.load(4096);
    assert_eq!(first_wrong(read_all(&loaded, &mut store)), None);
    // Each part holds the blocks in order: a read of the file follows the
    // segments one after another, a call each.
    store.fetches = 0;
    read_all(&loaded, &mut store);
    assert_eq!(store.fetches, 16);
}

#[test]
fn zeros_written_over_a_sparse_block_clear_it() {
    let mut store = Store::default();
    let mut f = BlockFile::load(4096, 0, &[]);
    f.write(0, &[1, 2, 3, 0, 0, 4], &mut store.fetch()).unwrap();
    f.write(2000, &[5; 10], &mut store.fetch()).unwrap();
    f.write(1, &[0; 2004], &mut store.fetch()).unwrap();
    let mut want = vec![0u8; 2010];
    want[0] = 1;
    want[2005..2010].fill(5);
    assert_eq!(read_all(&f, &mut store), want);
    assert!(f.held_bytes() < 100);
    store.sync(&mut f);
    assert_eq!(read_all(&store.load(4096), &mut store), want);
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
                // Dense bytes, zeros but for a few, or zeros.
                let kind = rand(3);
                let bytes: Vec<u8> = (0..len)
                    .map(|i| match kind {
                        0 => (step as usize + i) as u8,
                        1 if i % 97 == 3 => 1 + (i % 200) as u8,
                        _ => 0,
                    })
                    .collect();
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
