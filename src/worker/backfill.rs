//! A checkpoint in slices: the WAL's frames copied into the database file a
//! few megabytes at a time, with the worker's other calls between them.
//!
//! SQLite's checkpoint is one call: a 1 GiB WAL held the worker 6–7 s.
//! Limiting it (a reader's read mark at the slice's end) makes it copy in
//! parts, but each part walks every frame still in the WAL, so copying a
//! large one in small parts costs the square of its size. This module does
//! what SQLite's checkpoint does (`walCheckpoint` in `sqlite3.c`), with the
//! same files, locks and wal-index, only spread over calls:
//!
//! 1. **Plan** (once): the frames no reader's snapshot still needs, up to
//!    `mxSafeFrame`, found as SQLite finds them (a read mark held by a
//!    reader bounds it, one not held is cleared); for each page the last of
//!    its frames, sorted by page; then the `-wal` file synced.
//! 2. **Slices**: each copies the next pages' frames into the database file
//!    through the connection's own files (SQLite3MC's, for an encrypted
//!    database, which decrypt the frame and encrypt the page as SQLite's
//!    checkpoint has them do), under the checkpoint's two locks.
//! 3. **The end**: when every frame of the WAL was copied, the file is cut
//!    to the database's size and synced; then the wal-index records the
//!    frames copied (`nBackfill`), and the next commit may write the WAL
//!    over from its start.
//!
//! Between slices nothing SQLite reads changes: the wal-index still says no
//! frame is copied, so every connection reads those pages from the WAL,
//! whose frames are the bytes being copied. A plan is dropped when the WAL
//! is no longer the one planned (another checkpoint, or the WAL begun
//! again) and when its connection ends. A crash midway leaves the WAL whole
//! and the wal-index gone: SQLite's recovery copies it all again.

use super::conn::Conn;
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::{c_int, c_void};

/// The wal-index's layout (SQLite's `wal.c`): 32 KB regions; the first
/// begins with the header (two 48-byte copies) and the checkpoint's
/// information, then every region holds page numbers of frames.
const REGION: c_int = 32 << 10;
const HEADER_WORDS: usize = 34;
/// Frames whose page numbers the first region holds, and the others.
const FIRST_FRAMES: u32 = 4096 - HEADER_WORDS as u32;
const FRAMES: u32 = 4096;
/// Words of the header and the checkpoint's information.
/// `isInit` (its low byte), then the page size (its upper half, 1 for 65536).
const INIT_AND_PAGE_SIZE: usize = 3;
const MX_FRAME: usize = 4;
const N_PAGE: usize = 5;
const SALT: usize = 8;
const BACKFILL: usize = 24;
const READ_MARK: usize = 25;
const BACKFILL_ATTEMPTED: usize = 32;
const READERS: usize = 5;
/// Lock slots: the checkpointer's, and reader slot `i`'s (`3 + i`).
const CKPT_LOCK: c_int = 1;
const READ_LOCK: c_int = 3;
const NOT_USED: u32 = 0xffff_ffff;
/// Bytes before the first frame, and before a frame's page.
const WAL_HEADER: i64 = 32;
const FRAME_HEADER: i64 = 24;

/// A checkpoint planned and partly done.
pub struct Backfill {
    salt: [u32; 2],
    /// Frames copied before the plan (`nBackfill`), and the last to copy.
    from: u32,
    to: u32,
    page_size: i64,
    /// The pages to copy, each `page << 32 | frame` of its last frame, in
    /// the frames' order; and the next.
    pages: Vec<u64>,
    next: usize,
    buf: Vec<u8>,
}

/// What a checkpoint would write (see [`Backfill::pages_to_copy`]).
#[derive(Clone, Copy)]
pub struct ToCopy {
    pub pages: u32,
    /// Of `pages`, those past the database file's end.
    pub growth: u32,
}

/// What a [`Backfill::slice`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Slice {
    /// Copied some pages; more are left.
    More,
    /// Copied the last page and recorded the checkpoint: the frames the
    /// WAL holds beyond it (commits since the plan, or frames a reader's
    /// snapshot kept back).
    Done(u32),
    /// A reader reads the database file alone (SQLite's read lock 0):
    /// nothing copied, and nothing may be until it ends.
    Busy,
    /// The WAL is not the one planned any more (another checkpoint, or it
    /// was begun again): nothing copied, and the plan is to be dropped.
    Stale,
}

