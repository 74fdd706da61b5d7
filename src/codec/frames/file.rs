//! A file kept in blocks (`codec::blocks`) that is laid out in frame
//! groups when it is a WAL of pages of a block's size (`codec::frames`):
//! what IndexedDB storage keeps of each file (`worker::idb`).

use super::Frames;
use crate::codec::blocks::{BlockFile, Fetch};
use crate::codec::Result;

/// A file's bytes as its blocks hold them.
pub struct FramedFile {
    pub blocks: BlockFile,
    /// SQLite opened it as a WAL.
    wal: bool,
    /// A WAL laid out in frame groups, and its own size (its blocks are
    /// the groups'); `None`: stored as it is. A WAL picks its layout at
    /// its first write once empty, from its header's page size; one stored
    /// before frame groups (no `frames` in its record) is read as it is
    /// until then.
    frames: Option<(Frames, u64)>,
}

impl FramedFile {
    /// A file of `blocks`; `frames`: a WAL's own size, when its blocks are
    /// laid out in frame groups.
    pub fn new(blocks: BlockFile, frames: Option<u64>) -> FramedFile {
        let block = blocks.block() as u64;
        let frames = frames.and_then(|size| Some((Frames::new(block, block)?, size)));
        FramedFile { blocks, wal: frames.is_some(), frames }
    }

    /// SQLite opened it as a WAL: its layout may be frame groups.
    pub fn opened_as_wal(&mut self) {
        self.wal = true;
    }

    /// SQLite opened it as a WAL.
    pub fn is_wal(&self) -> bool {
        self.wal
    }

    /// Its own size when laid out in frame groups (as its record stores it).
    pub fn frames(&self) -> Option<u64> {
        self.frames.map(|(_, size)| size)
    }

    pub fn size(&self) -> u64 {
        self.frames.map_or(self.blocks.size(), |(_, size)| size)
    }

    /// Reads `buf.len()` bytes from `at`; past the end, zeros.
    pub fn read(&self, at: u64, buf: &mut [u8], fetch: &mut Fetch) -> Result<()> {
        let Some((frames, size)) = self.frames else { return self.blocks.read(at, buf, fetch) };
        buf.fill(0);
        let n = size.saturating_sub(at).min(buf.len() as u64);
        for run in frames.runs(at, n) {
            if let [(to, len)] = run.parts[..] {
                // One part (a page or a header, as SQLite reads them): read in place.
                self.blocks.read(run.stored, &mut buf[to as usize..(to + len) as usize], fetch)?;
                continue;
            }
            let mut stored = vec![0u8; run.len as usize];
            self.blocks.read(run.stored, &mut stored, fetch)?;
            let mut from = 0;
            for (to, len) in run.parts {
                let (to, len) = (to as usize, len as usize);
                buf[to..to + len].copy_from_slice(&stored[from..from + len]);
                from += len;
            }
        }
        Ok(())
    }

    pub fn write(&mut self, at: u64, bytes: &[u8], fetch: &mut Fetch) -> Result<()> {
        if self.wal && self.frames.is_none() && self.blocks.size() == 0 && at == 0 {
            let block = self.blocks.block() as u64;
            let page = Frames::page_size(bytes);
            self.frames = page.and_then(|p| Frames::new(p, block)).map(|frames| (frames, 0));
        }
        let Some((frames, size)) = self.frames else { return self.blocks.write(at, bytes, fetch) };
        for run in frames.runs(at, bytes.len() as u64) {
            if let [(from, len)] = run.parts[..] {
                self.blocks.write(run.stored, &bytes[from as usize..(from + len) as usize], fetch)?;
                continue;
            }
            let mut stored = Vec::with_capacity(run.len as usize);
            for (from, len) in run.parts {
                stored.extend_from_slice(&bytes[from as usize..(from + len) as usize]);
            }
            self.blocks.write(run.stored, &stored, fetch)?;
        }
        // Only once written: a failed write leaves the size as it was.
        self.frames = Some((frames, size.max(at + bytes.len() as u64)));
        Ok(())
    }

    pub fn truncate(&mut self, size: u64, fetch: &mut Fetch) -> Result<()> {
        let Some((frames, _)) = self.frames else { return self.blocks.truncate(size, fetch) };
        self.blocks.truncate(frames.stored_size(size), fetch)?;
        if let Some((from, to)) = frames.cut_headers(size) {
            self.blocks.write(from, &vec![0u8; (to - from) as usize], fetch)?;
        }
        // Emptied: its next first write picks its layout again.
        self.frames = (size > 0).then_some((frames, size));
        Ok(())
    }
}
