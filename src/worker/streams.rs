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
//! expression), one in a table without a rowid or in a virtual table's own
//! tables, one a virtual table could have seen (the statement writes one
//! directly, or a trigger that writes one reads a column the value was
//! seen in, or a view's column), and, for a write whose rows `query`
//! returns, one its `RETURNING` could have seen (see `refuse::returning`).
//!
//! Refused with `RESQ_UNSUPPORTED`: a cell whose table would judge the
//! value by its placeholder (a CHECK, a partial index's `WHERE`, an index)
//! or that blob I/O cannot write (generated columns, a foreign key); see
//! `refuse`. Bounded memory rules out the alternatives: every SQL way of
//! putting the bytes in such a cell (`UPDATE … SET data = data`, a copy
//! from a staging table, appending piece by piece) holds the value whole.

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
            let rc = unsafe {
                ffi::sqlite3_blob_write(t.raw(), chunk.as_ptr().cast(), chunk.len() as c_int, offset as c_int)
            };
            if rc != ffi::SQLITE_OK {
                return Err(conn.error(rc));
            }
        }
        Ok(())
    }
}

/// What the authorizer saw while the statement (and its triggers) was
/// prepared: the tables it writes and the columns it reads, each with the
/// trigger or view that does it (`None`: the statement itself, its
/// `RETURNING` clause included: SQLite codes that inline, with no
/// context of its own).
#[derive(Default)]
pub struct Footprint {
    writes: Vec<Access>,
    reads: Vec<Access>,
}

/// One table written, or one column read (`column` empty for a write).
struct Access {
    db: String,
    table: String,
    column: String,
    by: Option<String>,
}

