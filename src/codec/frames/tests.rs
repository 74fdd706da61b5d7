use super::*;

/// Small blocks, so a few frames make several groups: 4 frames a group.
const B: u64 = 128;

fn small() -> Frames {
    Frames::new(B, B).expect("a page of a block's size")
}

/// Where each byte of a WAL of `size` bytes is stored, byte by byte.
fn places(f: &Frames, size: u64) -> Vec<u64> {
    (0..size).map(|pos| f.place(pos).0).collect()
}

fn wal_size(frames: u64) -> u64 {
    WAL_HEADER + frames * (FRAME_HEADER + B)
}

#[test]
fn only_pages_of_a_blocks_size_are_laid_out_in_groups() {
    assert_eq!(Frames::new(8192, 8192).map(|f| f.group()), Some(340));
    assert_eq!(small().group(), 4);
    assert_eq!(Frames::new(4096, 8192), None);
    let mut header = [0u8; 32];
    header[8..12].copy_from_slice(&8192u32.to_be_bytes());
    assert_eq!(Frames::page_size(&header), Some(8192));
    header[8..12].copy_from_slice(&1u32.to_be_bytes());
    assert_eq!(Frames::page_size(&header), Some(65536));
    assert_eq!(Frames::page_size(&header[..11]), None);
}

#[test]
fn each_byte_has_its_own_place_and_each_page_is_a_whole_block() {
    let f = small();
    let size = wal_size(11);
    let at = places(&f, size);
    let mut seen = std::collections::HashSet::new();
    for p in &at {
        assert!(seen.insert(*p), "two bytes stored at {p}");
    }
    for k in 0..11 {
        let page = WAL_HEADER + k * (FRAME_HEADER + B) + FRAME_HEADER;
        let first = at[page as usize];
        assert_eq!(first % B, 0, "frame {k}'s page starts a block");
        for j in 0..B {
            assert_eq!(at[(page + j) as usize], first + j);
        }
        assert!(!(first / B).is_multiple_of(f.group() + 1), "a page is not in a header block");
    }
}

#[test]
fn a_range_is_a_run_a_group_and_its_parts_cover_it_once() {
    let f = small();
    let size = wal_size(11);
    for (at, len) in [(0, size), (5, 300), (WAL_HEADER + 10, 700), (WAL_HEADER + 152 * 4 - 3, 9)] {
        let runs = f.runs(at, len);
        let mut covered = vec![false; len as usize];
        for r in &runs {
            let mut stored = r.stored;
            for &(from, n) in &r.parts {
                for j in 0..n {
                    assert_eq!(f.place(at + from + j).0, stored + j);
                    assert!(!std::mem::replace(&mut covered[(from + j) as usize], true));
                }
                stored += n;
            }
            assert_eq!(stored, r.stored + r.len);
        }
        assert!(covered.iter().all(|c| *c), "every byte of [{at}, +{len}) is in a run");
        assert!(runs.windows(2).all(|w| w[0].stored + w[0].len < w[1].stored), "runs are apart, in order");
    }
    // The whole WAL of 11 frames: groups of 4, 4 and 3, a run each but
    // the last, whose headers end before its header block does.
    assert_eq!(f.runs(0, size).len(), 4);
    // A header rewritten: one piece of one run.
    let h = WAL_HEADER + 6 * (FRAME_HEADER + B);
    assert_eq!(
        f.runs(h, FRAME_HEADER),
        vec![Run { stored: (f.group() + 1) * B + WAL_HEADER + 2 * FRAME_HEADER, len: 24, parts: vec![(0, 24)] }]
    );
}

#[test]
fn the_stored_size_is_past_every_stored_byte() {
    let f = small();
    for size in 0..wal_size(10) {
        let want = places(&f, size).iter().map(|p| p + 1).max().unwrap_or(0);
        assert_eq!(f.stored_size(size), want, "a WAL of {size} bytes");
    }
    let real = Frames::new(8192, 8192).unwrap();
    let size = WAL_HEADER + 1000 * (FRAME_HEADER + 8192);
    assert_eq!(real.stored_size(size), places(&real, size).iter().map(|p| p + 1).max().unwrap());
}

#[test]
fn a_cut_leaves_no_byte_past_it_in_the_stored_file() {
    let f = small();
    let full = wal_size(10);
    let at = places(&f, full);
    for size in 0..full {
        let stored = f.stored_size(size);
        let mut past: Vec<u64> = at[size as usize..].iter().copied().filter(|&p| p < stored).collect();
        if let Some((from, to)) = f.cut_headers(size) {
            assert!(to <= stored);
            past.retain(|&p| p < from || p >= to);
        }
        assert!(past.is_empty(), "a cut at {size} leaves bytes past it stored at {past:?}");
        // Nothing before the cut is zeroed.
        if let Some((from, to)) = f.cut_headers(size) {
            assert!(
                at[..size as usize].iter().all(|&p| p < from || p >= to),
                "a cut at {size} zeroes a byte before it"
            );
        }
    }
}

