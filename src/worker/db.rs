//! One SQLite connection: a statement cache keyed by SQL, a parameter arena
//! and a JSON buffer that live as long as the connection (seed 001), and the
//! loops behind `execute`, `query`, `queryBytes` and `executeBatch`.
//!
//! Every statement is reset and its bindings cleared when a call ends, on
//! every path, so a failed call leaves nothing bound or locked behind it.

use super::blobs::{PendingBlob, Stream};
use super::convert::{push_value, Params};
use crate::codec::json::{encoded_key, JsonWriter};
use crate::codec::params::plan;
use crate::codec::value::{is_safe_integer, Arena, Value};
use crate::codec::wire::{last_of_name, Fixups, FIX_BIGINT, FIX_BLOB_OWN};
use crate::codec::{sql, Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::{c_char, CStr, CString};
use std::ptr;

/// Prepared statements kept per connection, most recently used first.
const CACHE_SIZE: usize = 64;

struct Cached {
    sql: String,
    stmt: *mut ffi::sqlite3_stmt,
    /// Parameter names in SQLite's order (`None` for a bare `?`).
    names: Vec<Option<String>>,
    /// Result columns as last seen, with their encoded JSON keys.
    columns: Columns,
}

/// A statement's result columns, kept between calls so a query encodes its
/// keys once, not once per call; checked against SQLite's names on every
/// call (a schema change re-prepares the statement and may rename them).
#[derive(Default)]
struct Columns {
    names: Vec<String>,
    /// `"name":`, for [`JsonWriter::encoded_key`].
    keys: Vec<Vec<u8>>,
    /// Whether each column is the last of its name (see `last_of_name`).
    last: Vec<bool>,
}

impl Columns {
    /// Brings the cached names up to date with `stmt` (after its first step).
    fn refresh(&mut self, stmt: *mut ffi::sqlite3_stmt) {
        let n = unsafe { ffi::sqlite3_column_count(stmt) } as usize;
        let name = |i: usize| unsafe {
            let p = ffi::sqlite3_column_name(stmt, i as i32);
            if p.is_null() {
                &[][..]
            } else {
                CStr::from_ptr(p).to_bytes()
            }
        };
        if self.names.len() == n && (0..n).all(|i| self.names[i].as_bytes() == name(i)) {
            return;
        }
        self.names = (0..n).map(|i| String::from_utf8_lossy(name(i)).into_owned()).collect();
        self.keys = self.names.iter().map(|k| encoded_key(k.as_bytes())).collect();
        self.last = last_of_name(&self.names);
    }
}

/// How `query` rows leave: as `queryBytes` JSON, or with fix-ups for `query`.
#[derive(Clone, Copy, PartialEq)]
pub enum Rows {
    Bytes,
    Objects,
}

pub struct Db {
    raw: *mut ffi::sqlite3,
    cache: Vec<Cached>,
    arena: Arena,
    pub json: JsonWriter,
    pub fixups: Fixups,
    /// BLOB results at or above this many bytes get a buffer of their own.
    pub blob_threshold: usize,
    /// `Blob` parameters of the call being bound.
    pending: Vec<PendingBlob>,
    /// `Blob` parameters of a streaming `execute`, between its statement and
    /// [`Db::stream_end`].
    pub(super) streams: Vec<Stream>,
    /// Chunk-sized scratch for incremental blob reads, kept between calls.
    pub(super) scratch: Vec<u8>,
    /// The read handle kept between blob reads of one cell: table, column, rowid.
    pub(super) read_cache: Option<(String, String, i64, *mut ffi::sqlite3_blob)>,
}

impl Db {
    pub fn open(name: &str, vfs: Option<&str>, blob_threshold: usize) -> Result<Db> {
        let c_name = cstring(name)?;
        let c_vfs = vfs.map(cstring).transpose()?;
        let mut raw = ptr::null_mut();
        let flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE | ffi::SQLITE_OPEN_EXRESCODE;
        let rc = unsafe {
            ffi::sqlite3_open_v2(c_name.as_ptr(), &mut raw, flags, c_vfs.as_ref().map_or(ptr::null(), |v| v.as_ptr()))
        };
        let mut db = Db {
            raw,
            cache: Vec::new(),
            arena: Arena::default(),
            json: JsonWriter::default(),
            fixups: Fixups::default(),
            blob_threshold,
            pending: Vec::new(),
            streams: Vec::new(),
            scratch: Vec::new(),
            read_cache: None,
        };
        if rc != ffi::SQLITE_OK {
            return Err(db.error(rc));
        }
        // A commit must reach the VFS's xSync (OPFS `flush()`): TRUNCATE keeps
        // the journal's pool slot and, with synchronous=FULL, syncs after the
        // truncation that marks the commit.
        let setup: &[&str] = if vfs.is_some() {
            &["PRAGMA journal_mode=TRUNCATE", "PRAGMA synchronous=FULL"]
        } else {
            &["PRAGMA journal_mode=MEMORY"]
        };
        for pragma in setup {
            db.exec_simple(pragma)?;
        }
        Ok(db)
    }

    pub(super) fn raw(&self) -> *mut ffi::sqlite3 {
        self.raw
    }

    /// The error SQLite just reported, with its extended code and message.
    pub(super) fn error(&self, rc: i32) -> Error {
        if self.raw.is_null() {
            return Error::Sqlite { errno: rc, message: "out of memory".into() };
        }
        let (errno, message) = unsafe {
            let code = ffi::sqlite3_extended_errcode(self.raw);
            let msg = CStr::from_ptr(ffi::sqlite3_errmsg(self.raw)).to_string_lossy().into_owned();
            (if code & 0xff == rc & 0xff { code } else { rc }, msg)
        };
        Error::Sqlite { errno, message }
    }

    /// A cached statement for exactly one statement of SQL. `Ok(None)` when
    /// the SQL holds more than one (a script), `BadParam` when it holds none.
    fn prepare_cached(&mut self, sql: &str) -> Result<Option<usize>> {
        if let Some(i) = self.cache.iter().position(|c| c.sql == sql) {
            let hit = self.cache.remove(i);
            self.cache.insert(0, hit);
            return Ok(Some(0));
        }
        let (stmt, tail) = self.prepare(sql, ffi::SQLITE_PREPARE_PERSISTENT)?;
        if stmt.is_null() {
            return Err(Error::BadParam("the SQL holds no statement".into()));
        }
        if !sql::is_blank(tail) {
            unsafe { ffi::sqlite3_finalize(stmt) };
            return Ok(None);
        }
        let count = unsafe { ffi::sqlite3_bind_parameter_count(stmt) };
        let names = (1..=count)
            .map(|i| unsafe {
                let p = ffi::sqlite3_bind_parameter_name(stmt, i);
                (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
            })
            .collect();
        if self.cache.len() == CACHE_SIZE {
            if let Some(old) = self.cache.pop() {
                unsafe { ffi::sqlite3_finalize(old.stmt) };
            }
        }
        self.cache.insert(0, Cached { sql: sql.to_owned(), stmt, names, columns: Columns::default() });
        Ok(Some(0))
    }

    /// Prepares the first statement of `sql`; returns it (null if none) and
    /// the SQL after it.
    pub(super) fn prepare<'s>(&self, sql: &'s str, flags: u32) -> Result<(*mut ffi::sqlite3_stmt, &'s str)> {
        let mut stmt = ptr::null_mut();
        let mut tail: *const c_char = ptr::null();
        let start = sql.as_ptr() as *const c_char;
        let rc = unsafe { ffi::sqlite3_prepare_v3(self.raw, start, sql.len() as i32, flags, &mut stmt, &mut tail) };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(rc));
        }
        let used = if tail.is_null() { sql.len() } else { tail as usize - start as usize };
        Ok((stmt, &sql[used..]))
    }

    /// Checks and binds one parameter set to cached statement `at`. `Blob`
    /// values are taken only when `stream` (they go to `self.pending`).
    fn bind(&mut self, at: usize, params: &Params, stream: bool) -> Result<()> {
        let slots = plan(&self.cache[at].names, params.supplied())?;
        self.arena.clear();
        self.pending.clear();
        for slot in &slots {
            let blobs = if stream { Some(&mut self.pending) } else { None };
            let label = || slot.label.describe(params.keys());
            push_value(&mut self.arena, &params.get(slot.value), label, blobs)?;
        }
        let stmt = self.cache[at].stmt;
        for (i, v) in self.arena.values().iter().enumerate() {
            let i = i as i32 + 1;
            // SQLITE_STATIC: the arena outlives the step; bindings are
            // cleared before the arena is reused.
            let rc = unsafe {
                match *v {
                    Value::Null => ffi::sqlite3_bind_null(stmt, i),
                    Value::Integer(n) => ffi::sqlite3_bind_int64(stmt, i, n),
                    Value::Real(f) => ffi::sqlite3_bind_double(stmt, i, f),
                    Value::Text(s) => {
                        let b = self.arena.bytes(s);
                        ffi::sqlite3_bind_text64(stmt, i, b.as_ptr().cast(), b.len() as u64, ffi::SQLITE_STATIC(), ffi::SQLITE_UTF8 as u8)
                    }
                    Value::Blob(s) => {
                        let b = self.arena.bytes(s);
                        if b.is_empty() {
                            // A null pointer would bind NULL; an empty BLOB is a zeroblob(0).
                            ffi::sqlite3_bind_zeroblob64(stmt, i, 0)
                        } else {
                            ffi::sqlite3_bind_blob64(stmt, i, b.as_ptr().cast(), b.len() as u64, ffi::SQLITE_STATIC())
                        }
                    }
                    Value::ZeroBlob(n) => ffi::sqlite3_bind_zeroblob64(stmt, i, n),
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(self.error(rc));
            }
        }
        Ok(())
    }

    /// Resets a cached statement and drops its bindings (every path).
    fn release(&mut self, at: usize) {
        let stmt = self.cache[at].stmt;
        unsafe {
            ffi::sqlite3_reset(stmt);
            ffi::sqlite3_clear_bindings(stmt);
        }
        self.arena.clear();
        self.pending.clear();
    }

    /// Steps a statement to the end, ignoring rows.
    fn step_all(&self, stmt: *mut ffi::sqlite3_stmt) -> Result<()> {
        loop {
            match unsafe { ffi::sqlite3_step(stmt) } {
                ffi::SQLITE_ROW => continue,
                ffi::SQLITE_DONE => return Ok(()),
                rc => return Err(self.error(rc)),
            }
        }
    }

    fn figures(&self) -> (i64, i64) {
        unsafe { (ffi::sqlite3_changes64(self.raw), ffi::sqlite3_last_insert_rowid(self.raw)) }
    }

    /// `execute`: one statement with parameters, or a script without.
    /// With `Blob` parameters it streams: see [`super::blobs`]; the caller
    /// then writes the chunks and ends with [`Db::stream_end`] when
    /// [`Db::streaming`] says so.
    pub fn execute(&mut self, sql: &str, params: &Params) -> Result<(i64, i64)> {
        if params.has_blob() {
            self.exec_simple("SAVEPOINT resq_stream")?;
            let r = self.execute_streaming(sql, params);
            if r.is_err() {
                self.undo_savepoint("resq_stream");
            }
            return r;
        }
        let at = match self.prepare_cached(sql) {
            Ok(Some(at)) => at,
            Ok(None) if matches!(params, Params::None) => return self.exec_script(sql),
            Ok(None) => {
                return Err(Error::BadParam(
                    "with parameters, execute takes exactly one statement (run a script without parameters)".into(),
                ))
            }
            // A script of only comments is not an error; it does nothing.
            Err(Error::BadParam(_)) if matches!(params, Params::None) => return Ok(self.figures()),
            Err(e) => return Err(e),
        };
        let result = self.bind(at, params, false).and_then(|_| self.step_all(self.cache[at].stmt));
        self.release(at);
        result.map(|_| self.figures())
    }

    fn execute_streaming(&mut self, sql: &str, params: &Params) -> Result<(i64, i64)> {
        let at = self.prepare_cached(sql)?.ok_or_else(|| {
            Error::BadParam("with parameters, execute takes exactly one statement (run a script without parameters)".into())
        })?;
        let stmt = self.cache[at].stmt;
        let (result, changed) = self.with_update_hook(|db| db.bind(at, params, true).and_then(|_| db.step_all(stmt)));
        let pending = std::mem::take(&mut self.pending);
        self.release(at);
        result?;
        let figures = self.figures();
        self.streams = self.locate(pending, changed)?;
        Ok(figures)
    }

    /// The `Blob`s the last `execute` still has to write, in stream order.
    pub fn streaming(&self) -> Vec<web_sys::Blob> {
        self.streams.iter().map(|s| s.blob.clone()).collect()
    }

    /// Runs a script statement by statement. The script is atomic (one
    /// savepoint) unless it manages transactions itself; then what ran before
    /// its first BEGIN/COMMIT/… is committed as that statement would.
    fn exec_script(&mut self, script: &str) -> Result<(i64, i64)> {
        self.exec_simple("SAVEPOINT resq_script")?;
        let mut wrapped = true;
        let mut rest = script;
        let result = loop {
            let (stmt, tail) = match self.prepare(rest, 0) {
                Ok(p) => p,
                Err(e) => break Err(e),
            };
            if stmt.is_null() {
                break Ok(());
            }
            let text = &rest[..rest.len() - tail.len()];
            // A script takes no values: a parameter in it would silently be NULL.
            if unsafe { ffi::sqlite3_bind_parameter_count(stmt) } > 0 {
                unsafe { ffi::sqlite3_finalize(stmt) };
                break Err(Error::BadParam(format!(
                    "a script takes no values, but this statement of it has parameters: {}",
                    text.trim()
                )));
            }
            if wrapped && sql::controls_transaction(text) {
                wrapped = false;
                if let Err(e) = self.exec_simple("RELEASE resq_script") {
                    unsafe { ffi::sqlite3_finalize(stmt) };
                    break Err(e);
                }
            }
            let r = self.step_all(stmt);
            unsafe { ffi::sqlite3_finalize(stmt) };
            if let Err(e) = r {
                break Err(e);
            }
            rest = tail;
        };
        let figures = self.figures();
        // RELEASE can fail too (a deferred foreign key checked at commit):
        // then undo the script rather than leave its savepoint open.
        let result = match result {
            Ok(()) if wrapped => self.exec_simple("RELEASE resq_script"),
            other => other,
        };
        match result {
            Ok(()) => Ok(figures),
            Err(e) => {
                if wrapped {
                    self.undo_savepoint("resq_script");
                }
                Err(e)
            }
        }
    }

    /// Runs one parameterless statement (savepoints, pragmas).
    pub(super) fn exec_simple(&mut self, sql: &str) -> Result<()> {
        let at = self.prepare_cached(sql)?.ok_or_else(|| Error::BadParam("one statement expected".into()))?;
        let r = self.step_all(self.cache[at].stmt);
        self.release(at);
        r
    }

    pub(super) fn undo_savepoint(&mut self, name: &str) {
        // Best effort: if SQLite already rolled the transaction back (some
        // errors do), these fail harmlessly.
        let _ = self.exec_simple(&format!("ROLLBACK TO {name}"));
        let _ = self.exec_simple(&format!("RELEASE {name}"));
    }

    /// `executeBatch`: one statement, once per parameter set, all or nothing.
    pub fn execute_batch(&mut self, sql: &str, sets: &js_sys::Array) -> Result<(i64, i64)> {
        self.exec_simple("SAVEPOINT resq_batch")?;
        // Prepared after the savepoint statement: nothing below touches the
        // cache again, so `at` stays valid for every set.
        let mut result = self
            .prepare_cached(sql)
            .and_then(|at| at.ok_or_else(|| Error::BadParam("executeBatch takes exactly one statement".into())));
        let mut changes = 0i64;
        if let Ok(at) = result {
            for (n, set) in sets.iter().enumerate() {
                let r = Params::from_js(&set)
                    .and_then(|p| self.bind(at, &p, false))
                    .and_then(|_| self.step_all(self.cache[at].stmt));
                self.release(at);
                match r {
                    Ok(()) => changes += unsafe { ffi::sqlite3_changes64(self.raw) },
                    Err(Error::BadParam(m)) => {
                        result = Err(Error::BadParam(format!("parameter set {}: {m}", n + 1)));
                        break;
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
        }
        let result = result.map(|_| ());
        // RELEASE can fail too (a deferred foreign key checked at commit):
        // then undo the batch rather than leave its savepoint open.
        let rowid = self.figures().1;
        let result = result.and_then(|_| self.exec_simple("RELEASE resq_batch"));
        match result {
            Ok(()) => Ok((changes, rowid)),
            Err(e) => {
                self.undo_savepoint("resq_batch");
                Err(e)
            }
        }
    }

    /// `query`/`queryBytes`: runs one statement and writes its rows into
    /// `self.json` (and `self.fixups` for [`Rows::Objects`]). BLOBs at or
    /// above the threshold go to `own`, which returns their index.
    pub fn query(
        &mut self,
        sql: &str,
        params: &Params,
        mode: Rows,
        own: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<Vec<String>> {
        let at = self
            .prepare_cached(sql)?
            .ok_or_else(|| Error::BadParam("query takes exactly one statement".into()))?;
        let result = self.bind(at, params, false).and_then(|_| self.write_rows(at, mode, own));
        self.release(at);
        result
    }

    /// Steps cached statement `at` to the end, writing its rows. Returns the
    /// column names when `query` needs them (there are fix-ups), else none.
    fn write_rows(&mut self, at: usize, mode: Rows, own: &mut dyn FnMut(&[u8]) -> usize) -> Result<Vec<String>> {
        let stmt = self.cache[at].stmt;
        self.json.begin_rows();
        self.fixups.clear();
        // Column names are read after the first step: a statement whose schema
        // changed is re-prepared inside that step, and its names with it.
        let mut rc = unsafe { ffi::sqlite3_step(stmt) };
        let mut cols = std::mem::take(&mut self.cache[at].columns);
        cols.refresh(stmt);
        let (keys, last) = (&cols.keys, &cols.last);
        let n = keys.len() as i32;
        let objects = mode == Rows::Objects;
        while rc == ffi::SQLITE_ROW {
            let row = self.json.rows();
            self.json.begin_row();
            for c in 0..n {
                self.json.encoded_key(&keys[c as usize]);
                let fix = objects && last[c as usize];
                unsafe {
                    match ffi::sqlite3_column_type(stmt, c) {
                        ffi::SQLITE_INTEGER => {
                            let i = ffi::sqlite3_column_int64(stmt, c);
                            if objects && !is_safe_integer(i) {
                                self.json.integer_as_string(i);
                                if fix {
                                    self.fixups.push(row, c as usize, FIX_BIGINT, 0, 0);
                                }
                            } else {
                                self.json.integer(i);
                            }
                        }
                        ffi::SQLITE_FLOAT => self.json.real(ffi::sqlite3_column_double(stmt, c)),
                        ffi::SQLITE_TEXT => {
                            let p = ffi::sqlite3_column_text(stmt, c);
                            let len = ffi::sqlite3_column_bytes(stmt, c) as usize;
                            self.json.text(bytes(p, len));
                        }
                        ffi::SQLITE_BLOB => {
                            let p = ffi::sqlite3_column_blob(stmt, c);
                            let len = ffi::sqlite3_column_bytes(stmt, c) as usize;
                            let b = bytes(p.cast(), len);
                            if !objects {
                                self.json.blob(b);
                            } else {
                                self.json.null();
                                if fix && len >= self.blob_threshold {
                                    let index = own(b);
                                    self.fixups.push(row, c as usize, FIX_BLOB_OWN, index, 0);
                                } else if fix {
                                    self.fixups.inline_blob(row, c as usize, b);
                                }
                            }
                        }
                        _ => self.json.null(),
                    }
                }
            }
            self.json.end_row();
            rc = unsafe { ffi::sqlite3_step(stmt) };
        }
        let names = if self.fixups.cells.is_empty() { Vec::new() } else { cols.names.clone() };
        self.cache[at].columns = cols;
        if rc != ffi::SQLITE_DONE {
            return Err(self.error(rc));
        }
        self.json.end_rows();
        Ok(names)
    }

    pub fn close(&mut self) -> Result<()> {
        self.drop_read_handle();
        if !self.streams.is_empty() {
            let _ = self.stream_end(false);
        }
        for c in self.cache.drain(..) {
            unsafe { ffi::sqlite3_finalize(c.stmt) };
        }
        if self.raw.is_null() {
            return Ok(());
        }
        let rc = unsafe { ffi::sqlite3_close(self.raw) };
        self.raw = ptr::null_mut();
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(Error::Sqlite { errno: rc, message: "close failed".into() })
        }
    }

    pub fn in_transaction(&self) -> bool {
        !self.raw.is_null() && unsafe { ffi::sqlite3_get_autocommit(self.raw) } == 0
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// SQLite returns a null pointer for empty TEXT/BLOB values.
unsafe fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, len)
    }
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::BadParam("a database name cannot contain a NUL character".into()))
}
