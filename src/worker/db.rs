//! One SQLite connection as the package uses it: a statement cache
//! (`cache`), a parameter arena and a JSON buffer (`rows`) that live as
//! long as the connection (seed 001), the loops behind `execute`, `query`,
//! `queryBytes` and `executeBatch`, and the savepoints of scripts, batches
//! and streaming calls. Two parts have files of their own: `Blob` values
//! that stream into their cells after the call (`streamed`), and the
//! database as a file, exported and imported (`file`). It takes and
//! returns Rust values only; `entry.rs` converts from and to JS.
//!
//! Every statement is reset and its bindings cleared when a call ends, on
//! every path, so a failed call leaves nothing bound or locked behind it.

use super::backfill::Backfill;
use super::backup::Export;
use super::cache::{bind_arena, Cache};
use super::cipher::{self, Key};
use super::conn::Conn;
use super::hooks::Hooks;
use super::journal;
use super::reads::Reads;
use super::rows::RowWriter;
pub use super::rows::Rows;
use super::streams::{Stream, Streamed};
use super::tables;
use crate::codec::changes::{Mark, SCHEMA};
use crate::codec::params::{plan, Supplied};
use crate::codec::stream::Placeholders;
use crate::codec::value::Arena;
use crate::codec::{sql, Error, Result};
use sqlite_wasm_rs as ffi;
use std::cell::Cell;

pub use super::streams::Figures;

mod blobs;
mod file;
mod streamed;
mod wal;

/// Fills the arena with one call's values, given the statement's parameter
/// names (SQLite's order, `None` for a bare `?`). Returns the labels of the
/// values that stream (`Value::Streamed`), in order.
pub type Bind<'a> = dyn FnMut(&[Option<String>], &mut Arena) -> Result<Vec<String>> + 'a;

/// [`Bind`] for `executeBatch`: binds parameter set `n`.
pub type BindSet<'a> = dyn FnMut(usize, &[Option<String>], &mut Arena) -> Result<Vec<String>> + 'a;

const ONE_STATEMENT: &str = "with parameters, execute takes exactly one statement (run a script without parameters)";

/// A savepoint's three statements, written out once each.
pub struct Savepoint {
    pub begin: &'static str,
    pub release: &'static str,
    pub rollback: &'static str,
}

const SCRIPT: Savepoint =
    Savepoint { begin: "SAVEPOINT resq_script", release: "RELEASE resq_script", rollback: "ROLLBACK TO resq_script" };
const BATCH: Savepoint =
    Savepoint { begin: "SAVEPOINT resq_batch", release: "RELEASE resq_batch", rollback: "ROLLBACK TO resq_batch" };

/// An `executeBatch` in parts (see [`Db::execute_batch`]): where its
/// savepoint began, and the sets run and rows changed by its parts so far.
struct Parts {
    mark: Mark,
    sets: usize,
    changes: i64,
}

// Field order is drop order: statements and blob handles before the
// connection. The hooks are removed first, by `Drop`.
pub struct Db {
    cache: Cache,
    /// Target cells of a streaming `execute`, between its statement and
    /// [`Db::stream_end`].
    streams: Vec<Stream>,
    /// Where the streaming `execute`'s savepoint began.
    stream_mark: Mark,
    /// An `executeBatch` in parts, between its first part and its last.
    batch: Option<Parts>,
    /// The `export()` in progress: its reading statement stays open
    /// between reads.
    export: Option<Export>,
    reads: Reads,
    hooks: Hooks,
    arena: Arena,
    /// Where `query`/`queryBytes` write their rows.
    pub rows: RowWriter,
    placeholders: Placeholders,
    /// The calls run for a `transaction()` callback: their SQL may not
    /// begin or end the transaction (see [`Db::set_transaction_callback`]).
    in_callback: bool,
    /// A new database on OPFS not yet moved to WAL (`journal::settle`).
    wal_due: Cell<bool>,
    /// A reader beside the writer (see [`Db::open_reader`]).
    reader: bool,
    /// The page size, once a checkpoint's schedule needed it (0 before).
    page_size: i64,
    /// A checkpoint in slices, planned and not yet done.
    backfill: Option<Backfill>,
    /// Whether a checkpoint was due, and the commits and WAL frames then
    /// (see [`Db::checkpoint_due`]).
    due: Option<((u64, i32), bool)>,
    /// The database file's size in pages, as far as the commits since the
    /// last whole checkpoint tell (see `Db::shrinks`).
    file_pages: Option<u32>,
    conn: Conn,
}

