//! `Blob`/`File` parameters that stream into their cells.
//!
//! The statement runs with each such value bound as a placeholder (see
//! [`crate::codec::stream`]) while a [`Watch`], told of every row change by
//! the pre-update hook (see `hooks`), notes those whose new values hold one:
//! the statement's own cell, and copies its triggers made. After the step those cells are checked (still holding the
//! placeholder, in a rowid table), resized to the value's length with
//! triggers off, and opened for writing; the worker then writes the value
//! into all of them chunk by chunk. Wasm memory holds one chunk at a time.
//!
//! Refused with `RESQ_BAD_PARAM`, before anything is kept: a value stored
//! nowhere by a statement that changed rows (so it was used only in an
//! expression), one in a table without a rowid or
//! in a virtual table's own tables, and one a virtual table could have seen
//! (the statement writes a virtual table directly, or a trigger that reads
//! the value's column runs in a statement that writes one).

use super::conn::{bind_blob, bind_text, Conn};
use super::handle::{BlobHandle, Statement};
use crate::codec::sql::quote_ident;
use crate::codec::stream::{Placeholder, PLACEHOLDER_LEN};
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::{c_char, c_int, CStr};
use std::ptr;

/// A streamed parameter as bound: its label (`parameter 2`), its size and
/// the placeholder standing in for it.
pub struct Streamed {
    pub label: String,
    pub size: u64,
    pub placeholder: Placeholder,
}

/// The cells one streamed value is written into.
pub struct Stream {
    targets: Vec<BlobHandle>,
}

impl Stream {
    /// Whether the value landed nowhere (the statement changed no row).
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Writes `chunk` at `offset` into every target cell.
    pub fn write(&self, conn: &Conn, offset: u64, chunk: &[u8]) -> Result<()> {
        for t in &self.targets {
            let rc = unsafe { ffi::sqlite3_blob_write(t.raw(), chunk.as_ptr().cast(), chunk.len() as c_int, offset as c_int) };
            if rc != ffi::SQLITE_OK {
                return Err(conn.error(rc));
            }
        }
        Ok(())
    }
}

/// What the authorizer saw while the statement (and its triggers) was
/// prepared: the tables it writes, and the columns its triggers read.
#[derive(Default)]
pub struct Footprint {
    /// Schema, table, and whether the statement itself writes it (not a trigger).
    writes: Vec<(String, String, bool)>,
    /// Table and column of every value a trigger reads (`new.data` included).
    trigger_reads: Vec<(String, String)>,
}

/// Prepares the one statement of `sql` while noting its [`Footprint`].
pub fn prepare(conn: &Conn, sql: &str) -> Result<(Statement, Footprint)> {
    let mut footprint = Footprint::default();
    let (stmt, tail) = conn.prepare_noting(sql, 0, &mut |x| match x.action {
        ffi::SQLITE_INSERT | ffi::SQLITE_UPDATE => footprint.writes.push((x.db.to_owned(), x.a.to_owned(), x.inner.is_none())),
        ffi::SQLITE_READ if x.inner.is_some() => footprint.trigger_reads.push((x.a.to_owned(), x.b.to_owned())),
        _ => {}
    })?;
    let one = "with parameters, execute takes exactly one statement (run a script without parameters)";
    match stmt {
        Some(stmt) if crate::codec::sql::is_blank(tail) => Ok((stmt, footprint)),
        _ => Err(Error::BadParam(one.into())),
    }
}

/// A row change whose new values held a placeholder: schema, table, rowid,
/// column index, and which placeholder.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    db: String,
    table: String,
    rowid: i64,
    column: i32,
    which: usize,
}

/// Where the placeholders of one streaming statement land: told of every
/// row change while the statement steps (see `hooks`).
pub struct Watch {
    placeholders: Vec<Placeholder>,
    hits: Vec<Hit>,
}

/// SQLite's default most columns a table can have.
const MAX_COLUMNS: c_int = 2000;

