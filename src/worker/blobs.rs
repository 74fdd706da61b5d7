//! Media-sized values through SQLite's incremental blob I/O.
//!
//! A `Blob`/`File` parameter is bound as `zeroblob(size)`; the statement runs
//! inside a savepoint while an update hook notes every row it inserts or
//! updates; the cells of those rows holding exactly `size` bytes are where
//! the value landed. The worker bootstrap then reads the `Blob` chunk by chunk
//! and writes each chunk into those cells ([`Db::stream_write`]), and
//! [`Db::stream_end`] releases the savepoint, or rolls it back so nothing
//! partial stays. Wasm memory holds one chunk at a time, never the file.
//!
//! SQLite keeps a zeroblob unexpanded only when no later column of the record
//! holds data, so a BLOB column meant for large media belongs last in its
//! table (SQLite's own advice for incremental blob I/O).

use super::db::Db;
use crate::codec::sql::quote_ident;
use crate::codec::{Error, Result};
use js_sys::Uint8Array;
use sqlite_wasm_rs as ffi;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;
use web_sys::Blob;

/// Bytes moved per `sqlite3_blob_read` into scratch memory.
pub const READ_CHUNK: usize = 1 << 20;

/// A `Blob` parameter and the cells it is written into.
pub struct Stream {
    pub blob: Blob,
    targets: Vec<*mut ffi::sqlite3_blob>,
}

/// A `Blob` parameter as bound: its label (`parameter 2`), the `Blob`, its size.
pub struct PendingBlob {
    pub label: String,
    pub blob: Blob,
    pub size: u64,
}

/// A row changed by the statement: schema, table, rowid.
type Changed = (String, String, i64);

unsafe extern "C" fn on_update(ctx: *mut c_void, op: c_int, db: *const c_char, table: *const c_char, rowid: i64) {
    if op == ffi::SQLITE_INSERT || op == ffi::SQLITE_UPDATE {
        let changed = &mut *(ctx as *mut Vec<Changed>);
        let s = |p: *const c_char| CStr::from_ptr(p).to_string_lossy().into_owned();
        changed.push((s(db), s(table), rowid));
    }
}

impl Db {
    /// Runs `step` with an update hook recording the rows it inserts or updates.
    pub(super) fn with_update_hook<T>(&mut self, step: impl FnOnce(&mut Db) -> T) -> (T, Vec<Changed>) {
        let mut changed: Vec<Changed> = Vec::new();
        unsafe { ffi::sqlite3_update_hook(self.raw(), Some(on_update), &mut changed as *mut _ as *mut c_void) };
        let out = step(self);
        unsafe { ffi::sqlite3_update_hook(self.raw(), None, ptr::null_mut()) };
        (out, changed)
    }

    /// Finds the cells each pending `Blob` landed in and opens them for writing.
    pub(super) fn locate(&mut self, pending: Vec<PendingBlob>, mut changed: Vec<Changed>) -> Result<Vec<Stream>> {
        changed.sort();
        changed.dedup();
        // (index into `changed`, column, length) of every BLOB cell of the changed rows.
        let mut cells: Vec<(usize, String, u64)> = Vec::new();
        for (i, (db, table, rowid)) in changed.iter().enumerate() {
            for (column, len) in self.blob_cells(db, table, *rowid)? {
                cells.push((i, column, len));
            }
        }
        let mut streams = Vec::with_capacity(pending.len());
        for p in &pending {
            let mut stream = Stream { blob: p.blob.clone(), targets: Vec::new() };
            if p.size == 0 {
                // zeroblob(0) already is the whole value.
                streams.push(stream);
                continue;
            }
            let twin = pending.iter().any(|q| q.size == p.size && !js_sys::Object::is(&q.blob, &p.blob));
            if twin {
                self.close_streams(&mut streams);
                return Err(Error::BadParam(format!(
                    "{}: two different Blobs of the same size in one statement cannot be told apart; store them in separate statements",
                    p.label
                )));
            }
            let mut found: Vec<&(usize, String, u64)> = cells.iter().filter(|c| c.2 == p.size).collect();
            if found.len() > 1 {
                // More than one candidate (a trigger copied the value, or a
                // cell already held as many bytes): only zero-filled cells
                // can be this statement's zeroblob.
                let mut zero = Vec::new();
                for c in found {
                    let (db, table, rowid) = &changed[c.0];
                    if self.is_zero_filled(db, table, &c.1, *rowid)? {
                        zero.push(c);
                    }
                }
                found = zero;
            }
            if found.is_empty() {
                self.close_streams(&mut streams);
                return Err(Error::BadParam(format!(
                    "{}: a Blob or File must be stored as a column value of a row the statement inserts or updates (in a table with a rowid)",
                    p.label
                )));
            }
            for c in found {
                let (db, table, rowid) = &changed[c.0];
                match self.open_blob(db, table, &c.1, *rowid, true) {
                    Ok(h) => stream.targets.push(h),
                    Err(e) => {
                        streams.push(stream);
                        self.close_streams(&mut streams);
                        return Err(e);
                    }
                }
            }
            streams.push(stream);
        }
        Ok(streams)
    }