impl Db {
    /// Opens `name` with `vfs` (`None`: memory). `seed` makes this
    /// connection's stream placeholders its own (any random number).
    ///
    /// With a `key` (OPFS only), the connection opens on the encrypting VFS
    /// over `vfs` and is keyed before anything reads the file; with
    /// `encrypt` too, a plain file is encrypted under it as it opens (see
    /// `cipher::open_to_encrypt`).
    pub fn open(
        name: &str,
        vfs: Option<&str>,
        key: Option<&Key>,
        encrypt: bool,
        blob_threshold: usize,
        seed: u64,
    ) -> Result<Db> {
        let conn = match (vfs, key) {
            (Some(vfs), Some(key)) if encrypt => cipher::open_to_encrypt(name, vfs, key)?,
            _ => cipher::open(name, vfs, key)?,
        };
        let mut db = Db::with(conn, blob_threshold, seed, false);
        if vfs.is_some() {
            db.wal_due.set(journal::open(&db.conn)?);
        } else {
            db.exec_simple("PRAGMA journal_mode=MEMORY")?;
        }
        Ok(db)
    }

    /// Opens a reader of `name` on `vfs` beside the writer this worker has
    /// open (see `entry::Connection::reader`): under WAL it reads the last
    /// commit while the writer writes. It runs only statements that write
    /// nothing and leave the transaction alone; for anything else (and for
    /// SQL it cannot prepare: a temporary table, an attached database of
    /// the writer's) it answers [`Error::OnWriter`]. A database not in WAL
    /// mode yet has no readers.
    pub fn open_reader(name: &str, vfs: &str, key: Option<&Key>, blob_threshold: usize, seed: u64) -> Result<Db> {
        let conn = cipher::open(name, Some(vfs), key)?;
        if !journal::in_wal(&conn)? {
            return Err(Error::OnWriter);
        }
        Ok(Db::with(conn, blob_threshold, seed, true))
    }

    fn with(conn: Conn, blob_threshold: usize, seed: u64, reader: bool) -> Db {
        let reads = Reads::new();
        let hooks = Hooks::install(&conn, reads.sessions());
        Db {
            cache: Cache::default(),
            streams: Vec::new(),
            stream_mark: Mark::default(),
            batch: None,
            export: None,
            reads,
            hooks,
            arena: Arena::default(),
            rows: RowWriter::new(blob_threshold),
            placeholders: Placeholders::new(seed),
            in_callback: false,
            wal_due: Cell::new(false),
            reader,
            page_size: 0,
            backfill: None,
            due: None,
            file_pages: None,
            conn,
        }
    }

    /// Binds one call's values to cached statement `at` (see [`Bind`]),
    /// which then runs. Returns what streams (nothing unless
    /// `Value::Streamed` was bound).
    fn bind(&mut self, at: usize, bind: &mut Bind) -> Result<Vec<Streamed>> {
        self.arena.clear();
        let labels = bind(&self.cache[at].names, &mut self.arena)?;
        let streamed = bind_arena(&self.conn, self.cache[at].stmt.raw(), &self.arena, &mut self.placeholders, labels)?;
        self.before_step(self.cache[at].changes_schema);
        Ok(streamed)
    }

    /// Call before a user statement steps, with whether it is DDL. No hook
    /// sees the schema table written, so its change is marked here, pending
    /// in the statement's transaction like the rows the hooks report.
    fn before_step(&self, changes_schema: bool) {
        self.settle_journal();
        if changes_schema {
            self.hooks.changes().changed(SCHEMA);
        }
    }

    /// A new database moves to WAL here, before the first statement after
    /// its first commit (if SQLite cannot yet, the next statement tries).
    /// Every path a user statement steps on calls it first: a plain one's
    /// (`before_step`), and a savepoint's begun outside a transaction, as a
    /// streamed value's, a batch's and a following tab's recorded call's
    /// are (inside one, nothing can move).
    fn settle_journal(&self) {
        if self.wal_due.get() {
            self.wal_due.set(journal::settle(&self.conn).unwrap_or(true));
        }
    }