impl Watch {
    /// A row change, from the pre-update hook (its arguments): notes each
    /// new value that is one of the placeholders.
    ///
    /// # Safety
    /// Only inside a pre-update hook call on `db`, with its arguments.
    pub unsafe fn note(&mut self, db: *mut ffi::sqlite3, op: c_int, schema: *const c_char, table: *const c_char, new_rowid: i64) {
        if op != ffi::SQLITE_INSERT && op != ffi::SQLITE_UPDATE {
            return;
        }
        for i in 0..MAX_COLUMNS {
            let mut v = ptr::null_mut();
            let rc = ffi::sqlite3_preupdate_new(db, i, &mut v);
            if rc == ffi::SQLITE_MISUSE {
                break; // past the last column
            }
            if rc != ffi::SQLITE_OK
                || ffi::sqlite3_value_type(v) != ffi::SQLITE_BLOB
                || ffi::sqlite3_value_bytes(v) != PLACEHOLDER_LEN as c_int
            {
                continue;
            }
            let bytes = std::slice::from_raw_parts(ffi::sqlite3_value_blob(v) as *const u8, PLACEHOLDER_LEN);
            if let Some(which) = self.placeholders.iter().position(|p| p[..] == *bytes) {
                let s = |p: *const c_char| CStr::from_ptr(p).to_string_lossy().into_owned();
                self.hits.push(Hit { db: s(schema), table: s(table), rowid: new_rowid, column: i, which });
            }
        }
    }
}

/// Runs a prepared streaming statement and makes its target cells ready:
/// returns one [`Stream`] per streamed value, in order. `step` steps the
/// statement to the end with the [`Watch`] told of every row change. On
/// error the caller rolls back its savepoint.
pub fn run(conn: &Conn, footprint: &Footprint, streamed: &[Streamed], step: impl FnOnce(&mut Watch) -> Result<()>) -> Result<Vec<Stream>> {
    let mut watch = Watch { placeholders: streamed.iter().map(|s| s.placeholder).collect(), hits: Vec::new() };
    let before = conn.total_changes();
    step(&mut watch)?;
    let Watch { placeholders, mut hits } = watch;
    // A statement that changed nothing (an UPDATE whose WHERE matched no
    // row) stored its values nowhere, rightly.
    let changed = conn.total_changes() != before;
    hits.sort();
    hits.dedup();
    let cells = resolve(conn, hits, &placeholders)?;
    check_virtual(conn, footprint, &cells, streamed)?;
    for (k, s) in streamed.iter().enumerate() {
        if changed && !cells.iter().any(|c| c.which == k) {
            return Err(Error::BadParam(format!(
                "{}: a Blob or File of {} bytes streams into its cell, so it must be stored as a column value of a row the statement inserts or updates (in a table with a rowid); to use it in an expression, pass it below {} bytes or as bytes",
                s.label,
                s.size,
                crate::codec::stream::STREAM_LIMIT
            )));
        }
    }
    resize(conn, &cells, streamed)?;
    streamed
        .iter()
        .enumerate()
        .map(|(k, _)| {
            let targets = cells
                .iter()
                .filter(|c| c.which == k)
                .map(|c| conn.open_blob(&c.db, &c.table, &c.column, c.rowid, true))
                .collect::<Result<Vec<_>>>()?;
            Ok(Stream { targets })
        })
        .collect()
}

/// A cell that holds a placeholder once the statement is done.
struct Cell {
    db: String,
    table: String,
    column: String,
    rowid: i64,
    which: usize,
}