    /// Columns of one row holding a BLOB, with their lengths. `length()` and
    /// `typeof()` do not load the value itself.
    fn blob_cells(&mut self, db: &str, table: &str, rowid: i64) -> Result<Vec<(String, u64)>> {
        let columns = self.column_names(db, table)?;
        if columns.is_empty() {
            return Ok(Vec::new());
        }
        let exprs: Vec<String> = columns
            .iter()
            .map(|c| format!("CASE typeof({0}) WHEN 'blob' THEN length({0}) ELSE -1 END", quote_ident(c)))
            .collect();
        let sql = format!("SELECT {} FROM {}.{} WHERE rowid = {rowid}", exprs.join(", "), quote_ident(db), quote_ident(table));
        let lengths = self.one_row_integers(&sql)?;
        Ok(columns.into_iter().zip(lengths).filter(|(_, n)| *n >= 0).map(|(c, n)| (c, n as u64)).collect())
    }

    fn column_names(&mut self, db: &str, table: &str) -> Result<Vec<String>> {
        let sql = format!("SELECT name FROM pragma_table_xinfo({}, {}) WHERE hidden = 0", sql_string(table), sql_string(db));
        let (stmt, _) = self.prepare(&sql, 0)?;
        let mut names = Vec::new();
        let rc = loop {
            match unsafe { ffi::sqlite3_step(stmt) } {
                ffi::SQLITE_ROW => names.push(unsafe {
                    CStr::from_ptr(ffi::sqlite3_column_text(stmt, 0).cast()).to_string_lossy().into_owned()
                }),
                rc => break rc,
            }
        };
        unsafe { ffi::sqlite3_finalize(stmt) };
        if rc != ffi::SQLITE_DONE {
            return Err(self.error(rc));
        }
        Ok(names)
    }

    fn one_row_integers(&mut self, sql: &str) -> Result<Vec<i64>> {
        let (stmt, _) = self.prepare(sql, 0)?;
        let rc = unsafe { ffi::sqlite3_step(stmt) };
        let out = if rc == ffi::SQLITE_ROW {
            let n = unsafe { ffi::sqlite3_column_count(stmt) };
            Ok((0..n).map(|i| unsafe { ffi::sqlite3_column_int64(stmt, i) }).collect())
        } else if rc == ffi::SQLITE_DONE {
            Ok(Vec::new())
        } else {
            Err(self.error(rc))
        };
        unsafe { ffi::sqlite3_finalize(stmt) };
        out
    }

    fn is_zero_filled(&mut self, db: &str, table: &str, column: &str, rowid: i64) -> Result<bool> {
        let h = self.open_blob(db, table, column, rowid, false)?;
        let size = unsafe { ffi::sqlite3_blob_bytes(h) } as usize;
        let mut scratch = vec![0u8; size.min(READ_CHUNK)];
        let mut at = 0;
        let mut zero = true;
        while zero && at < size {
            let n = scratch.len().min(size - at);
            let rc = unsafe { ffi::sqlite3_blob_read(h, scratch.as_mut_ptr().cast(), n as c_int, at as c_int) };
            if rc != ffi::SQLITE_OK {
                unsafe { ffi::sqlite3_blob_close(h) };
                return Err(self.error(rc));
            }
            zero = scratch[..n].iter().all(|b| *b == 0);
            at += n;
        }
        unsafe { ffi::sqlite3_blob_close(h) };
        Ok(zero)
    }

    /// Opens one cell for incremental I/O. Unknown table, column or rowid is
    /// `RESQ_NOT_FOUND`; a cell that holds no BLOB is `RESQ_BAD_PARAM`.
    pub(super) fn open_blob(&mut self, db: &str, table: &str, column: &str, rowid: i64, write: bool) -> Result<*mut ffi::sqlite3_blob> {
        let c = |s: &str| CString::new(s).map_err(|_| Error::BadParam("a name cannot contain a NUL character".into()));
        let (db, table_c, column_c) = (c(db)?, c(table)?, c(column)?);
        let mut h = ptr::null_mut();
        let rc = unsafe {
            ffi::sqlite3_blob_open(self.raw(), db.as_ptr(), table_c.as_ptr(), column_c.as_ptr(), rowid, write as c_int, &mut h)
        };
        if rc == ffi::SQLITE_OK {
            return Ok(h);
        }
        let e = self.error(rc);
        let message = e.to_string();
        if message.starts_with("no such") {
            Err(Error::NotFound(format!("{table}.{column} rowid {rowid}: {message}")))
        } else if message.starts_with("cannot open value of type") {
            Err(Error::BadParam(format!("{table}.{column} rowid {rowid} holds no BLOB ({message})")))
        } else {
            Err(e)
        }
    }