/// Segments as a sync stores them, for a `FramedFile` over blocks.
#[derive(Default)]
struct Stored {
    segs: std::collections::HashMap<u32, Vec<u8>>,
    chunks: std::collections::BTreeMap<u64, Vec<u32>>,
    size: u64,
    frames: Option<u64>,
    next: u32,
}

impl Stored {
    fn fetch(&self) -> impl FnMut(u32, u64, &mut [u8]) -> crate::codec::Result<()> + '_ {
        |seg, at, buf| {
            buf.copy_from_slice(&self.segs[&seg][at as usize..at as usize + buf.len()]);
            Ok(())
        }
    }

    fn sync(&mut self, f: &mut FramedFile) {
        self.next += 1;
        let s = f.blocks.take_sync(self.next);
        if !s.packed.is_empty() {
            self.segs.insert(s.seg, s.packed);
        }
        for (n, words) in s.chunks {
            self.chunks.insert(n, words);
        }
        self.chunks.retain(|&n, _| n < s.chunk_count);
        (self.size, self.frames) = (s.size, f.frames());
    }

    fn load(&self, block: usize) -> FramedFile {
        let chunks: Vec<(u64, Vec<u32>)> = self.chunks.iter().map(|(n, w)| (*n, w.clone())).collect();
        FramedFile::new(crate::codec::blocks::BlockFile::load(block, self.size, &chunks), self.frames)
    }
}

fn read_all(f: &FramedFile, store: &Stored) -> Vec<u8> {
    let mut out = vec![0u8; f.size() as usize];
    f.read(0, &mut out, &mut store.fetch()).unwrap();
    out
}

/// A WAL's life in random writes (frames, headers rewritten, a header
/// written again after a cut), cuts (to zero too), syncs and reloads,
/// against a plain buffer: the file, and the file loaded again after each
/// sync, always read as the buffer; and laid out in frame groups from its
/// first header on.
#[test]
fn a_wal_in_frame_groups_reads_as_a_plain_file() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rand = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let frame = FRAME_HEADER + B;
    let mut header = vec![0u8; WAL_HEADER as usize];
    header[8..12].copy_from_slice(&(B as u32).to_be_bytes());
    header[0] = 0x37;
    let mut store = Stored::default();
    let mut f = FramedFile::new(crate::codec::blocks::BlockFile::load(B as usize, 0, &[]), None);
    f.opened_as_wal();
    let mut model: Vec<u8> = Vec::new();
    let mut laid = 0;
    for step in 0..4000u32 {
        let (at, bytes): (u64, Vec<u8>) = match rand(12) {
            _ if model.is_empty() => (0, header.clone()),
            0..=3 => {
                // Frames appended or written over: a header, a page, or both.
                let k = rand(model.len() as u64 / frame + 2);
                let at = WAL_HEADER + k * frame + [0, FRAME_HEADER][rand(2) as usize];
                let len = [FRAME_HEADER, B, frame, 3 * frame][rand(4) as usize];
                (at, (0..len).map(|i| (step as u64 + i) as u8 | 1).collect())
            }
            4..=5 => {
                let at = rand(model.len() as u64 + 300);
                (at, (0..1 + rand(400)).map(|i| (step as u64 * 7 + i) as u8).collect())
            }
            6 => {
                let size = [0, rand(model.len() as u64 + 1)][rand(2) as usize];
                f.truncate(size, &mut store.fetch()).unwrap();
                model.truncate(size as usize);
                continue;
            }
            7 => {
                store.sync(&mut f);
                assert_eq!(read_all(&store.load(B as usize), &store), model, "loaded again after step {step}");
                continue;
            }
            8 => {
                // A short read anywhere: a header, a page, or a piece of one.
                let at = rand(model.len() as u64 + 50);
                let mut out = vec![0u8; [FRAME_HEADER, B, 1 + rand(300)][rand(3) as usize] as usize];
                f.read(at, &mut out, &mut store.fetch()).unwrap();
                let want: Vec<u8> = (0..out.len()).map(|i| model.get(at as usize + i).copied().unwrap_or(0)).collect();
                assert_eq!(out, want, "{} bytes at {at} after step {step}", out.len());
                continue;
            }
            _ => {
                assert_eq!(read_all(&f, &store), model, "after step {step}");
                continue;
            }
        };
        f.write(at, &bytes, &mut store.fetch()).unwrap();
        let end = at as usize + bytes.len();
        if model.len() < end {
            model.resize(end, 0);
        }
        model[at as usize..end].copy_from_slice(&bytes);
        laid += usize::from(f.frames().is_some());
    }
    assert!(laid > 2000, "laid out in frame groups for {laid} writes of about 2,700");
}