    /// Resets a cached statement and drops its bindings (every path).
    fn release(&mut self, at: usize) {
        let stmt = self.cache[at].stmt.raw();
        unsafe {
            ffi::sqlite3_reset(stmt);
            ffi::sqlite3_clear_bindings(stmt);
        }
        self.arena.clear();
    }

    /// Runs one parameterless statement (savepoints, pragmas).
    fn exec_simple(&mut self, sql: &str) -> Result<()> {
        let at =
            self.cache.prepare(&self.conn, sql)?.ok_or_else(|| Error::BadParam("one statement expected".into()))?;
        let r = self.conn.step_all(self.cache[at].stmt.raw());
        self.release(at);
        r
    }

    /// Begins savepoint `sp`; the mark is for [`Db::end_savepoint`].
    pub fn begin_savepoint(&mut self, sp: &Savepoint) -> Result<Mark> {
        self.settle_journal();
        let mark = self.hooks.changes().mark();
        self.exec_simple(sp.begin)?;
        Ok(mark)
    }

    /// Ends savepoint `sp`, begun at `mark`: releases it when `result` is a
    /// success (undoing it if the release itself fails, as a deferred
    /// foreign key can), else rolls it back. The one place a savepoint ends.
    pub fn end_savepoint<T>(&mut self, sp: &Savepoint, mark: Mark, result: Result<T>) -> Result<T> {
        let result = result.and_then(|v| self.exec_simple(sp.release).map(|_| v));
        if result.is_err() {
            // Before the release, which commits when the savepoint was the
            // transaction.
            self.hooks.changes().rolled_back_to(mark);
            // Best effort: if SQLite already rolled the transaction back
            // (some errors do), these fail harmlessly.
            let _ = self.exec_simple(sp.rollback);
            let _ = self.exec_simple(sp.release);
            self.reads.rolled_back();
        }
        result
    }

    /// Marks the calls that follow as run for a `transaction()` callback, or
    /// not. The package begins and ends that transaction; a `COMMIT` or
    /// `ROLLBACK` of the callback's would end it early, and its later
    /// statements would commit one by one though `transaction()` then fails.
    pub fn set_transaction_callback(&mut self, on: bool) {
        self.in_callback = on;
    }

    /// The SQLite handle, for the engine's own bookkeeping (`calls`).
    pub fn conn(&self) -> &Conn {
        &self.conn
    }

    /// A transaction is open (the connection is not in autocommit mode).
    pub fn in_transaction(&self) -> bool {
        self.conn.in_transaction()
    }

    /// Refuses, before anything runs, SQL text that is too long, and in a
    /// `transaction()` callback a statement that begins or ends the
    /// transaction.
    fn admit(&self, sql: &str) -> Result<()> {
        sql::check_length(sql)?;
        self.admit_statement(sql)
    }

    fn admit_statement(&self, stmt: &str) -> Result<()> {
        if self.in_callback && sql::ends_transaction(stmt) {
            return Err(Error::BadParam(
                "inside transaction(), the package begins and ends the transaction: the callback's SQL may not BEGIN, COMMIT, END or ROLLBACK (SAVEPOINT, RELEASE and ROLLBACK TO nest)".into(),
            ));
        }
        Ok(())
    }

    /// `execute`: one statement with parameters, or a script without (`bind`
    /// is `None`). A statement that binds streamed values returns with its
    /// target cells open: write them with [`Db::stream_write`] and end with
    /// [`Db::stream_end`] (see [`Db::streaming`]).
    pub fn execute(&mut self, sql: &str, bind: Option<&mut Bind>) -> Result<Figures> {
        if self.reader {
            return Err(Error::OnWriter);
        }
        self.admit(sql)?;
        let at = match self.cache.prepare(&self.conn, sql) {
            Ok(Some(at)) => at,
            Ok(None) if bind.is_none() => return self.exec_script(sql),
            Ok(None) => return Err(Error::BadParam(ONE_STATEMENT.into())),
            // A script of only comments is not an error; it does nothing.
            Err(Error::BadParam(_)) if bind.is_none() => return Ok(self.conn.figures()),
            Err(e) => return Err(e),
        };
        // No values given: the statement must have no parameters either.
        let mut no_values = |names: &[Option<String>], _: &mut Arena| plan(names, Supplied::None).map(|_| Vec::new());
        let bind: &mut Bind = match bind {
            Some(b) => b,
            None => &mut no_values,
        };
        // Bound once from the cache; a call with streamed values is run again
        // on a statement of its own (see `execute_streaming`).
        let result = self.bind(at, bind).and_then(|streamed| {
            if streamed.is_empty() {
                self.conn.step_all(self.cache[at].stmt.raw()).map(|_| false)
            } else {
                Ok(true)
            }
        });
        self.release(at);
        if sql::is_rollback(sql) {
            self.reads.rolled_back();
        }
        match result {
            Ok(false) => Ok(self.conn.figures()),
            Ok(true) => self.execute_streaming(sql, bind),
            Err(e) => Err(e),
        }
    }