/// Turns hits into cells: column names, a rowid table, the placeholder still there.
fn resolve(conn: &Conn, hits: Vec<Hit>, placeholders: &[Placeholder]) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    let mut last: Option<(String, String, Vec<String>)> = None;
    for h in hits {
        if last.as_ref().is_none_or(|(d, t, _)| *d != h.db || *t != h.table) {
            let kind = table_kind(conn, &h.db, &h.table)?;
            if kind != "table" {
                return Err(Error::BadParam(format!(
                    "a streamed Blob or File reached {}.{}, a {kind}: it can only be written into tables with a rowid",
                    h.db, h.table
                )));
            }
            let columns = conn.texts("SELECT name FROM pragma_table_xinfo(?2, ?1) ORDER BY cid", |s| unsafe {
                bind_text(s, 1, &h.db);
                bind_text(s, 2, &h.table);
            })?;
            last = Some((h.db.clone(), h.table.clone(), columns));
        }
        let columns = &last.as_ref().unwrap().2;
        let Some(column) = columns.get(h.column as usize) else { continue };
        // A later trigger may have changed the cell again.
        let sql = format!(
            "SELECT length({c}) = {PLACEHOLDER_LEN} AND {c} = ?1 FROM {}.{} WHERE rowid = ?2",
            quote_ident(&h.db),
            quote_ident(&h.table),
            c = quote_ident(column)
        );
        let holds = conn.row(&sql, |s| unsafe {
            bind_blob(s, 1, &placeholders[h.which]);
            ffi::sqlite3_bind_int64(s, 2, h.rowid);
        })?;
        if holds.first() == Some(&1) {
            cells.push(Cell { db: h.db, table: h.table, column: column.clone(), rowid: h.rowid, which: h.which });
        }
    }
    Ok(cells)
}

/// `table` (a rowid table), `without rowid`, `virtual`, `shadow`, `view`.
fn table_kind(conn: &Conn, db: &str, table: &str) -> Result<String> {
    let kinds = conn.texts(
        "SELECT CASE WHEN wr THEN 'table without rowid' ELSE type END FROM pragma_table_list WHERE schema = ?1 AND name = ?2 COLLATE NOCASE",
        |s| unsafe {
            bind_text(s, 1, db);
            bind_text(s, 2, table);
        },
    )?;
    Ok(kinds.into_iter().next().unwrap_or_else(|| "table that is gone".into()))
}

/// Refuses when a virtual table could have received a placeholder: those
/// are not seen by the pre-update hook.
fn check_virtual(conn: &Conn, footprint: &Footprint, cells: &[Cell], streamed: &[Streamed]) -> Result<()> {
    for (db, table, top) in &footprint.writes {
        if table_kind(conn, if db.is_empty() { "main" } else { db }, table)? != "virtual" {
            continue;
        }
        let read = cells.iter().find(|c| {
            *top || footprint
                .trigger_reads
                .iter()
                .any(|(t, col)| t.eq_ignore_ascii_case(&c.table) && col.eq_ignore_ascii_case(&c.column))
        });
        if *top || read.is_some() {
            let label = read.map_or_else(|| streamed[0].label.as_str(), |c| streamed[c.which].label.as_str());
            return Err(Error::BadParam(format!(
                "{label}: this statement writes the virtual table {table}, which could receive a streamed Blob or File as a placeholder; pass the value below {} bytes or as bytes",
                crate::codec::stream::STREAM_LIMIT
            )));
        }
    }
    Ok(())
}

/// Gives every target cell its value's length (zeros for now). Triggers are
/// off meanwhile: this is the statement's own write finishing, not a new one.
fn resize(conn: &Conn, cells: &[Cell], streamed: &[Streamed]) -> Result<()> {
    conn.set_triggers(false)?;
    let result = cells.iter().try_for_each(|c| {
        let sql = format!("UPDATE {}.{} SET {} = zeroblob(?1) WHERE rowid = ?2", quote_ident(&c.db), quote_ident(&c.table), quote_ident(&c.column));
        conn.row(&sql, |s| unsafe {
            ffi::sqlite3_bind_int64(s, 1, streamed[c.which].size as i64);
            ffi::sqlite3_bind_int64(s, 2, c.rowid);
        })
        .map(|_| ())
    });
    conn.set_triggers(true)?;
    result
}
