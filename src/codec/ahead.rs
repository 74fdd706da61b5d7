//! Reading ahead, for the VFSs whose every read is a costly call: the pool's
//! files under `gather` and the imported file under `source`. SQLite reads a
//! value or a copied database one page at a time; a read that starts where
//! the last one ended (or a WAL frame's header past it) reads ahead, 64 KB
//! the first time and twice as much each time after, up to 1 MiB, and the
//! reads after it are copied from there. A read that ends where the last
//! one began reads behind, the same way: a value stored in the pages a
//! deleted one freed has its pages in descending order, one read each
//! without it (benches/experiments/026-write-and-read-calls.md). A read
//! elsewhere ends it, so scattered B-tree reads read nothing extra
//! (benches/experiments/012-media-reads.md, 015-import-export.md).

/// The first read ahead, in bytes; each one after is twice the last.
const FIRST: usize = 64 << 10;
/// The most one read ahead reads.
pub const MOST: usize = 1 << 20;
/// A read this many bytes past the end of the last one still continues
/// it: SQLite reads a WAL frame's page without its 24-byte header, so the
/// pages of a value written in order are read 24 bytes apart.
const GAP: u64 = 64;

/// How many reads in order one file's read-ahead follows at once. SQLite's
/// checkpoint, run a few pages at a time between calls (`backfill.rs`),
/// reads the WAL in order while a reader reads a value out of it in order
/// too: with one, each would end the other's and start again from [`FIRST`].
const STREAMS: usize = 2;

/// One file's bytes read ahead, for each of the reads in order it follows.
#[derive(Default)]
pub struct ReadAhead {
    streams: [Stream; STREAMS],
    /// Reads so far; a stream's `used` is the last of them that was its.
    reads: u64,
}

/// One read in order and the bytes read ahead of it.
#[derive(Default)]
struct Stream {
    /// The file's bytes from `at` on, as they were read.
    bytes: Vec<u8>,
    at: u64,
    /// Where the last read began and ended (`None` before the first): a
    /// read from its end continues it, and so does one up to its start.
    last: Option<(u64, u64)>,
    /// How much the next read ahead reads (0: none since the last jump).
    window: usize,
    /// Whether the reads go down the file.
    behind: bool,
    used: u64,
}

impl ReadAhead {
    /// Fills `out` with the file's bytes at `off`: from the bytes a stream
    /// read ahead if they hold them; else, when this read continues a
    /// stream's last one (up or down the file) and `available(from)` (the
    /// bytes the file has from `from` on that may be read ahead) covers the
    /// window, by reading it with `read`; else with `read` into `out` alone,
    /// the stream used least lately following on from there.
    pub fn read<E>(
        &mut self,
        out: &mut [u8],
        off: u64,
        available: impl FnOnce(u64) -> u64,
        read: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let end = off + out.len() as u64;
        let streams = &mut self.streams;
        let i = (0..STREAMS)
            .find(|&i| streams[i].holds(off, end))
            .or_else(|| (0..STREAMS).find(|&i| streams[i].continued_by(off, end) != (false, false)))
            .unwrap_or_else(|| (0..STREAMS).min_by_key(|&i| streams[i].used).unwrap_or(0));
        self.reads += 1;
        streams[i].used = self.reads;
        streams[i].read(out, off, available, read)
    }

    /// `bytes` are written to the file at `at`: what was read ahead there
    /// takes them too, so a read after a write of the same pages (SQLite
    /// rewriting a WAL frame it spilled) is still served from memory.
    pub fn written(&mut self, at: u64, bytes: &[u8]) {
        for s in &mut self.streams {
            let end = s.at + s.bytes.len() as u64;
            let (from, to) = (at.max(s.at), (at + bytes.len() as u64).min(end));
            if from < to {
                s.bytes[(from - s.at) as usize..(to - s.at) as usize]
                    .copy_from_slice(&bytes[(from - at) as usize..(to - at) as usize]);
            }
        }
    }

    /// The file's bytes in `[from, to)`, if they were read ahead.
    pub fn bytes(&self, from: u64, to: u64) -> Option<&[u8]> {
        let s = self.streams.iter().find(|s| from <= to && s.holds(from, to))?;
        Some(&s.bytes[(from - s.at) as usize..(to - s.at) as usize])
    }