    /// Runs a script statement by statement. The script is atomic (one
    /// savepoint) unless it manages transactions itself; then what ran before
    /// its first BEGIN/COMMIT/… is committed as that statement would.
    fn exec_script(&mut self, script: &str) -> Result<Figures> {
        // NUL-terminated, so SQLite parses the text in place: without the
        // terminator it copies all the rest of the script for each statement,
        // quadratic in the script's length (40,000 statements took 2.8 s).
        let script = format!("{script}\0");
        let mark = self.begin_savepoint(&SCRIPT)?;
        let mut wrapped = true;
        let mut rest = script.as_str();
        let result = loop {
            let (stmt, tail) = match self.conn.prepare(rest, 0) {
                Ok(p) => p,
                Err(e) => break Err(e),
            };
            let Some(stmt) = stmt else { break Ok(()) };
            let text = &rest[..rest.len() - tail.len()];
            if let Err(e) = self.admit_statement(text) {
                break Err(e);
            }
            // A script takes no values: a parameter in it would silently be NULL.
            if unsafe { ffi::sqlite3_bind_parameter_count(stmt.raw()) } > 0 {
                break Err(Error::BadParam(format!(
                    "a script takes no values, but this statement of it has parameters: {}",
                    text.trim()
                )));
            }
            if wrapped && sql::controls_transaction(text) {
                wrapped = false;
                self.end_savepoint(&SCRIPT, mark, Ok(()))?;
            }
            self.before_step(sql::changes_schema(text));
            let r = self.conn.step_all(stmt.raw());
            if sql::is_rollback(text) {
                self.reads.rolled_back();
            }
            if let Err(e) = r {
                break Err(e);
            }
            rest = tail;
        };
        let figures = self.conn.figures();
        let result = if wrapped { self.end_savepoint(&SCRIPT, mark, result) } else { result };
        result.map(|_| figures)
    }

    /// `executeBatch`: one statement, once per parameter set (`bind(n, …)`
    /// binds set `n` of this call), all or nothing. A batch may come in
    /// parts, when the worker reads its `Blob`s a part at a time (`more`:
    /// parts follow this one): its savepoint stays open from the first
    /// part until the last one, or a failure, ends it, so the whole batch
    /// is still all or nothing. The sets are numbered across the whole
    /// batch, and the figures are those of every part so far.
    pub fn execute_batch(&mut self, sql: &str, sets: usize, bind: &mut BindSet, more: bool) -> Result<Figures> {
        if self.reader {
            return Err(Error::OnWriter);
        }
        let parts = match self.batch.take() {
            Some(parts) => parts,
            None => Parts { mark: self.begin_savepoint(&BATCH)?, sets: 0, changes: 0 },
        };
        let changes = self.run_sets(sql, parts.sets, sets, bind).map(|n| parts.changes + n);
        let rowid = self.conn.figures().1;
        match changes {
            Ok(changes) if more => {
                self.batch = Some(Parts { sets: parts.sets + sets, changes, ..parts });
                Ok((changes, rowid))
            }
            result => self.end_savepoint(&BATCH, parts.mark, result.map(|changes| (changes, rowid))),
        }
    }

    /// Ends an `executeBatch` in parts before its last part (the worker
    /// could not read the next part's values): every part is undone.
    pub fn batch_abort(&mut self) {
        if let Some(parts) = self.batch.take() {
            let stopped = Err::<(), _>(Error::BadParam("the batch was stopped before its last part".into()));
            let _ = self.end_savepoint(&BATCH, parts.mark, stopped);
        }
    }

