//! The whole database as a file: read out page by page (`export()`), and
//! replaced by another file once SQLite has checked it (`importDatabase`).
//!
//! An [`Export`] reads the database file in order, a chunk at a time,
//! through its VFS, or a page at a time through SQLite's `sqlite_dbpage`
//! table (a `:memory:` database, which has no file; a plain one read on a
//! snapshot, whose pages may be in the WAL). Between its reads nothing else
//! runs on the connection, and none begins while a transaction is open, so
//! every chunk is of one committed state.
//!
//! An import is [`check`]ed (`PRAGMA quick_check` on the file, opened
//! untrusted) and then [`copy`]'d over the database with SQLite's backup
//! API: one write transaction on the database, journaled like any other,
//! copying page by page through the page cache. A crash midway leaves a hot
//! journal that rolls the database back at the next open; a failure rolls
//! it back at once.

use super::cipher;
use super::conn::Conn;
use super::handle::Statement;
use crate::codec::backup::{as_rollback_journal, check_header, layout, looks_encrypted, looks_plain};
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::CStr;

/// The pages of `main`, in order, as SQLite sees them (the pending-byte
/// page of a database past 1 GB is zeros, as SQLite leaves it).
const PAGES: &str = "SELECT data FROM sqlite_dbpage('main')";

/// Where an export reads its pages from.
enum Pages {
    /// The database file, through its VFS: whole chunks at a time, into a
    /// scratch buffer of at most one chunk. The file holds exactly the
    /// committed database while no transaction is open and nothing writes.
    File { file: *mut ffi::sqlite3_file, scratch: Vec<u8> },
    /// A `:memory:` database has no file: its pages, one per row.
    Scan(Statement),
}

pub struct Export {
    pages_from: Pages,
    page_size: u64,
    pages: u64,
    /// Pages read so far.
    done: u64,
}

impl Export {
    /// Begins reading the database's pages. A database no statement has
    /// written yet has no pages at all, and an empty file is not a
    /// database: its first page is written first (an unchanged
    /// `user_version`), so the export is a database file that opens.
    ///
    /// `through_pager`: the pages come through SQLite's pager
    /// (`sqlite_dbpage`) rather than from the file, so a reader's snapshot
    /// reads them, the WAL's included (as they are in plain form: not for
    /// an encrypted database, whose export is the file as it is stored).
    pub fn begin(conn: &Conn, through_pager: bool) -> Result<Export> {
        if conn.figure("PRAGMA main.page_count")? == 0 {
            conn.row("PRAGMA main.user_version = 0", |_| {})?;
        }
        let (pages, page_size) = sizes(conn)?;
        let pages_from = match conn.main_file().filter(|_| !through_pager) {
            Some(file) => Pages::File { file, scratch: Vec::new() },
            None => Pages::Scan(
                conn.prepare(PAGES, 0)?.0.ok_or_else(|| Error::BadParam("internal SQL holds no statement".into()))?,
            ),
        };
        Ok(Export { pages_from, page_size, pages, done: 0 })
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.pages * self.page_size
    }

    /// Bytes the next [`Export::read`] of at most `max` bytes gives: whole
    /// pages, at least one while any are left.
    pub fn next_len(&self, max: u64) -> u64 {
        (max / self.page_size).max(1).min(self.pages - self.done) * self.page_size
    }

    /// Reads the next [`Export::next_len`]`(max)` bytes into `sink(at,
    /// bytes)` (`at` counted from the start of this read).
    pub fn read(&mut self, conn: &Conn, max: u64, sink: &mut dyn FnMut(u64, &[u8])) -> Result<()> {
        let n = self.next_len(max) / self.page_size;
        let at = self.done * self.page_size;
        match &mut self.pages_from {
            Pages::File { file, scratch } => {
                scratch.resize((n * self.page_size) as usize, 0);
                // SAFETY: the file is the open connection's; the buffer holds the bytes asked for.
                let rc = unsafe {
                    match (*(**file).pMethods).xRead {
                        Some(read) => read(*file, scratch.as_mut_ptr().cast(), scratch.len() as i32, at as i64),
                        None => ffi::SQLITE_IOERR_READ,
                    }
                };
                if rc != ffi::SQLITE_OK {
                    return Err(conn.error(rc));
                }
                // A plain file leaves as a rollback-journal one, which opens
                // without its WAL anywhere (an encrypted page 1 is
                // authenticated whole: it stays as it is).
                if at == 0 && looks_plain(scratch) {
                    as_rollback_journal(scratch, 0);
                }
                sink(0, scratch);
            }
            Pages::Scan(stmt) => {
                for i in 0..n {
                    let stmt = stmt.raw();
                    match unsafe { ffi::sqlite3_step(stmt) } {
                        ffi::SQLITE_ROW => {}
                        ffi::SQLITE_DONE => return Err(Error::BadParam("the export has no more pages".into())),
                        rc => return Err(conn.error(rc)),
                    }
                    // SAFETY: the row's BLOB stays valid until the next step.
                    let page = unsafe {
                        let p = ffi::sqlite3_column_blob(stmt, 0) as *const u8;
                        let len = ffi::sqlite3_column_bytes(stmt, 0) as usize;
                        if p.is_null() || len as u64 != self.page_size {
                            return Err(Error::Sqlite {
                                errno: ffi::SQLITE_CORRUPT,
                                message: format!("page {} could not be read whole", self.done + i + 1),
                            });
                        }
                        std::slice::from_raw_parts(p, len)
                    };
                    if self.done + i == 0 && looks_plain(page) {
                        let mut first = page.to_vec();
                        as_rollback_journal(&mut first, 0);
                        sink(0, &first);
                    } else {
                        sink(i * self.page_size, page);
                    }
                }
            }
        }
        self.done += n;
        Ok(())
    }