    /// Writes one chunk of stream `i` at `offset` into every cell it landed in.
    pub fn stream_write(&mut self, i: usize, offset: u64, chunk: &[u8]) -> Result<()> {
        let count = match self.streams.get(i) {
            Some(s) => s.targets.len(),
            None => return Err(Error::BadParam("no Blob parameter is being written".into())),
        };
        for t in 0..count {
            let h = self.streams[i].targets[t];
            let rc = unsafe { ffi::sqlite3_blob_write(h, chunk.as_ptr().cast(), chunk.len() as c_int, offset as c_int) };
            if rc != ffi::SQLITE_OK {
                return Err(self.error(rc));
            }
        }
        Ok(())
    }

    /// Ends the streaming `execute`: keeps its effects (`ok`) or undoes them.
    pub fn stream_end(&mut self, ok: bool) -> Result<()> {
        let mut streams = std::mem::take(&mut self.streams);
        self.close_streams(&mut streams);
        if ok {
            match self.exec_simple("RELEASE resq_stream") {
                Ok(()) => return Ok(()),
                Err(e) => {
                    self.undo_savepoint("resq_stream");
                    return Err(e);
                }
            }
        }
        self.undo_savepoint("resq_stream");
        Ok(())
    }

    fn close_streams(&mut self, streams: &mut Vec<Stream>) {
        for s in streams.drain(..) {
            for h in s.targets {
                unsafe { ffi::sqlite3_blob_close(h) };
            }
        }
    }

    /// Opens one stored BLOB for reading. SQLite's blob I/O also opens TEXT;
    /// the read methods take BLOBs only.
    fn open_stored_blob(&mut self, table: &str, column: &str, rowid: i64) -> Result<*mut ffi::sqlite3_blob> {
        let h = self.open_blob("main", table, column, rowid, false)?;
        let sql = format!("SELECT typeof({}) = 'blob' FROM main.{} WHERE rowid = {rowid}", quote_ident(column), quote_ident(table));
        match self.one_row_integers(&sql) {
            Ok(v) if v.first() == Some(&1) => Ok(h),
            other => {
                unsafe { ffi::sqlite3_blob_close(h) };
                other?;
                Err(Error::BadParam(format!("{table}.{column} rowid {rowid} holds TEXT, not a BLOB")))
            }
        }
    }

    /// A read handle on one stored BLOB, kept between consecutive reads of the
    /// same cell (a stream, a player seeking): SQLite's cursor then remembers
    /// the value's overflow-page chain, so a read in the middle of a large
    /// value does not walk the chain from its start again. Any other call
    /// drops it first ([`Db::drop_read_handle`]), so no handle stays open
    /// while other statements run.
    fn read_handle(&mut self, table: &str, column: &str, rowid: i64) -> Result<*mut ffi::sqlite3_blob> {
        if let Some((t, c, r, h)) = &self.read_cache {
            if t == table && c == column && *r == rowid {
                return Ok(*h);
            }
        }
        self.drop_read_handle();
        let h = self.open_stored_blob(table, column, rowid)?;
        self.read_cache = Some((table.to_owned(), column.to_owned(), rowid, h));
        Ok(h)
    }

    /// Closes the kept read handle, if any (every call but the blob reads).
    pub fn drop_read_handle(&mut self) {
        if let Some((_, _, _, h)) = self.read_cache.take() {
            unsafe { ffi::sqlite3_blob_close(h) };
        }
    }

    /// `(start, length)` of a range of one stored BLOB, checked against its size.
    pub fn blob_range(&mut self, table: &str, column: &str, rowid: i64, offset: Option<f64>, length: Option<f64>) -> Result<(u64, u64)> {
        let h = self.read_handle(table, column, rowid)?;
        let size = unsafe { ffi::sqlite3_blob_bytes(h) } as u64;
        crate::codec::value::blob_range(size, offset, length)
    }

    /// `readBlob`: the bytes of `[offset, offset + length)` of one cell, read
    /// a chunk at a time into a fresh JS buffer (wasm memory holds one chunk).
    pub fn read_blob(&mut self, table: &str, column: &str, rowid: i64, offset: Option<f64>, length: Option<f64>) -> Result<Uint8Array> {
        let (start, len) = self.blob_range(table, column, rowid, offset, length)?;
        let h = self.read_handle(table, column, rowid)?;
        let out = Uint8Array::new_with_length(len as u32);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize((len as usize).min(READ_CHUNK), 0);
        let mut done = 0u64;
        let mut result = Ok(());
        while done < len {
            let n = (scratch.len() as u64).min(len - done) as usize;
            let rc = unsafe { ffi::sqlite3_blob_read(h, scratch.as_mut_ptr().cast(), n as c_int, (start + done) as c_int) };
            if rc != ffi::SQLITE_OK {
                result = Err(self.error(rc));
                break;
            }
            out.subarray(done as u32, (done as usize + n) as u32).copy_from(&scratch[..n]);
            done += n as u64;
        }
        self.scratch = scratch;
        if result.is_err() {
            self.drop_read_handle();
        }
        result.map(|_| out)
    }
}

/// A SQL string literal.
fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
