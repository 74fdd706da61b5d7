//! Reading stored BLOBs in ranges with SQLite's incremental blob I/O, and
//! the read sessions behind `blobStream`.
//!
//! Consecutive reads of one cell share one read handle, so SQLite keeps the
//! value's overflow-page chain and a read in the middle of a large value
//! does not walk it from the start again. Any other call drops the handle
//! first ([`Reads::drop_handle`]), so none stays open while statements run.
//! A stream on a snapshot (`snapshots`) reads on a connection no other call
//! uses, so its handle stays from its first chunk to its last.
//!
//! A session (one `blobStream`) must deliver the value it started on, whole,
//! or fail: never a mix of an old and a new value. The update hook (see
//! `hooks`) marks a session changed when its row is inserted, updated or
//! deleted; a rollback
//! marks the sessions begun inside a transaction (the value they started on
//! may be undone). A changed session's next read fails with `SQLITE_ABORT`,
//! as SQLite's own expired blob handles do.
//!
//! SQLite's blob I/O opens no table with generated columns. A value there
//! below the stream limit is read with SQL instead (`substr`, which holds
//! the whole value in wasm memory for the call: SQLite loads a column's
//! overflow pages whole, up to and past the offset, whatever the range);
//! from the limit up it is refused (`RESQ_UNSUPPORTED`), since no way of
//! reading it keeps memory bounded.

use super::conn::{bind_text, Conn};
use super::handle::BlobHandle;
use crate::codec::sql::quote_ident;
use crate::codec::stream::STREAM_LIMIT;
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::cell::RefCell;
use std::ffi::c_int;
use std::rc::Rc;

/// Bytes moved per `sqlite3_blob_read` into scratch memory.
const READ_CHUNK: usize = 1 << 20;

/// Sessions kept at most, of all callers together; the oldest is forgotten
/// past this (a stream the page dropped without cancelling it). The one
/// cap: each session knows its caller, so the worker keeps no list of its
/// own to bound in step with this one.
const MAX_SESSIONS: usize = 256;

/// SQLite's code for an expired blob handle, used for a changed session.
const SQLITE_ABORT: i32 = 4;

struct Session {
    id: u32,
    /// The caller's tab (see `calls`): another caller's session is as
    /// unknown to it as one that ended.
    tab: String,
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
        for session in
            self.list.iter_mut().filter(|x| x.rowid == rowid && x.table.as_bytes().eq_ignore_ascii_case(table))
        {
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
    source: Source,
}

/// How one cell is read.
enum Source {
    /// Through incremental blob I/O.
    Blob(BlobHandle),
    /// With SQL: a value below the stream limit in a table with generated
    /// columns, of `size` bytes.
    Sql { size: u64 },
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

    fn source(&mut self, conn: &Conn, table: &str, column: &str, rowid: i64) -> Result<&Source> {
        let same = self.kept.as_ref().is_some_and(|k| k.table == table && k.column == column && k.rowid == rowid);
        if !same {
            self.kept = None;
            let source = open_stored_blob(conn, table, column, rowid)?;
            self.kept = Some(Kept { table: table.to_owned(), column: column.to_owned(), rowid, source });
        }
        Ok(&self.kept.as_ref().unwrap().source)
    }

    /// `(start, length)` of a range of one stored BLOB, checked against its size.
    pub fn range(
        &mut self,
        conn: &Conn,
        table: &str,
        column: &str,
        rowid: i64,
        offset: Option<f64>,
        length: Option<f64>,
    ) -> Result<(u64, u64)> {
        let size = match self.source(conn, table, column, rowid)? {
            Source::Blob(h) => h.size(),
            Source::Sql { size } => *size,
        };
        crate::codec::value::blob_range(size, offset, length)
    }