    /// Runs one statement once per parameter set, for `sets` sets of which
    /// the first is set `first` of its batch (from 0): the rows they changed.
    fn run_sets(&mut self, sql: &str, first: usize, sets: usize, bind: &mut BindSet) -> Result<i64> {
        self.admit(sql)?;
        // Prepared inside the batch's savepoint: nothing below touches the
        // cache again, so `at` stays valid for every set.
        let at = self
            .cache
            .prepare(&self.conn, sql)?
            .ok_or_else(|| Error::BadParam("executeBatch takes exactly one statement".into()))?;
        let mut changes = 0i64;
        for n in 0..sets {
            let r =
                self.bind(at, &mut |names, arena| bind(n, names, arena)).and_then(|streamed| match streamed.first() {
                    Some(s) => Err(Error::BadParam(format!(
                        "{}: a Blob or File this large streams, and only execute() takes one",
                        s.label
                    ))),
                    None => self.conn.step_all(self.cache[at].stmt.raw()),
                });
            self.release(at);
            match r {
                Ok(()) => changes += self.conn.figures().0,
                Err(Error::BadParam(m)) => {
                    return Err(Error::BadParam(format!("parameter set {}: {m}", first + n + 1)))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(changes)
    }

    /// `query`/`queryBytes`: runs one statement and writes its rows into
    /// `self.rows` (its fix-ups too, for [`Rows::Objects`]). BLOBs at or
    /// above the threshold go to `own`, which returns their index. A write
    /// (one with `RETURNING`) takes streamed values, as `execute` does, and
    /// returns with its target cells open (see [`Db::streaming`]).
    pub fn query(
        &mut self,
        sql: &str,
        bind: &mut Bind,
        mode: Rows,
        own: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<Vec<String>> {
        self.admit(sql)?;
        let at = match self.cache.prepare(&self.conn, sql) {
            Err(_) if self.reader => return Err(Error::OnWriter),
            prepared => prepared?.ok_or_else(|| Error::BadParam("query takes exactly one statement".into()))?,
        };
        if self.reader
            && (sql::controls_transaction(sql) || unsafe { ffi::sqlite3_stmt_readonly(self.cache[at].stmt.raw()) } == 0)
        {
            return Err(Error::OnWriter);
        }
        let result = self.bind(at, bind).and_then(|streamed| {
            let stmt = self.cache[at].stmt.raw();
            match streamed.first() {
                None => {
                    let mut cols = std::mem::take(&mut self.cache[at].columns);
                    let names = self.rows.write(&self.conn, stmt, &mut cols, mode, own, &[]);
                    self.cache[at].columns = cols;
                    names.map(Some)
                }
                // A statement that writes nothing can only have used the
                // value in an expression, where SQL sees its placeholder.
                Some(s) if unsafe { ffi::sqlite3_stmt_readonly(stmt) } != 0 => Err(Error::BadParam(format!(
                    "{}: a Blob or File of {} bytes streams into the cell a write stores it in, so a statement that writes nothing cannot take it (SQL would see a placeholder); pass it below {} bytes or as bytes",
                    s.label,
                    s.size,
                    crate::codec::stream::STREAM_LIMIT
                ))),
                Some(_) => Ok(None),
            }
        });
        self.release(at);
        match result {
            Ok(Some(names)) => Ok(names),
            Ok(None) => self.query_streaming(sql, bind, mode, own),
            Err(e) => Err(e),
        }
    }

    /// `queryTables`: the tables of `main` the one query in `sql` reads.
    pub fn query_tables(&mut self, sql: &str) -> Result<Vec<String>> {
        self.admit(sql)?;
        tables::query_tables(&self.conn, sql)
    }

    /// `takeChanged`: the tables of `main` that transactions committed since
    /// the last call changed (see [`crate::codec::changes`]), sorted, and
    /// [`SCHEMA`] when one of them ran DDL.
    pub fn take_changed(&mut self) -> Vec<String> {
        self.hooks.changes().take()
    }

    /// Closes the connection; a second call does nothing.
    pub fn close(&mut self) -> Result<()> {
        self.export_end();
        if !self.streams.is_empty() {
            let _ = self.stream_end(false);
        }
        self.batch_abort();
        self.reads.drop_handle();
        self.hooks.remove(&self.conn);
        self.cache.clear();
        self.conn.close()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // Closing a connection rolls back its open transaction, which would
        // call the rollback hook after its listeners are gone.
        self.hooks.remove(&self.conn);
    }
}