/// The connection's database file and its `-wal` file, as its pager uses
/// them, and the first region of the wal-index.
struct Files {
    db: *mut ffi::sqlite3_file,
    wal: *mut ffi::sqlite3_file,
}

impl Files {
    fn of(conn: &Conn) -> Option<Files> {
        let db = conn.file_pointer(ffi::SQLITE_FCNTL_FILE_POINTER)?;
        let wal = conn.file_pointer(ffi::SQLITE_FCNTL_JOURNAL_POINTER)?;
        Some(Files { db, wal })
    }

    /// Region `i` of the wal-index, if the connection has it mapped.
    fn region(&self, i: u32) -> Option<Region> {
        let mut at: *mut c_void = std::ptr::null_mut();
        // SAFETY: the file is open.
        unsafe {
            let map = (*(*self.db).pMethods).xShmMap?;
            if map(self.db, i as c_int, REGION, 0, &mut at) != ffi::SQLITE_OK || at.is_null() {
                return None;
            }
        }
        Some(Region(at.cast()))
    }

    fn lock(&self, slot: c_int) -> bool {
        // SAFETY: as in `region`.
        unsafe {
            let lock = (*(*self.db).pMethods).xShmLock.expect("the VFS has shared-memory locks");
            lock(self.db, slot, 1, ffi::SQLITE_SHM_LOCK | ffi::SQLITE_SHM_EXCLUSIVE) == ffi::SQLITE_OK
        }
    }

    fn unlock(&self, slot: c_int) {
        // SAFETY: as in `region`.
        unsafe {
            let lock = (*(*self.db).pMethods).xShmLock.expect("the VFS has shared-memory locks");
            lock(self.db, slot, 1, ffi::SQLITE_SHM_UNLOCK | ffi::SQLITE_SHM_EXCLUSIVE);
        }
    }

    fn io(rc: c_int, what: &str) -> Result<()> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(Error::Sqlite { errno: rc, message: format!("a checkpoint could not {what}") })
        }
    }

    /// The database file's size in whole pages of the WAL's page size.
    fn db_pages(&self, head: Region) -> Result<u32> {
        let page_size = head.page_size();
        let mut size: ffi::sqlite3_int64 = 0;
        // SAFETY: the file is open.
        let rc = unsafe { ((*(*self.db).pMethods).xFileSize.expect("files have sizes"))(self.db, &mut size) };
        Self::io(rc, "size the database file")?;
        Ok(u32::try_from(size / page_size).unwrap_or(u32::MAX))
    }

    fn sync(&self, file: *mut ffi::sqlite3_file) -> Result<()> {
        // SAFETY: the file is open.
        let rc = unsafe { ((*(*file).pMethods).xSync.expect("files sync"))(file, ffi::SQLITE_SYNC_NORMAL) };
        Self::io(rc, "flush a file")
    }
}

/// A region of the wal-index, as 32-bit words in the wasm's byte order
/// (SQLite's native one). A region SQLite mapped stays where it is until
/// the connection unmaps it (`gather/shm.rs`), and one thread uses it.
#[derive(Clone, Copy)]
struct Region(*mut u32);

impl Region {
    fn get(self, word: usize) -> u32 {
        debug_assert!(word < REGION as usize / 4);
        // SAFETY: see the type; `word` is within the region.
        unsafe { *self.0.add(word) }
    }

    /// Whether SQLite has set the wal-index up (`isInit`).
    fn ready(self) -> bool {
        self.get(INIT_AND_PAGE_SIZE) & 0xff != 0
    }

    /// The WAL's page size (stored as 1 for 65536).
    fn page_size(self) -> i64 {
        match self.get(INIT_AND_PAGE_SIZE) >> 16 {
            1 => 65536,
            n => i64::from(n),
        }
    }

    fn set(self, word: usize, value: u32) {
        debug_assert!(word < REGION as usize / 4);
        // SAFETY: as in `get`.
        unsafe { *self.0.add(word) = value }
    }
}