    /// Every page has been read.
    pub fn finished(&self) -> bool {
        self.done == self.pages
    }
}

/// `(pages, page size)` of `main`. The page count first: it reads the
/// first page, and `PRAGMA page_size` alone does not (after a copy changed
/// the page size, it would give the old one until something reads).
pub fn sizes(conn: &Conn) -> Result<(u64, u64)> {
    let pages = conn.figure("PRAGMA main.page_count")? as u64;
    Ok((pages, conn.figure("PRAGMA main.page_size")? as u64))
}

/// Checks the database `src` is open on with `PRAGMA quick_check`, which
/// reads every page: b-tree structure, free list, overflow chains, record
/// formats. Anything but `ok` is `SQLITE_CORRUPT`, naming the first problems.
pub fn check(src: &Conn) -> Result<()> {
    let found = src.texts("PRAGMA quick_check(3)", |_| {}).map_err(|e| match e {
        // Pages SQLite could not even read as a database (its schema, say).
        Error::Sqlite { errno, message } => {
            Error::Sqlite { errno, message: format!("the database file is damaged: {message}") }
        }
        e => e,
    })?;
    if found.len() == 1 && found[0] == "ok" {
        return Ok(());
    }
    // One row per problem; a problem in a b-tree comes as several lines
    // under a "*** in database main ***" heading.
    let problems: Vec<&str> = found.iter().flat_map(|f| f.lines()).filter(|l| !l.starts_with("***")).take(3).collect();
    Err(Error::Sqlite {
        errno: ffi::SQLITE_CORRUPT,
        message: format!("the database file is damaged: PRAGMA quick_check found: {}", problems.join("; ")),
    })
}

/// Replaces the database of `dest` with the one of `src` (SQLite's backup
/// API, in one step): all of it in one write transaction on `dest`, or, on
/// any error, nothing.
pub fn copy(dest: &Conn, src: &Conn) -> Result<()> {
    // A `:memory:` database takes pages of its own size only, once it has any.
    let ((pages, size), (_, src_size)) = (sizes(dest)?, sizes(src)?);
    if dest.main_file().is_none() && pages > 0 && size != src_size {
        return Err(Error::Sqlite {
            errno: ffi::SQLITE_READONLY,
            message: format!("a ':memory:' database that holds data keeps its {size}-byte pages, and this file's are {src_size} bytes: import it into a fresh ':memory:' database, or a named one"),
        });
    }
    let main: &CStr = c"main";
    // SAFETY: both connections are open; the backup handle is finished
    // before this returns, on every path.
    unsafe {
        let backup = ffi::sqlite3_backup_init(dest.raw(), main.as_ptr(), src.raw(), main.as_ptr());
        if backup.is_null() {
            return Err(dest.error(ffi::sqlite3_errcode(dest.raw())));
        }
        let step = ffi::sqlite3_backup_step(backup, -1);
        let finish = ffi::sqlite3_backup_finish(backup);
        match (step, finish) {
            (ffi::SQLITE_DONE, ffi::SQLITE_OK) => {}
            // The error is the destination's: its message and code are
            // there, a source read error included.
            (ffi::SQLITE_DONE, rc) | (rc, _) => return Err(dest.error(rc)),
        }
    }
    // Reads the new first page, so PRAGMA page_size gives the file's.
    sizes(dest).map(|_| ())
}

/// Whether a file of `size` bytes whose first bytes are `head` may be
/// imported into a database that is encrypted (`into_encrypted`) or not,
/// with a key for it or not (`key_given`); `Ok(true)` for an encrypted
/// file. An encrypted file only into an encrypted database, with a key,
/// and with pages large enough (`cipher::MIN_PAGE`); a plain one only into
/// a plain database, its header checked. The others are `RESQ_BAD_KEY`
/// (or `RESQ_UNSUPPORTED`), so no file changes from encrypted to plain or
/// back by being imported.
pub fn admit(head: &[u8], size: u64, into_encrypted: bool, key_given: bool) -> Result<bool> {
    let encrypted = looks_encrypted(head);
    match (encrypted, into_encrypted) {
        (true, false) => Err(Error::BadKey(
            "the imported file is encrypted, and this database is not: import it into a database opened with a key"
                .into(),
        )),
        (false, true) if looks_plain(head) => Err(Error::BadKey(
            "the imported file is not encrypted, and this database is: a plain file imports into a plain database"
                .into(),
        )),
        (true, true) if !key_given => Err(Error::BadKey("the imported file is encrypted: pass its key".into())),
        // The copy takes the file's page size.
        (true, true) => cipher::large_enough(layout(head)? as i64, "the imported file").map(|_| true),
        (false, _) => check_header(head, size).map(|_| false),
    }
}