    /// Forgets every byte read ahead (the file was truncated).
    pub fn clear(&mut self) {
        for s in &mut self.streams {
            s.bytes.clear();
        }
    }
}

impl Stream {
    fn holds(&self, from: u64, to: u64) -> bool {
        !self.bytes.is_empty() && from >= self.at && to <= self.at + self.bytes.len() as u64
    }

    /// Whether a read of `[off, end)` continues the last one up the file,
    /// and whether down.
    fn continued_by(&self, off: u64, end: u64) -> (bool, bool) {
        match self.last {
            Some((start, last_end)) => (off >= last_end && off - last_end <= GAP, end <= start && start - end <= GAP),
            None => (false, false),
        }
    }

    fn read<E>(
        &mut self,
        out: &mut [u8],
        off: u64,
        available: impl FnOnce(u64) -> u64,
        mut read: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let end = off + out.len() as u64;
        let (up, down) = self.continued_by(off, end);
        self.last = Some((off, end));
        if self.holds(off, end) {
            let from = (off - self.at) as usize;
            out.copy_from_slice(&self.bytes[from..from + out.len()]);
            return Ok(());
        }
        if !(up || down) || out.len() >= MOST {
            self.window = 0;
            return read(off, out);
        }
        if down != self.behind {
            self.window = 0;
            self.behind = down;
        }
        self.window = (self.window * 2).clamp(FIRST, MOST);
        let want = self.window.max(out.len()) as u64;
        let (from, n) = if down {
            let from = end.saturating_sub(want);
            (from, if available(from) >= end - from { end - from } else { 0 })
        } else {
            (off, want.min(available(off)))
        };
        if n < out.len() as u64 {
            return read(off, out);
        }
        self.bytes.resize(n as usize, 0);
        if let Err(e) = read(from, &mut self.bytes) {
            self.bytes.clear();
            return Err(e);
        }
        self.at = from;
        let at = (off - from) as usize;
        out.copy_from_slice(&self.bytes[at..at + out.len()]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Reads `buf.len()` bytes at an offset, as the read-ahead's source does.
    trait Source: Fn(u64, &mut [u8]) -> Result<(), ()> {}
    impl<F: Fn(u64, &mut [u8]) -> Result<(), ()>> Source for F {}

    /// A file of `n` bytes, each its offset's low byte; counts the reads.
    fn file(n: u64) -> (impl Source, Rc<Cell<usize>>) {
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        let read = move |off: u64, buf: &mut [u8]| {
            assert!(off + buf.len() as u64 <= n, "read past the end");
            c.set(c.get() + 1);
            buf.iter_mut().enumerate().for_each(|(i, b)| *b = (off + i as u64) as u8);
            Ok(())
        };
        (read, calls)
    }

    #[test]
    fn reads_in_order_read_ahead_and_scattered_reads_do_not() {
        let size = 8 << 20;
        let (read, calls) = file(size);
        let mut ahead = ReadAhead::default();
        let mut page = [0u8; 8192];
        for i in 0..1024u64 {
            ahead.read(&mut page, i * 8192, |from| size - from, &read).unwrap();
            assert!(page.iter().enumerate().all(|(j, &b)| b == (i * 8192 + j as u64) as u8));
        }
        // 1,024 pages: the first alone, then 64 KB, 128 KB … 1 MiB windows.
        assert!(calls.get() < 16, "{} reads", calls.get());
        let before = calls.get();
        for i in [700u64, 3, 512, 90] {
            ahead.read(&mut page, i * 8192 + 1, |_| size, &read).unwrap();
        }
        assert_eq!(calls.get() - before, 4, "a scattered read reads only itself");
    }

    #[test]
    fn pages_read_down_the_file_read_behind_within_what_is_available() {
        // A value stored in the pages a deleted one freed: its pages in
        // descending order, in the database file and in WAL frames.
        for (first, stride) in [(0u64, 8192u64), (32 + 24, 8192 + 24)] {
            let size = first + 1024 * stride;
            let (read, calls) = file(size);
            let mut ahead = ReadAhead::default();
            let mut page = [0u8; 8192];
            for i in (0..1024u64).rev() {
                let at = first + i * stride;
                ahead.read(&mut page, at, |from| size - from, &read).unwrap();
                assert!(page.iter().enumerate().all(|(j, &b)| b == (at + j as u64) as u8), "page {i}");
            }
            assert!(calls.get() < 16, "{} reads", calls.get());
            // Nothing is read behind over bytes that may not be read (a
            // write still held below).
            let held_end = first + 900 * stride;
            let mut ahead = ReadAhead::default();
            let lowest = Cell::new(u64::MAX);
            let watched = |off: u64, buf: &mut [u8]| {
                lowest.set(lowest.get().min(off));
                read(off, buf)
            };
            for i in (900..1000u64).rev() {
                let at = first + i * stride;
                ahead.read(&mut page, at, |from| if from < held_end { 0 } else { size - from }, &watched).unwrap();
                assert!(page.iter().enumerate().all(|(j, &b)| b == (at + j as u64) as u8), "page {i}");
            }
            assert_eq!(lowest.get(), held_end, "nothing read below the held write but its own page");
        }
    }

    #[test]
    fn pages_read_from_wal_frames_in_order_read_ahead() {
        // After the WAL's 32-byte header, each frame: a 24-byte header, then the page.
        let (page_size, frame) = (8192u64, 8192u64 + 24);
        let size = 32 + 1024 * frame;
        let (read, calls) = file(size);
        let mut ahead = ReadAhead::default();
        let mut page = [0u8; 8192];
        for i in 0..1024u64 {
            let at = 32 + i * frame + 24;
            ahead.read(&mut page, at, |from| size - from, &read).unwrap();
            assert!(page.iter().enumerate().all(|(j, &b)| b == (at + j as u64) as u8));
        }
        assert!(calls.get() < 16, "{} reads of {} pages of {page_size} bytes", calls.get(), 1024);
    }

    #[test]
    fn a_write_over_the_bytes_read_ahead_goes_into_them_and_the_end_is_never_passed() {
        let size = 100_000;
        let (read, calls) = file(size);
        let mut ahead = ReadAhead::default();
        let mut buf = [0u8; 1000];
        ahead.read(&mut buf, 0, |_| size, &read).unwrap();
        ahead.read(&mut buf, 1000, |from| size - from, &read).unwrap();
        let n = calls.get();
        ahead.read(&mut buf, 2000, |from| size - from, &read).unwrap();
        assert_eq!(calls.get(), n, "served from the bytes read ahead");
        // A write over bytes read ahead: they take it, and are read no more.
        ahead.written(2500, &[7, 7]);
        ahead.read(&mut buf, 2000, |from| size - from, &read).unwrap();
        assert_eq!(calls.get(), n, "still served from the bytes read ahead");
        assert_eq!((buf[499], buf[500], buf[501], buf[502]), ((2499u64 & 255) as u8, 7, 7, (2502u64 & 255) as u8));
        ahead.clear();
        ahead.read(&mut buf, 3000, |from| size - from, &read).unwrap();
        assert_eq!(calls.get(), n + 1, "read again once cleared");
        // Near the end, the read ahead stops at what is available.
        ahead.read(&mut buf, 99_000, |_| 1000, &read).unwrap();
        ahead.read(&mut buf[..500], 99_500, |_| 500, &read).unwrap();
    }

    #[test]
    fn two_reads_in_order_interleaved_each_read_ahead() {
        // A checkpoint copying WAL frames 32 at a time between the chunks
        // of a value read from further on in the same WAL.
        let (frame, first) = (8192u64 + 24, 32 + 24);
        let size = first + 4096 * frame;
        let (read, calls) = file(size);
        let mut ahead = ReadAhead::default();
        let mut page = [0u8; 8192];
        let (mut copied, mut streamed) = (0u64, 2048u64);
        while copied < 2048 {
            for _ in 0..32 {
                let at = first + copied * frame;
                ahead.read(&mut page, at, |from| size - from, &read).unwrap();
                assert!(page.iter().enumerate().all(|(j, &b)| b == (at + j as u64) as u8), "frame {copied}");
                copied += 1;
            }
            for _ in 0..32 {
                let at = first + streamed * frame;
                ahead.read(&mut page, at, |from| size - from, &read).unwrap();
                assert!(page.iter().enumerate().all(|(j, &b)| b == (at + j as u64) as u8), "frame {streamed}");
                streamed += 1;
            }
        }
        // 4,096 frames of 8 KiB, 32 MiB: each stream's first read alone,
        // then windows growing to 1 MiB, about 40 reads in all.
        assert!(calls.get() < 48, "{} reads", calls.get());
    }
}