impl Backfill {
    /// Plans a checkpoint of the WAL of `conn` (its writer, outside a
    /// transaction); `None` when nothing can be copied now.
    pub fn plan(conn: &Conn) -> Result<Option<Backfill>> {
        let Some(files) = Files::of(conn) else { return Ok(None) };
        let Some(head) = files.region(0) else { return Ok(None) };
        let mx_frame = head.get(MX_FRAME);
        let from = head.get(BACKFILL);
        if !head.ready() || from >= mx_frame {
            return Ok(None);
        }
        // As SQLite: a read mark below the last frame bounds the copy if a
        // reader holds it, and is cleared if none does.
        let mut to = mx_frame;
        for i in 1..READERS {
            let mark = head.get(READ_MARK + i);
            if to > mark {
                if files.lock(READ_LOCK + i as c_int) {
                    head.set(READ_MARK + i, if i == 1 { to } else { NOT_USED });
                    files.unlock(READ_LOCK + i as c_int);
                } else {
                    to = mark;
                }
            }
        }
        if from >= to {
            return Ok(None);
        }
        let n_page = head.get(N_PAGE);
        let page_size = head.page_size();
        let salt = [head.get(SALT), head.get(SALT + 1)];
        if !files.lock(READ_LOCK) {
            return Ok(None);
        }
        files.unlock(READ_LOCK);
        let mut pages = Vec::new();
        last_frames(&files, from, to, n_page, &mut |page, frame| pages.push(u64::from(page) << 32 | u64::from(frame)))?;
        // In the order they were written.
        pages.reverse();
        files.sync(files.wal)?;
        let head = files.region(0).expect("mapped above");
        head.set(BACKFILL_ATTEMPTED, to);
        Ok(Some(Backfill { salt, from, to, page_size, pages, next: 0, buf: vec![0; page_size as usize] }))
    }

    /// What a checkpoint of the WAL of `conn` would write now, whatever the
    /// readers hold: the pages its uncopied frames hold, each once, and
    /// how many of them lie past the database file's end (the file grows
    /// by those).
    pub fn pages_to_copy(conn: &Conn) -> Result<ToCopy> {
        let none = ToCopy { pages: 0, growth: 0 };
        let Some(files) = Files::of(conn) else { return Ok(none) };
        let Some(head) = files.region(0) else { return Ok(none) };
        let (from, to) = (head.get(BACKFILL), head.get(MX_FRAME));
        if !head.ready() || from >= to {
            return Ok(none);
        }
        let in_file = files.db_pages(head)?;
        let mut n = none;
        last_frames(&files, from, to, head.get(N_PAGE), &mut |page, _| {
            n.pages += 1;
            n.growth += u32::from(page > in_file);
        })?;
        Ok(n)
    }

    /// The database's size in pages as of the WAL's last commit (`None`
    /// before the wal-index is set up).
    pub fn commit_pages(conn: &Conn) -> Option<u32> {
        let head = Files::of(conn)?.region(0)?;
        head.ready().then(|| head.get(N_PAGE))
    }

    /// The database file's size in pages (`None` before the wal-index is
    /// set up): an OPFS call.
    pub fn file_pages(conn: &Conn) -> Result<Option<u32>> {
        let Some(files) = Files::of(conn) else { return Ok(None) };
        let Some(head) = files.region(0) else { return Ok(None) };
        if !head.ready() {
            return Ok(None);
        }
        files.db_pages(head).map(Some)
    }

    /// Copies pages until about `bytes` are copied, or the last.
    pub fn slice(&mut self, conn: &Conn, bytes: i64) -> Result<Slice> {
        let Some(files) = Files::of(conn) else { return Ok(Slice::Stale) };
        let Some(head) = files.region(0) else { return Ok(Slice::Stale) };
        let same = head.ready() && [head.get(SALT), head.get(SALT + 1)] == self.salt;
        if !same || head.get(BACKFILL) != self.from || head.get(MX_FRAME) < self.to {
            return Ok(Slice::Stale);
        }
        if !files.lock(CKPT_LOCK) {
            return Ok(Slice::Busy);
        }
        let done = self.copy(&files, bytes);
        files.unlock(CKPT_LOCK);
        done
    }

