//! Writes held back for one file, to be written as one (`worker::gather`).
//!
//! A write that continues the held ones, or lands inside them, is held
//! too, up to [`LIMIT`] bytes. So is one a short gap past them: SQLite
//! rewriting WAL frames it spilled writes their pages without their
//! 24-byte headers, and at the commit their headers without their pages
//! (`walRewriteChecksums`), each a write of its own. The gap's bytes are
//! the file's: copied from the bytes read ahead when those hold them,
//! else left as a hole that [`Writes::fill`] reads from the file, in one
//! read, before the held bytes are written. One write and at most one
//! read per mebibyte, where it was a write per frame (a 256 MB `File`
//! INSERT made 33,293 OPFS writes, 9.1 s of calls in Firefox).

use super::ahead::ReadAhead;

/// The most one file holds back: 1 MiB, 128 pages of 8 KB, a few calls
/// per 8 MB value, and little wasm memory per open file.
pub const LIMIT: usize = 1 << 20;

/// The widest gap held between two writes: a frame of the largest pages.
const GAP: u64 = (64 << 10) + 24;

/// The writes held back for one file.
#[derive(Default)]
pub struct Writes {
    bytes: Vec<u8>,
    /// The file offset of `bytes[0]`.
    at: u64,
    /// Ranges of `bytes` (file offsets) that hold nothing yet: the file's
    /// own bytes go there before the write.
    holes: Vec<(u64, u64)>,
    /// The file's size, once a gap asked for it (it does not shrink while
    /// writes are held: a truncate writes them first).
    size: Option<u64>,
}

impl Writes {
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The file offset of the first byte held.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// The file offset past the last byte held.
    pub fn end(&self) -> u64 {
        self.at + self.bytes.len() as u64
    }

    /// Holds `bytes`, to be written at `off`, with what is held (nothing
    /// held: starts there). False: they cannot join what is held, which
    /// is to be written first. `ahead`: the bytes read ahead, for a gap;
    /// `size`: the file's size, asked at most once per buffer, for a gap
    /// not in them.
    pub fn hold(&mut self, off: u64, bytes: &[u8], ahead: &ReadAhead, size: impl FnOnce() -> u64) -> bool {
        let len = bytes.len() as u64;
        if self.bytes.is_empty() {
            if bytes.len() > LIMIT {
                return false;
            }
            if self.bytes.capacity() == 0 {
                self.bytes.reserve_exact(LIMIT);
            }
            self.bytes.extend_from_slice(bytes);
            self.at = off;
            return true;
        }
        let end = self.end();
        if off >= self.at && off + len <= end {
            let from = (off - self.at) as usize;
            self.bytes[from..from + bytes.len()].copy_from_slice(bytes);
            self.known(off, off + len);
            return true;
        }
        let Some(gap) = off.checked_sub(end).filter(|&g| g <= GAP) else { return false };
        if self.bytes.len() + (gap + len) as usize > LIMIT {
            return false;
        }
        if gap > 0 {
            match ahead.bytes(end, off) {
                Some(between) => self.bytes.extend_from_slice(between),
                None if off <= *self.size.get_or_insert_with(size) => {
                    self.holes.push((end, off));
                    self.bytes.resize(self.bytes.len() + gap as usize, 0);
                }
                None => return false,
            }
        }
        self.bytes.extend_from_slice(bytes);
        true
    }

    /// Fills the holes with the file's bytes, read with `read` (offset,
    /// buffer) in one call; then [`Self::bytes`] is what to write.
    pub fn fill<E>(&mut self, read: impl FnOnce(u64, &mut [u8]) -> Result<(), E>) -> Result<(), E> {
        let (Some(&(from, _)), Some(&(_, to))) = (self.holes.first(), self.holes.last()) else { return Ok(()) };
        let mut file = vec![0u8; (to - from) as usize];
        read(from, &mut file)?;
        for (a, b) in self.holes.drain(..) {
            let into = (a - self.at) as usize..(b - self.at) as usize;
            self.bytes[into].copy_from_slice(&file[(a - from) as usize..(b - from) as usize]);
        }
        Ok(())
    }

    /// The bytes to write at [`Self::at`], once [`Self::fill`] has run.
    pub fn bytes(&self) -> &[u8] {
        debug_assert!(self.holes.is_empty(), "holes not filled");
        &self.bytes
    }