/// Prepares the one statement of `sql` while noting its [`Footprint`].
pub fn prepare(conn: &Conn, sql: &str) -> Result<(Statement, Footprint)> {
    let mut footprint = Footprint::default();
    let (stmt, tail) = conn.prepare_noting(sql, 0, &mut |x| {
        let access = || Access {
            db: x.db.to_owned(),
            table: x.a.to_owned(),
            column: x.b.to_owned(),
            by: x.inner.map(str::to_owned),
        };
        match x.action {
            ffi::SQLITE_INSERT | ffi::SQLITE_UPDATE => {
                footprint.writes.push(Access { column: String::new(), ..access() })
            }
            ffi::SQLITE_READ if !x.b.is_empty() => footprint.reads.push(access()),
            _ => {}
        }
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
    pub unsafe fn note(
        &mut self,
        db: *mut ffi::sqlite3,
        op: c_int,
        schema: *const c_char,
        table: *const c_char,
        new_rowid: i64,
    ) {
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

/// `(changes, lastInsertRowid)` of the user's statement.
pub type Figures = (i64, i64);

/// Runs a prepared streaming statement and makes its target cells ready:
/// returns one [`Stream`] per streamed value, in order, and the
/// statement's figures. `step` steps the statement to the end (writing its
/// rows, for `query`) with the [`Watch`] told of every row change;
/// `returns_rows` says the statement has result columns (`RETURNING`).
/// On error the caller rolls back its savepoint.
pub fn run(
    conn: &Conn,
    footprint: &Footprint,
    streamed: &[Streamed],
    returns_rows: bool,
    step: impl FnOnce(&mut Watch) -> Result<()>,
) -> Result<(Vec<Stream>, Figures)> {
    let mut watch = Watch { placeholders: streamed.iter().map(|s| s.placeholder).collect(), hits: Vec::new() };
    let before = conn.total_changes();
    let stepped = step(&mut watch);
    // The user's statement's figures, read before the statements below
    // (the resize is an UPDATE per cell) replace them.
    let figures = conn.figures();
    if let Err(e) = stepped {
        return Err(refuse::step_failed(conn, footprint, streamed, e));
    }
    let Watch { placeholders, mut hits } = watch;
    // A statement that changed nothing (an UPDATE whose WHERE matched no
    // row) stored its values nowhere, rightly.
    let changed = conn.total_changes() != before;
    hits.sort();
    hits.dedup();
    let (cells, seen) = resolve(conn, hits, &placeholders)?;
    refuse::virtual_tables(conn, footprint, &seen, streamed)?;
    if returns_rows {
        refuse::returning(conn, footprint, &seen, streamed)?;
    }
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
    refuse::cells(conn, &cells, streamed)?;
    resize(conn, &cells, streamed)?;
    let streams = streamed
        .iter()
        .enumerate()
        .map(|(k, _)| {
            let targets = cells
                .iter()
                .filter(|c| c.which == k)
                .map(|c| {
                    conn.open_blob(&c.db, &c.table, &c.column, c.rowid, true)
                        .map_err(|e| refuse::unwritable(c, &streamed[k], e))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Stream { targets })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((streams, figures))
}

/// A cell that holds a placeholder once the statement is done.
struct Cell {
    db: String,
    table: String,
    column: String,
    rowid: i64,
    which: usize,
}

/// A column a placeholder was seen in while the statement ran (whether or
/// not its cell still holds it): schema, table, column, which placeholder.
struct Seen {
    db: String,
    table: String,
    column: String,
    which: usize,
}

/// Turns hits into cells (column names, a rowid table, the placeholder
/// still there) and the columns seen.
fn resolve(conn: &Conn, hits: Vec<Hit>, placeholders: &[Placeholder]) -> Result<(Vec<Cell>, Vec<Seen>)> {
    let mut cells = Vec::new();
    let mut seen = Vec::new();
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
            last = Some((h.db.clone(), h.table.clone(), table_columns(conn, &h.db, &h.table)?));
        }
        let columns = &last.as_ref().unwrap().2;
        let Some(column) = columns.get(h.column as usize) else { continue };
        if !seen.iter().any(|s: &Seen| s.db == h.db && s.table == h.table && s.column == *column && s.which == h.which)
        {
            seen.push(Seen { db: h.db.clone(), table: h.table.clone(), column: column.clone(), which: h.which });
        }
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
    Ok((cells, seen))
}

/// The names of a table's columns, generated ones included, in order.
fn table_columns(conn: &Conn, db: &str, table: &str) -> Result<Vec<String>> {
    conn.texts("SELECT name FROM pragma_table_xinfo(?2, ?1) ORDER BY cid", |s| unsafe {
        bind_text(s, 1, db);
        bind_text(s, 2, table);
    })
}

/// `table` (a rowid table), `without rowid`, `virtual`, `shadow`, `view`.
fn table_kind(conn: &Conn, db: &str, table: &str) -> Result<String> {
    let kinds = conn.texts(
        "SELECT CASE WHEN wr THEN 'table without rowid' ELSE type END FROM pragma_table_list WHERE schema = ?1 AND name = ?2 COLLATE NOCASE",
        |s| unsafe {
            bind_text(s, 1, if db.is_empty() { "main" } else { db });
            bind_text(s, 2, table);
        },
    )?;
    Ok(kinds.into_iter().next().unwrap_or_else(|| "table that is gone".into()))
}

/// Gives every target cell its value's length (zeros for now). Triggers are
/// off meanwhile: this is the statement's own write finishing, not a new one.
fn resize(conn: &Conn, cells: &[Cell], streamed: &[Streamed]) -> Result<()> {
    conn.set_triggers(false)?;
    let result = cells.iter().try_for_each(|c| {
        let sql = format!(
            "UPDATE {}.{} SET {} = zeroblob(?1) WHERE rowid = ?2",
            quote_ident(&c.db),
            quote_ident(&c.table),
            quote_ident(&c.column)
        );
        conn.row(&sql, |s| unsafe {
            ffi::sqlite3_bind_int64(s, 1, streamed[c.which].size as i64);
            ffi::sqlite3_bind_int64(s, 2, c.rowid);
        })
        .map(|_| ())
    });
    conn.set_triggers(true)?;
    result
}

/// The refusals: where a placeholder could be seen, or kept, in place of the
/// value's bytes. Each says the rule and the way out.
mod refuse {
    use super::*;
    use crate::codec::schema::{check_columns, partial_index_columns};
    use crate::codec::stream::STREAM_LIMIT;

    /// SQLite's extended code for a failed CHECK constraint.
    const SQLITE_CONSTRAINT_CHECK: i32 = 275;

    const AS_BYTES: &str =
        "pass the value as bytes (a Uint8Array: SQL then sees its bytes, and the worker holds it whole)";

    fn same(a: &str, b: &str) -> bool {
        a.eq_ignore_ascii_case(b)
    }

    /// The step failed. A CHECK constraint of a table the statement writes
    /// that reads a column of BLOB affinity (declared BLOB, or with no
    /// type: where media goes) may have failed on the placeholder: say so,
    /// after SQLite's message. Which column the value went to is not known
    /// (the row was never written), so a CHECK on a TEXT or INTEGER column
    /// keeps SQLite's error. Any other error is SQLite's.
    pub fn step_failed(conn: &Conn, footprint: &Footprint, streamed: &[Streamed], e: Error) -> Error {
        let Error::Sqlite { errno: SQLITE_CONSTRAINT_CHECK, message } = &e else { return e };
        // SQLite names the constraint, or gives its expression's text.
        let failed = message.split_once(": ").map(|(_, x)| check_columns(&format!("CHECK({x})"))).unwrap_or_default();
        for w in &footprint.writes {
            let db = if w.db.is_empty() { "main" } else { &w.db };
            let blobs = conn.texts(
                "SELECT name FROM pragma_table_xinfo(?2, ?1) WHERE type = '' OR upper(type) LIKE '%BLOB%' ORDER BY cid",
                |s| unsafe {
                    bind_text(s, 1, db);
                    bind_text(s, 2, &w.table);
                },
            );
            let Ok(columns) = blobs else { continue };
            let Ok(checked) = checked_columns(conn, db, &w.table, &columns) else { continue };
            let named: Vec<&String> = checked.iter().filter(|c| failed.iter().any(|f| same(f, c))).collect();
            let read = if named.is_empty() { checked.iter().collect() } else { named };
            if !read.is_empty() {
                let read: Vec<&str> = read.iter().map(|c| c.as_str()).collect();
                return Error::Unsupported(format!(
                    "{message} ({} streams, and SQLite evaluates a CHECK on a streamed Blob or File's 32-byte placeholder, never on its bytes; a CHECK of {} reads {}: if the value goes there, {AS_BYTES}, or drop the constraint)",
                    streamed[0].label,
                    w.table,
                    read.join(", ")
                ));
            }
        }
        e
    }

    /// The columns of `table` that its CHECK constraints read.
    fn checked_columns(conn: &Conn, db: &str, table: &str, columns: &[String]) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT sql FROM {}.sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE",
            quote_ident(db)
        );
        let create = conn.texts(&sql, |s| unsafe { bind_text(s, 1, table) })?;
        let named = create.first().map(|c| check_columns(c)).unwrap_or_default();
        Ok(columns.iter().filter(|c| named.iter().any(|n| same(n, c))).cloned().collect())
    }

    /// A virtual table the statement writes could receive a placeholder
    /// (no hook sees its rows). The statement writing it itself: refused
    /// (any of its values may go there). A trigger writing it: refused
    /// unless no read of the statement could carry the value there: none of
    /// a column a placeholder was seen in, nor of a view's column (an
    /// `INSTEAD OF` trigger's `NEW` row holds the statement's values, and
    /// no hook sees a view's rows either, so the value could be in any).
    pub fn virtual_tables(conn: &Conn, footprint: &Footprint, seen: &[Seen], streamed: &[Streamed]) -> Result<()> {
        let mut views: Vec<(String, bool)> = Vec::new();
        for w in &footprint.writes {
            if table_kind(conn, &w.db, &w.table)? != "virtual" {
                continue;
            }
            let carrier = match &w.by {
                None => Some((streamed[0].label.as_str(), String::new())),
                Some(by) => {
                    let mut found = None;
                    for r in &footprint.reads {
                        if let Some(s) = seen.iter().find(|s| same(&s.table, &r.table) && same(&s.column, &r.column)) {
                            found = Some((
                                streamed[s.which].label.as_str(),
                                format!(" through {by}, which reads {}.{}", r.table, r.column),
                            ));
                            break;
                        }
                        let key = format!("{}.{}", r.db, r.table).to_ascii_lowercase();
                        let is_view = match views.iter().find(|(k, _)| *k == key) {
                            Some((_, v)) => *v,
                            None => {
                                let v = table_kind(conn, &r.db, &r.table)? == "view";
                                views.push((key, v));
                                v
                            }
                        };
                        if is_view {
                            found = Some((streamed[0].label.as_str(), format!(" through {by}, which reads the view {}'s {} (a view's rows pass no hook, so the value may be in any of its columns)", r.table, r.column)));
                            break;
                        }
                    }
                    found
                }
            };
            if let Some((label, road)) = carrier {
                return Err(Error::BadParam(format!(
                    "{label}: this statement writes the virtual table {}{road}, which could receive a streamed Blob or File as its 32-byte placeholder; pass the value below {STREAM_LIMIT} bytes or as bytes, or store it with a statement that writes no virtual table",
                    w.table
                )));
            }
        }
        Ok(())
    }

    /// A write with `RETURNING` computes its rows while each cell holds the
    /// placeholder, so a returned expression over a column a streamed value
    /// goes into would be computed on the placeholder (`length(data)` 32,
    /// `data` the placeholder itself). Rather than re-read the values after
    /// they are written (which would hold them whole in wasm memory), such a
    /// statement is refused: any read of such a column that is not a
    /// trigger's (the `RETURNING` clause, and the statement's own `WHERE`
    /// or `SET`, which SQLite's authorizer does not tell apart). A
    /// placeholder returned as such (`RETURNING ?1`) is caught as rows are
    /// written (see `Db::query`).
    pub fn returning(conn: &Conn, footprint: &Footprint, seen: &[Seen], streamed: &[Streamed]) -> Result<()> {
        let triggers = conn.texts("SELECT name FROM main.sqlite_schema WHERE type = 'trigger' UNION ALL SELECT name FROM temp.sqlite_schema WHERE type = 'trigger'", |_| {})?;
        for r in &footprint.reads {
            if r.by.as_ref().is_some_and(|by| triggers.iter().any(|t| same(t, by))) {
                continue;
            }
            if let Some(s) = seen.iter().find(|s| same(&s.table, &r.table) && same(&s.column, &r.column)) {
                return Err(Error::BadParam(format!(
                    "{}: this statement reads {}.{}, where a streamed Blob or File goes, outside a trigger (in RETURNING, or its WHERE or SET), and would see the value's 32-byte placeholder there, not its bytes; return the rowid or key instead (RETURNING id) and read the value with readBlob, blobStream or blobFile",
                    streamed[s.which].label, r.table, r.column
                )));
            }
        }
        Ok(())
    }

    /// The cells' tables: none may compute anything from the cell that
    /// would keep what it saw of the placeholder, or the zeros of the
    /// resize: a generated column (SQLite's blob I/O opens no such table
    /// anyway), a CHECK constraint, a partial index's `WHERE`. (An index on
    /// the column, or on any expression, is refused by the blob open: see
    /// [`unwritable`].)
    pub fn cells(conn: &Conn, cells: &[Cell], streamed: &[Streamed]) -> Result<()> {
        let mut done: Vec<(&str, &str, &str)> = Vec::new();
        for c in cells {
            if done.contains(&(c.db.as_str(), c.table.as_str(), c.column.as_str())) {
                continue;
            }
            done.push((&c.db, &c.table, &c.column));
            let label = &streamed[c.which].label;
            let generated = conn.texts(
                "SELECT name FROM pragma_table_xinfo(?2, ?1) WHERE hidden IN (2, 3) ORDER BY cid",
                |s| unsafe {
                    bind_text(s, 1, &c.db);
                    bind_text(s, 2, &c.table);
                },
            )?;
            if !generated.is_empty() {
                return Err(Error::Unsupported(format!(
                    "{label}: a streamed Blob or File went into {}.{}, and {} has generated columns ({}): a value of {STREAM_LIMIT} bytes or more is written chunk by chunk through SQLite's incremental blob I/O, which cannot open a table with generated columns; {AS_BYTES}, or keep media in a table without generated columns (compute the column in a view)",
                    c.table,
                    c.column,
                    c.table,
                    generated.join(", ")
                )));
            }
            let columns = table_columns(conn, &c.db, &c.table)?;
            if checked_columns(conn, &c.db, &c.table, &columns)?.iter().any(|x| same(x, &c.column)) {
                return Err(Error::Unsupported(format!(
                    "{label}: a CHECK constraint of {} reads {}, where a streamed Blob or File goes; SQLite evaluates it on the value's 32-byte placeholder and on zeros, never on its bytes: {AS_BYTES}, or drop the constraint",
                    c.table, c.column
                )));
            }
            // Unit separator between name and SQL: the text is read as a C string.
            let sql = format!("SELECT name || char(31) || sql FROM {}.sqlite_schema WHERE type = 'index' AND tbl_name = ?1 COLLATE NOCASE AND sql IS NOT NULL", quote_ident(&c.db));
            for index in conn.texts(&sql, |s| unsafe { bind_text(s, 1, &c.table) })? {
                let (name, create) = index.split_once('\u{1f}').unwrap_or(("", &index));
                if partial_index_columns(create).iter().any(|x| same(x, &c.column)) {
                    return Err(Error::Unsupported(format!(
                        "{label}: the partial index {name} of {} reads {} in its WHERE, where a streamed Blob or File goes; SQLite would place the row in it by the value's 32-byte placeholder and zeros, never by its bytes: {AS_BYTES}, or drop the index",
                        c.table, c.column
                    )));
                }
            }
        }
        Ok(())
    }

    /// The blob open for writing failed: a column SQLite's blob I/O cannot
    /// write says which rule, the rest is SQLite's error.
    pub fn unwritable(c: &Cell, s: &Streamed, e: Error) -> Error {
        let message = e.to_string();
        let why = if message.contains("cannot open indexed column") {
            format!("{}.{} is indexed, or {} has an index on an expression, and that index would be built from the value's 32-byte placeholder", c.table, c.column, c.table)
        } else if message.contains("cannot open foreign key column") {
            format!("{}.{} is part of a foreign key (PRAGMA foreign_keys is on), which would be checked against the value's 32-byte placeholder", c.table, c.column)
        } else {
            return e;
        };
        Error::Unsupported(format!(
            "{}: a streamed Blob or File is written through SQLite's incremental blob I/O, which cannot write this column: {why}; {AS_BYTES}, or drop the index or key",
            s.label
        ))
    }
}