    /// Reads `[start, start + len)` of one cell, `(table, column, rowid)` (a range [`Reads::range`]
    /// checked), a chunk at a time: `sink(at, bytes)` receives each chunk
    /// (wasm memory holds one).
    pub fn read(
        &mut self,
        conn: &Conn,
        (table, column, rowid): (&str, &str, i64),
        start: u64,
        len: u64,
        sink: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize((len as usize).min(READ_CHUNK), 0);
        let result = (|| {
            let h = match self.source(conn, table, column, rowid)? {
                Source::Blob(h) => h.raw(),
                Source::Sql { .. } => return read_with_sql(conn, (table, column, rowid), start, len, sink),
            };
            let mut done = 0u64;
            while done < len {
                let n = (scratch.len() as u64).min(len - done) as usize;
                let rc = unsafe {
                    ffi::sqlite3_blob_read(h, scratch.as_mut_ptr().cast(), n as c_int, (start + done) as c_int)
                };
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

    /// Begins a session of `tab`'s on a range of one cell, `(table, column,
    /// rowid)`: `(id, start, end)`.
    pub fn open_session(
        &mut self,
        conn: &Conn,
        tab: &str,
        (table, column, rowid): (&str, &str, i64),
        offset: Option<f64>,
        length: Option<f64>,
    ) -> Result<(u32, u64, u64)> {
        let (start, len) = self.range(conn, table, column, rowid, offset, length)?;
        let id = self.register(tab, (table, column, rowid), start + len, conn.in_transaction());
        Ok((id, start, start + len))
    }

    /// Records a session of `tab`'s on one cell, ending at byte `end`, whose
    /// range may have been checked elsewhere (on its snapshot): its id.
    pub fn register(
        &mut self,
        tab: &str,
        (table, column, rowid): (&str, &str, i64),
        end: u64,
        in_transaction: bool,
    ) -> u32 {
        let mut s = self.sessions.borrow_mut();
        if s.list.len() >= MAX_SESSIONS {
            s.list.remove(0);
        }
        s.next = s.next.wrapping_add(1);
        let id = s.next;
        s.list.push(Session {
            id,
            tab: tab.to_owned(),
            table: table.to_owned(),
            column: column.to_owned(),
            rowid,
            end,
            in_transaction,
            changed: false,
        });
        id
    }

    /// Session `id` is open (not ended, cancelled or forgotten).
    pub fn is_open(&self, id: u32) -> bool {
        self.sessions.borrow().list.iter().any(|x| x.id == id)
    }

    /// The cell of `tab`'s session `id`, still holding the value it began
    /// on, or why not. Ends the session when this read reaches its end.
    /// `on_snapshot`: it reads on a snapshot of its own (see `snapshots`),
    /// which keeps the value it began on whatever changed; one that lost
    /// its snapshot reads the database as it is, and fails if its value
    /// changed since it began.
    pub fn session_cell(
        &mut self,
        tab: &str,
        id: u32,
        (start, len): (u64, u64),
        on_snapshot: bool,
    ) -> Result<(String, String, i64)> {
        let mut s = self.sessions.borrow_mut();
        let Some(i) = s.list.iter().position(|x| x.id == id && x.tab == tab) else {
            return Err(Error::BadParam(
                "this blob stream has ended (cancelled, finished, or one of too many left open)".into(),
            ));
        };
        let x = &s.list[i];
        if x.changed && !on_snapshot {
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

    /// Ends `tab`'s session `id` early (a cancelled stream). Unknown ids,
    /// and other callers' sessions, are ignored.
    pub fn close_session(&mut self, tab: &str, id: u32) {
        self.sessions.borrow_mut().list.retain(|x| x.id != id || x.tab != tab);
    }

    /// Ends every session of `tab` (its caller left).
    pub fn close_sessions(&mut self, tab: &str) {
        self.sessions.borrow_mut().list.retain(|x| x.tab != tab);
    }
}

/// Opens one stored BLOB for reading. SQLite's blob I/O also opens TEXT;
/// the read methods take BLOBs only.
fn open_stored_blob(conn: &Conn, table: &str, column: &str, rowid: i64) -> Result<Source> {
    let h = match conn.open_blob("main", table, column, rowid, false) {
        Ok(h) => h,
        Err(e) if e.to_string().contains("cannot open table with generated columns") => {
            return sql_source(conn, table, column, rowid)
        }
        Err(e) => return Err(e),
    };
    let sql =
        format!("SELECT typeof({}) = 'blob' FROM main.{} WHERE rowid = ?1", quote_ident(column), quote_ident(table));
    let is_blob = conn.row(&sql, |s| unsafe {
        ffi::sqlite3_bind_int64(s, 1, rowid);
    })?;
    if is_blob.first() == Some(&1) {
        Ok(Source::Blob(h))
    } else {
        Err(Error::BadParam(format!("{table}.{column} rowid {rowid} holds TEXT, not a BLOB")))
    }
}

/// A cell of a table with generated columns, which blob I/O cannot open:
/// read with SQL when its value is below the stream limit. `length()` of a
/// BLOB reads its size from the record header, not the value.
fn sql_source(conn: &Conn, table: &str, column: &str, rowid: i64) -> Result<Source> {
    // An unknown name in double quotes would be a string literal to SQL.
    let known =
        conn.row("SELECT count(*) FROM pragma_table_xinfo(?1, 'main') WHERE name = ?2 COLLATE NOCASE", |s| unsafe {
            bind_text(s, 1, table);
            bind_text(s, 2, column);
        })?;
    if known.first() != Some(&1) {
        return Err(Error::NotFound(format!("{table}.{column} rowid {rowid}: no such column: \"{column}\"")));
    }
    let c = quote_ident(column);
    let sql = format!(
        "SELECT typeof({c}) = 'blob', typeof({c}) = 'text', length({c}) FROM main.{} WHERE rowid = ?1",
        quote_ident(table)
    );
    let row = conn
        .row(&sql, |s| unsafe {
            ffi::sqlite3_bind_int64(s, 1, rowid);
        })
        .map_err(|e| match e.to_string() {
            m if m.starts_with("no such") => Error::NotFound(format!("{table}.{column} rowid {rowid}: {m}")),
            _ => e,
        })?;
    let cell = format!("{table}.{column} rowid {rowid}");
    match row[..] {
        [] => Err(Error::NotFound(format!("{cell}: no such row"))),
        [1, _, size] if (size as u64) < STREAM_LIMIT => Ok(Source::Sql { size: size as u64 }),
        [1, _, size] => Err(Error::Unsupported(format!(
            "{cell} holds {size} bytes, and {table} has generated columns: SQLite's incremental blob I/O, through which values are read a chunk at a time, cannot open such a table, and reading with SQL holds the whole value in memory, which is done only below {STREAM_LIMIT} bytes; read it whole with query() (SELECT {column} FROM {table} WHERE rowid = ?), or keep media in a table without generated columns"
        ))),
        [_, 1, _] => Err(Error::BadParam(format!("{cell} holds TEXT, not a BLOB"))),
        _ => Err(Error::BadParam(format!("{cell} holds no BLOB"))),
    }
}

/// Reads `[start, start + len)` of a cell [`sql_source`] admitted, with one
/// `substr`, into `sink` a chunk at a time.
fn read_with_sql(
    conn: &Conn,
    (table, column, rowid): (&str, &str, i64),
    start: u64,
    len: u64,
    sink: &mut dyn FnMut(u64, &[u8]),
) -> Result<()> {
    let sql =
        format!("SELECT substr({}, ?1, ?2) FROM main.{} WHERE rowid = ?3", quote_ident(column), quote_ident(table));
    conn.blob(
        &sql,
        |s| unsafe {
            ffi::sqlite3_bind_int64(s, 1, start as i64 + 1);
            ffi::sqlite3_bind_int64(s, 2, len as i64);
            ffi::sqlite3_bind_int64(s, 3, rowid);
        },
        &mut |bytes| {
            if bytes.len() as u64 != len {
                return Err(Error::Sqlite {
                    errno: SQLITE_ABORT,
                    message: format!("{table}.{column} rowid {rowid} changed while it was being read; read it again"),
                });
            }
            for (i, chunk) in bytes.chunks(READ_CHUNK).enumerate() {
                sink((i * READ_CHUNK) as u64, chunk);
            }
            Ok(())
        },
    )
}
