//! Reading stored BLOBs in ranges with SQLite's incremental blob I/O, and
//! the read sessions behind `blobStream`.
//!
//! Consecutive reads of one cell share one read handle, so SQLite keeps the
//! value's overflow-page chain and a read in the middle of a large value
//! does not walk it from the start again. Any other call drops the handle
//! first ([`Reads::drop_handle`]), so none stays open while statements run.
//!
//! A session (one `blobStream`) must deliver the value it started on, whole,
//! or fail: never a mix of an old and a new value. The update hook (see
//! `hooks`) marks a session changed when its row is inserted, updated or
//! deleted; a rollback
//! marks the sessions begun inside a transaction (the value they started on
//! may be undone). A changed session's next read fails with `SQLITE_ABORT`,
//! as SQLite's own expired blob handles do.

use super::conn::Conn;
use super::handle::BlobHandle;
use crate::codec::sql::quote_ident;
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::cell::RefCell;
use std::ffi::c_int;
use std::rc::Rc;

/// Bytes moved per `sqlite3_blob_read` into scratch memory.
const READ_CHUNK: usize = 1 << 20;

/// Sessions kept at most; the oldest is forgotten past this (a stream the
/// page dropped without cancelling it).
const MAX_SESSIONS: usize = 256;

/// SQLite's code for an expired blob handle, used for a changed session.
const SQLITE_ABORT: i32 = 4;

struct Session {
    id: u32,
    table: String,
    column: String,
    rowid: i64,
    end: u64,
    /// Begun while a transaction was open: a rollback may undo its value.
    in_transaction: bool,
    changed: bool,
}

/// The open `blobStream` sessions. The connection's hooks (see `hooks`)
/// tell them of row changes and rollbacks.
#[derive(Default)]
pub struct Sessions {
    list: Vec<Session>,
    next: u32,
}

impl Sessions {
    /// Row `rowid` of `db`.`table` was inserted, updated or deleted (the
    /// update hook).
    pub fn row_changed(&mut self, db: &[u8], table: &[u8], rowid: i64) {
        if self.list.is_empty() || db != b"main" {
            return;
        }
        for session in self.list.iter_mut().filter(|x| x.rowid == rowid && x.table.as_bytes().eq_ignore_ascii_case(table)) {
            session.changed = true;
        }
    }

    /// A rollback, of the transaction or to a savepoint.
    pub fn rolled_back(&mut self) {
        for session in self.list.iter_mut().filter(|x| x.in_transaction) {
            session.changed = true;
        }
    }

    /// Every row may have changed (the database was replaced).
    pub fn all_changed(&mut self) {
        for session in &mut self.list {
            session.changed = true;
        }
    }
}

/// The read handle kept between reads of one cell.
struct Kept {
    table: String,
    column: String,
    rowid: i64,
    handle: BlobHandle,
}

pub struct Reads {
    kept: Option<Kept>,
    /// Shared with the hooks, which mark them changed.
    sessions: Rc<RefCell<Sessions>>,
    scratch: Vec<u8>,
}

impl Reads {
    pub fn new() -> Reads {
        Reads { kept: None, sessions: Rc::default(), scratch: Vec::new() }
    }

    /// The sessions, for the hooks that mark them changed.
    pub fn sessions(&self) -> Rc<RefCell<Sessions>> {
        Rc::clone(&self.sessions)
    }

    /// A rollback that the rollback hook does not see (`ROLLBACK TO`).
    pub fn rolled_back(&self) {
        self.sessions.borrow_mut().rolled_back();
    }

    /// The database was replaced: every session's value may be gone.
    pub fn all_changed(&self) {
        self.sessions.borrow_mut().all_changed();
    }

    /// Closes the kept read handle, if any (every call but the blob reads).
    pub fn drop_handle(&mut self) {
        self.kept = None;
    }

    fn handle(&mut self, conn: &Conn, table: &str, column: &str, rowid: i64) -> Result<&BlobHandle> {
        let same = self.kept.as_ref().is_some_and(|k| k.table == table && k.column == column && k.rowid == rowid);
        if !same {
            self.kept = None;
            let handle = open_stored_blob(conn, table, column, rowid)?;
            self.kept = Some(Kept { table: table.to_owned(), column: column.to_owned(), rowid, handle });
        }
        Ok(&self.kept.as_ref().unwrap().handle)
    }