    fn copy(&mut self, files: &Files, bytes: i64) -> Result<Slice> {
        if !files.lock(READ_LOCK) {
            return Ok(Slice::Busy);
        }
        let copied = self.copy_pages(files, bytes);
        files.unlock(READ_LOCK);
        if copied? {
            return Ok(Slice::More);
        }
        // The end, as SQLite's: cut and flush the file if the WAL was
        // copied whole, then record the frames copied.
        let head = files.region(0).expect("mapped in `slice`");
        if head.get(MX_FRAME) == self.to {
            let size = i64::from(head.get(N_PAGE)) * self.page_size;
            // SAFETY: the file is open.
            let rc = unsafe { ((*(*files.db).pMethods).xTruncate.expect("files truncate"))(files.db, size) };
            Files::io(rc, "cut the database file")?;
            files.sync(files.db)?;
        }
        let head = files.region(0).expect("mapped in `slice`");
        head.set(BACKFILL, self.to);
        Ok(Slice::Done(head.get(MX_FRAME) - self.to))
    }

    /// Copies the next pages, about `bytes` of them: whether any are left.
    fn copy_pages(&mut self, files: &Files, bytes: i64) -> Result<bool> {
        let left = self.pages.len() - self.next;
        let end = self.next + ((bytes / self.page_size).max(1) as usize).min(left);
        let size = self.page_size as c_int;
        for &p in &self.pages[self.next..end] {
            let (page, frame) = ((p >> 32) as i64, i64::from(p as u32));
            let at = WAL_HEADER + (frame - 1) * (self.page_size + FRAME_HEADER) + FRAME_HEADER;
            // SAFETY: the files are open; `buf` holds one page.
            unsafe {
                let rc = ((*(*files.wal).pMethods).xRead.expect("files read"))(
                    files.wal,
                    self.buf.as_mut_ptr().cast(),
                    size,
                    at,
                );
                Files::io(rc, "read the WAL")?;
                let rc = ((*(*files.db).pMethods).xWrite.expect("files write"))(
                    files.db,
                    self.buf.as_ptr().cast(),
                    size,
                    (page - 1) * self.page_size,
                );
                Files::io(rc, "write the database file")?;
            }
        }
        self.next = end;
        // SAFETY: the file is open; the op takes no argument.
        let rc = unsafe {
            ((*(*files.db).pMethods).xFileControl.expect("files have controls"))(
                files.db,
                super::gather::FCNTL_WRITE_HELD,
                std::ptr::null_mut(),
            )
        };
        Files::io(if rc == ffi::SQLITE_NOTFOUND { ffi::SQLITE_OK } else { rc }, "write the database file")?;
        Ok(self.next < self.pages.len())
    }
}

/// Calls `each(page, frame)` for the last frame of each page among frames
/// `from + 1..=to` of the WAL, from the last frame back: each page's first
/// frame met is its last (the pages seen are marked, one bit each). Pages
/// past `n_page` (the database's size at frame `to`) are left out.
fn last_frames(files: &Files, from: u32, to: u32, n_page: u32, each: &mut dyn FnMut(u32, u32)) -> Result<()> {
    let mut seen = vec![0u64; n_page as usize / 64 + 1];
    let mut mapped: Option<(u32, Region)> = None;
    for frame in (from + 1..=to).rev() {
        let (region, word) = if frame <= FIRST_FRAMES {
            (0, HEADER_WORDS + (frame - 1) as usize)
        } else {
            let k = frame - FIRST_FRAMES - 1;
            (1 + k / FRAMES, (k % FRAMES) as usize)
        };
        if mapped.is_none_or(|(r, _)| r != region) {
            let map = files.region(region).ok_or_else(|| Error::Locked("the wal-index lacks a frame".into()))?;
            mapped = Some((region, map));
        }
        let page = mapped.expect("mapped above").1.get(word);
        let (bits, bit) = (page as usize / 64, 1u64 << (page % 64));
        if page <= n_page && seen[bits] & bit == 0 {
            seen[bits] |= bit;
            each(page, frame);
        }
    }
    Ok(())
}