    /// Forgets what is held (written, or the file is gone).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.holes.clear();
        self.size = None;
    }

    /// `[from, to)` was written: no hole there any more. Holes are in
    /// order and do not overlap.
    fn known(&mut self, from: u64, to: u64) {
        if self.holes.is_empty() {
            return;
        }
        self.holes =
            self.holes.iter().flat_map(|&(a, b)| [(a, b.min(from)), (a.max(to), b)]).filter(|&(a, b)| a < b).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `n` bytes, each its offset's low byte plus one (so no
    /// byte of it is a zero a hole could hide behind).
    fn file_byte(off: u64) -> u8 {
        (off as u8).wrapping_add(1)
    }

    fn read_file(n: u64, reads: &mut usize) -> impl FnMut(u64, &mut [u8]) -> Result<(), ()> + '_ {
        move |off, buf| {
            assert!(off + buf.len() as u64 <= n, "read past the end");
            *reads += 1;
            buf.iter_mut().enumerate().for_each(|(i, b)| *b = file_byte(off + i as u64));
            Ok(())
        }
    }

    /// SQLite's rewrite of spilled WAL frames: pages 24 bytes apart, then
    /// headers a page apart, none read ahead. Each mebibyte is one write
    /// and one read, and every byte written is the write's or the file's.
    #[test]
    fn frames_written_over_are_one_write_and_one_read_a_mebibyte() {
        let (page, frame, frames) = (8192u64, 8216u64, 1000u64);
        let size = 32 + frames * frame;
        let ahead = ReadAhead::default();
        // (where a write begins in its frame, its length)
        for (skip, len) in [(24, page), (0, 24)] {
            let mut held = Writes::default();
            let (mut writes, mut reads) = (0, 0);
            let mut file: Vec<u8> = (0..size).map(file_byte).collect();
            let mut write_out = |held: &mut Writes, reads: &mut usize| {
                held.fill(read_file(size, reads)).unwrap();
                let at = held.at() as usize;
                file[at..at + held.bytes().len()].copy_from_slice(held.bytes());
                held.clear();
            };
            let mark = |i: u64| 0xa0 + (i % 16) as u8;
            for i in 0..frames {
                let (off, bytes) = (32 + i * frame + skip, vec![mark(i); len as usize]);
                if !held.hold(off, &bytes, &ahead, || size) {
                    write_out(&mut held, &mut reads);
                    writes += 1;
                    assert!(held.hold(off, &bytes, &ahead, || size));
                }
            }
            write_out(&mut held, &mut reads);
            writes += 1;
            assert!(writes <= 9 && reads <= writes, "{writes} writes, {reads} reads");
            for (o, &b) in file.iter().enumerate() {
                let o = o as u64;
                let i = o.saturating_sub(32) / frame;
                let inside = o >= 32 && (o - 32) % frame >= skip && (o - 32) % frame < skip + len;
                assert_eq!(b, if inside { mark(i) } else { file_byte(o) }, "byte {o}");
            }
        }
    }

    #[test]
    fn appends_are_held_and_a_gap_past_the_file_or_too_wide_is_not() {
        let ahead = ReadAhead::default();
        let mut held = Writes::default();
        assert!(held.hold(0, &[1; 50], &ahead, || 0));
        assert!(held.hold(50, &[1; 50], &ahead, || 0), "writes that continue the file past its known size");
        assert!(!held.hold(200, &[1; 50], &ahead, || 0), "a gap past the file's known size");
        let mut held = Writes::default();
        assert!(held.hold(0, &[1; 100], &ahead, || 120));
        assert!(!held.hold(124, &[2; 10], &ahead, || 120), "the gap's end is past the file");
        assert!(!held.hold(100 + GAP + 1, &[2; 10], &ahead, || 1 << 30), "too wide");
        let mut held = Writes::default();
        assert!(held.hold(0, &[1; 100], &ahead, || 124));
        assert!(held.hold(124, &[2; 10], &ahead, || 124));
        assert_eq!(held.end(), 134);
    }

    #[test]
    fn the_file_size_is_asked_once_a_buffer() {
        let ahead = ReadAhead::default();
        let asked = std::cell::Cell::new(0);
        let size = || {
            asked.set(asked.get() + 1);
            1000
        };
        let mut held = Writes::default();
        assert!(held.hold(0, &[1; 10], &ahead, size));
        assert!(held.hold(20, &[2; 10], &ahead, size));
        assert!(held.hold(40, &[3; 10], &ahead, size));
        assert_eq!(asked.get(), 1);
        held.fill(|_, _: &mut [u8]| Ok::<_, ()>(())).unwrap();
        held.clear();
        assert!(held.hold(0, &[1; 10], &ahead, size));
        assert!(held.hold(20, &[2; 10], &ahead, size));
        assert_eq!(asked.get(), 2, "asked again for the next buffer");
    }

    #[test]
    fn a_write_over_a_hole_fills_it() {
        let ahead = ReadAhead::default();
        let mut held = Writes::default();
        assert!(held.hold(0, &[1; 10], &ahead, || 1000));
        assert!(held.hold(20, &[2; 10], &ahead, || 1000)); // hole 10..20
        assert!(held.hold(40, &[3; 10], &ahead, || 1000)); // hole 30..40
        assert!(held.hold(8, &[4; 4], &ahead, || 1000)); // 10..12 now known
        assert!(held.hold(30, &[5; 10], &ahead, || 1000)); // 30..40 known
        let mut reads = 0;
        let mut asked = Vec::new();
        held.fill(|off, buf: &mut [u8]| {
            reads += 1;
            asked.push((off, buf.len()));
            buf.iter_mut().enumerate().for_each(|(i, b)| *b = file_byte(off + i as u64));
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!((reads, asked), (1, vec![(12, 8)]));
        let mut want = vec![1u8; 8];
        want.extend([4; 4]);
        want.extend((12..20).map(file_byte));
        want.extend([2; 10]);
        want.extend([5; 10]);
        want.extend([3; 10]);
        assert_eq!(held.bytes(), &want[..]);
    }
}