    /// `(start, length)` of a range of one stored BLOB, checked against its size.
    pub fn range(&mut self, conn: &Conn, table: &str, column: &str, rowid: i64, offset: Option<f64>, length: Option<f64>) -> Result<(u64, u64)> {
        let size = self.handle(conn, table, column, rowid)?.size();
        crate::codec::value::blob_range(size, offset, length)
    }

    /// Reads `[start, start + len)` of one cell, `(table, column, rowid)` (a range [`Reads::range`]
    /// checked), a chunk at a time: `sink(at, bytes)` receives each chunk
    /// (wasm memory holds one).
    pub fn read(&mut self, conn: &Conn, (table, column, rowid): (&str, &str, i64), start: u64, len: u64, sink: &mut dyn FnMut(u64, &[u8])) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize((len as usize).min(READ_CHUNK), 0);
        let result = (|| {
            let h = self.handle(conn, table, column, rowid)?.raw();
            let mut done = 0u64;
            while done < len {
                let n = (scratch.len() as u64).min(len - done) as usize;
                let rc = unsafe { ffi::sqlite3_blob_read(h, scratch.as_mut_ptr().cast(), n as c_int, (start + done) as c_int) };
                if rc != ffi::SQLITE_OK {
                    return Err(conn.error(rc));
                }
                sink(done, &scratch[..n]);
                done += n as u64;
            }
            Ok(())
        })();
        self.scratch = scratch;
        if result.is_err() {
            self.drop_handle();
        }
        result
    }

    /// Begins a session on a range of one cell: `(id, start, end)`.
    pub fn open_session(&mut self, conn: &Conn, table: &str, column: &str, rowid: i64, offset: Option<f64>, length: Option<f64>) -> Result<(u32, u64, u64)> {
        let (start, len) = self.range(conn, table, column, rowid, offset, length)?;
        let mut s = self.sessions.borrow_mut();
        if s.list.len() >= MAX_SESSIONS {
            s.list.remove(0);
        }
        s.next = s.next.wrapping_add(1);
        let id = s.next;
        let in_transaction = conn.in_transaction();
        s.list.push(Session { id, table: table.to_owned(), column: column.to_owned(), rowid, end: start + len, in_transaction, changed: false });
        Ok((id, start, start + len))
    }

    /// The cell of a session still holding the value it began on, or why not.
    /// Ends the session when this read reaches its end.
    pub fn session_cell(&mut self, id: u32, start: u64, len: u64) -> Result<(String, String, i64)> {
        let mut s = self.sessions.borrow_mut();
        let Some(i) = s.list.iter().position(|x| x.id == id) else {
            return Err(Error::BadParam("this blob stream has ended (cancelled, finished, or one of too many left open)".into()));
        };
        let x = &s.list[i];
        if x.changed {
            let e = Error::Sqlite {
                errno: SQLITE_ABORT,
                message: format!(
                    "{}.{} rowid {} changed while it was being streamed (updated, deleted, replaced or rolled back); read it again from the start",
                    x.table, x.column, x.rowid
                ),
            };
            s.list.remove(i);
            return Err(e);
        }
        if start + len > x.end {
            return Err(Error::Range(format!("{len} bytes from offset {start} run past the stream's end ({})", x.end)));
        }
        let cell = (x.table.clone(), x.column.clone(), x.rowid);
        if start + len == x.end {
            s.list.remove(i);
        }
        Ok(cell)
    }

    /// Ends a session early (a cancelled stream). Unknown ids are ignored.
    pub fn close_session(&mut self, id: u32) {
        self.sessions.borrow_mut().list.retain(|x| x.id != id);
    }
}

/// Opens one stored BLOB for reading. SQLite's blob I/O also opens TEXT;
/// the read methods take BLOBs only.
fn open_stored_blob(conn: &Conn, table: &str, column: &str, rowid: i64) -> Result<BlobHandle> {
    let h = conn.open_blob("main", table, column, rowid, false)?;
    let sql = format!("SELECT typeof({}) = 'blob' FROM main.{} WHERE rowid = ?1", quote_ident(column), quote_ident(table));
    let is_blob = conn.row(&sql, |s| unsafe {
        ffi::sqlite3_bind_int64(s, 1, rowid);
    })?;
    if is_blob.first() == Some(&1) {
        Ok(h)
    } else {
        Err(Error::BadParam(format!("{table}.{column} rowid {rowid} holds TEXT, not a BLOB")))
    }
}
