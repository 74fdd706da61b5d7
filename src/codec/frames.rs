//! A WAL laid out in frame groups, for storage in blocks (issue 30;
//! experiments 040 and 042).
//!
//! A WAL is a 32-byte header, then frames: a 24-byte frame header and a
//! page each. Stored as it is in blocks of a page's size, every block
//! holds the end of one page and the start of the next with a header
//! between, so each header SQLite rewrites at a commit (it rewrites every
//! frame's header of a transaction that wrote a page twice,
//! `walRewriteChecksums`) made a whole block new, and a large value's WAL
//! was stored twice over. Here the frames are laid out in groups of
//! [`Frames::group`]: one block of their headers (the WAL's header first,
//! in the first group; 32 bytes unused in the others), then one block for
//! each page. A page is a block, and a header rewrite changes a header
//! block only.
//!
//! Only for pages of a block's size; a WAL of other pages is stored as it
//! is. A range of the WAL maps to pieces, each contiguous in both; the
//! pieces that follow each other where they are stored are gathered into
//! runs ([`Frames::runs`]), so a long read or write stays long: one run of
//! headers and one of pages per group.

mod file;

pub use file::FramedFile;

/// Bytes of the WAL's own header.
pub const WAL_HEADER: u64 = 32;
/// Bytes of a frame's header.
pub const FRAME_HEADER: u64 = 24;

/// The layout of a WAL of pages of a block's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frames {
    block: u64,
    group: u64,
}

/// Stored bytes that follow each other, and the parts of a WAL range they
/// hold: `(offset in the range, bytes)`, in the order they are stored.
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    pub stored: u64,
    pub len: u64,
    pub parts: Vec<(u64, u64)>,
}

impl Frames {
    /// The layout for a WAL whose header says its pages are `page` bytes,
    /// stored in blocks of `block`: `None` unless a page is a block.
    pub fn new(page: u64, block: u64) -> Option<Frames> {
        (page == block && block >= WAL_HEADER + FRAME_HEADER)
            .then(|| Frames { block, group: (block - WAL_HEADER) / FRAME_HEADER })
    }

    /// The page size a WAL's first bytes declare (its header's bytes 8–11,
    /// big-endian; 1 is 65,536), if they reach that far.
    pub fn page_size(header: &[u8]) -> Option<u64> {
        let n = u32::from_be_bytes(header.get(8..12)?.try_into().ok()?);
        Some(if n == 1 { 65536 } else { u64::from(n) })
    }

    /// Frames a group holds.
    pub fn group(&self) -> u64 {
        self.group
    }

    fn frame(&self) -> u64 {
        FRAME_HEADER + self.block
    }

    /// Where byte `pos` of the WAL is stored, and how many bytes from it
    /// are stored after it there (to its header's or its page's end).
    fn place(&self, pos: u64) -> (u64, u64) {
        if pos < WAL_HEADER {
            return (pos, WAL_HEADER - pos);
        }
        let (k, w) = ((pos - WAL_HEADER) / self.frame(), (pos - WAL_HEADER) % self.frame());
        let (g, i) = (k / self.group, k % self.group);
        let base = g * (self.group + 1) * self.block;
        if w < FRAME_HEADER {
            (base + WAL_HEADER + i * FRAME_HEADER + w, FRAME_HEADER - w)
        } else {
            (base + self.block * (1 + i) + (w - FRAME_HEADER), self.frame() - w)
        }
    }

    /// The pieces of WAL bytes `[at, at + len)`, in the WAL's order:
    /// `(offset in the range, stored offset, bytes)`.
    fn pieces(&self, at: u64, len: u64) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let end = at + len;
        let mut pos = at;
        std::iter::from_fn(move || {
            (pos < end).then(|| {
                let (stored, room) = self.place(pos);
                let n = room.min(end - pos);
                let piece = (pos - at, stored, n);
                pos += n;
                piece
            })
        })
    }

    /// WAL bytes `[at, at + len)` as runs of stored bytes, in stored order.
    pub fn runs(&self, at: u64, len: u64) -> Vec<Run> {
        // In a group, the headers are stored before the pages: the pages'
        // pieces wait until the group's headers are in.
        let mut runs: Vec<Run> = Vec::new();
        let mut pages: Vec<(u64, u64, u64)> = Vec::new();
        let mut group = 0;
        for piece in self.pieces(at, len) {
            let g = piece.1 / ((self.group + 1) * self.block);
            if g != group {
                pages.drain(..).for_each(|p| join(&mut runs, p));
                group = g;
            }
            if piece.1 % ((self.group + 1) * self.block) < self.block {
                join(&mut runs, piece);
            } else {
                pages.push(piece);
            }
        }
        pages.into_iter().for_each(|p| join(&mut runs, p));
        runs
    }

    /// The stored file's size for a WAL of `size` bytes: past the last
    /// stored byte of any of them.
    pub fn stored_size(&self, size: u64) -> u64 {
        if size == 0 {
            return 0;
        }
        let (last, _) = self.place(size - 1);
        if size - 1 < WAL_HEADER {
            return last + 1;
        }
        let (k, w) = ((size - 1 - WAL_HEADER) / self.frame(), (size - 1 - WAL_HEADER) % self.frame());
        let i = k % self.group;
        if w < FRAME_HEADER && i > 0 {
            // A header's byte: the group's pages before it end further on.
            let base = (k / self.group) * (self.group + 1) * self.block;
            return base + self.block * (1 + i);
        }
        last + 1
    }

    /// Stored bytes that a cut of the WAL to `size` bytes leaves within
    /// the stored file but outside the WAL: the header slots of its last
    /// group past the cut, `[from, to)`, to be zeroed so that they read as
    /// a plain file's would if it grows again. `None` when there are none.
    pub fn cut_headers(&self, size: u64) -> Option<(u64, u64)> {
        let stored = self.stored_size(size);
        if size <= WAL_HEADER {
            return None;
        }
        let (k, w) = ((size - WAL_HEADER) / self.frame(), (size - WAL_HEADER) % self.frame());
        let (g, i) = (k / self.group, k % self.group);
        let base = g * (self.group + 1) * self.block;
        let from = base + WAL_HEADER + i * FRAME_HEADER + w.min(FRAME_HEADER);
        let to = (base + self.block).min(stored);
        (from < to).then_some((from, to))
    }
}

/// Adds a piece `(offset in the range, stored offset, bytes)` to the
/// runs, to the last one if it follows it where they are stored.
fn join(runs: &mut Vec<Run>, (from, stored, n): (u64, u64, u64)) {
    match runs.last_mut() {
        Some(r) if r.stored + r.len == stored => {
            r.len += n;
            r.parts.push((from, n));
        }
        _ => runs.push(Run { stored, len: n, parts: vec![(from, n)] }),
    }
}

#[cfg(test)]
mod tests;
