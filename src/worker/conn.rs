//! One SQLite connection handle and what every layer above it needs: errors
//! with their extended codes, preparing and stepping, a cell opened for
//! incremental I/O. The handle is closed when its owner drops it.

use super::handle::{BlobHandle, Statement};
use crate::codec::value::too_big;
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;

pub struct Conn {
    raw: *mut ffi::sqlite3,
    /// On OPFS, SQLite's "disk is full" means the origin's storage quota ran
    /// out (the pool VFS reports a `QuotaExceededError` as SQLITE_FULL), and
    /// so does a short write (see [`Conn::short_write`]).
    quota: bool,
    /// Opened on SQLite3MC's VFS (`cipher.rs`): its file decrypts on read.
    encrypted: bool,
}

impl Conn {
    pub fn open(name: &str, vfs: Option<&str>) -> Result<Conn> {
        Conn::open_with(name, vfs, ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE)
    }

    /// Opens a file that may be hostile (one being imported) for reading
    /// only, as SQLite's advice for untrusted files has it: defensive (no
    /// writes to the schema or the pages through SQL), and no function of
    /// the schema (views, triggers, indexes) that is not marked innocuous.
    pub fn open_untrusted(name: &str, vfs: &str) -> Result<Conn> {
        let conn = Conn::open_with(name, Some(vfs), ffi::SQLITE_OPEN_READONLY)?;
        for (op, on) in [(ffi::SQLITE_DBCONFIG_DEFENSIVE, 1), (ffi::SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)] {
            let rc = unsafe { ffi::sqlite3_db_config(conn.raw, op, on as c_int, ptr::null_mut::<c_int>()) };
            if rc != ffi::SQLITE_OK {
                return Err(conn.error(rc));
            }
        }
        Ok(conn)
    }

    fn open_with(name: &str, vfs: Option<&str>, flags: i32) -> Result<Conn> {
        let c_name = cstring(name)?;
        let c_vfs = vfs.map(cstring).transpose()?;
        let mut raw = ptr::null_mut();
        let flags = flags | ffi::SQLITE_OPEN_EXRESCODE;
        let rc = unsafe {
            ffi::sqlite3_open_v2(c_name.as_ptr(), &mut raw, flags, c_vfs.as_ref().map_or(ptr::null(), |v| v.as_ptr()))
        };
        // Even a failed open returns a handle (to read the error from), which
        // must be closed: the owner does it.
        let conn = Conn { raw, quota: vfs.is_some(), encrypted: false };
        if rc != ffi::SQLITE_OK {
            return Err(conn.error(rc));
        }
        Ok(conn)
    }

    pub fn raw(&self) -> *mut ffi::sqlite3 {
        self.raw
    }

    /// The error SQLite just reported, with its extended code and message.
    pub fn error(&self, rc: i32) -> Error {
        if self.raw.is_null() {
            return Error::Sqlite { errno: rc, message: "out of memory".into() };
        }
        let (errno, message) = unsafe {
            let code = ffi::sqlite3_extended_errcode(self.raw);
            let msg = CStr::from_ptr(ffi::sqlite3_errmsg(self.raw)).to_string_lossy().into_owned();
            (if code & 0xff == rc & 0xff { code } else { rc }, msg)
        };
        if self.quota && (errno & 0xff == ffi::SQLITE_FULL || (errno == ffi::SQLITE_IOERR_WRITE && self.short_write()))
        {
            return Error::Quota(format!("the origin's storage quota is used up; free space (delete rows, then VACUUM) or ask for more with navigator.storage.persist() (SQLite: {message})"));
        }
        if errno == ffi::SQLITE_TOOBIG {
            return Error::Sqlite { errno, message: too_big(&message) };
        }
        if errno & 0xff == ffi::SQLITE_IOERR {
            if let Some(reason) = self.vfs_error() {
                return Error::Sqlite { errno, message: format!("{message} ({reason})") };
            }
        }
        Error::Sqlite { errno, message }
    }

    /// Whether the VFS's last error was a short write. Firefox reports a used-up
    /// quota on a sync access handle by writing fewer bytes (none) where the
    /// standard, and Chromium, throw `QuotaExceededError`; the pool VFS calls
    /// that a short write (SQLITE_IOERR_WRITE), which SQLite's own unix VFS
    /// also takes for a full disk.
    fn short_write(&self) -> bool {
        self.vfs_error().is_some_and(|e| e.starts_with("write file: expected"))
    }

    /// The main database's VFS's last error (`xGetLastError`): why a call
    /// into it failed, which SQLite's own message for an I/O error omits.
    fn vfs_error(&self) -> Option<String> {
        let mut vfs: *mut ffi::sqlite3_vfs = ptr::null_mut();
        let main = c"main";
        // SAFETY: the handle is open; the VFS pointer SQLite gives is live
        // while it is; xGetLastError writes at most `buf.len()` bytes, NUL included.
        unsafe {
            let rc = ffi::sqlite3_file_control(
                self.raw,
                main.as_ptr(),
                ffi::SQLITE_FCNTL_VFS_POINTER,
                (&raw mut vfs).cast::<c_void>(),
            );
            if rc != ffi::SQLITE_OK || vfs.is_null() {
                return None;
            }
            let last_error = (*vfs).xGetLastError?;
            let mut buf = [0 as c_char; 256];
            last_error(vfs, buf.len() as c_int, buf.as_mut_ptr());
            let reason = CStr::from_ptr(buf.as_ptr()).to_string_lossy();
            (!reason.is_empty()).then(|| reason.into_owned())
        }
    }

    /// The main database's file, through which its VFS reads it; `None`
    /// for a `:memory:` database, which has none.
    ///
    /// Its bytes are as on disk: for an encrypted database, the file under
    /// SQLite3MC's, whose reads would decrypt.
    pub fn main_file(&self) -> Option<*mut ffi::sqlite3_file> {
        let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
        // SAFETY: SQLite writes the handle, live while the connection is
        // open; a `:memory:` database's has no methods.
        let rc = unsafe {
            ffi::sqlite3_file_control(
                self.raw,
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_FILE_POINTER,
                (&raw mut file).cast::<c_void>(),
            )
        };
        if self.encrypted && rc == ffi::SQLITE_OK && !file.is_null() {
            // SAFETY: SQLite3MC's file (`struct sqlite3mc_file`) begins with
            // its `sqlite3_file`, then the pointer to the real file.
            file = unsafe { *file.cast::<*mut ffi::sqlite3_file>().add(1) };
        }
        (rc == ffi::SQLITE_OK && !file.is_null() && unsafe { !(*file).pMethods.is_null() }).then_some(file)
    }

    /// The main database's file or its journal (`-wal`) file as the pager
    /// uses them (`op`: `SQLITE_FCNTL_FILE_POINTER` or
    /// `SQLITE_FCNTL_JOURNAL_POINTER`): SQLite3MC's, which encrypt and
    /// decrypt, for an encrypted database. `None` for a file not open.
    pub fn file_pointer(&self, op: c_int) -> Option<*mut ffi::sqlite3_file> {
        let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
        // SAFETY: SQLite writes the handle, live while the connection is
        // open and the file is.
        let rc = unsafe { ffi::sqlite3_file_control(self.raw, c"main".as_ptr(), op, (&raw mut file).cast::<c_void>()) };
        (rc == ffi::SQLITE_OK && !file.is_null() && unsafe { !(*file).pMethods.is_null() }).then_some(file)
    }

    /// Marks the connection as opened on SQLite3MC's VFS (see `main_file`).
    pub fn set_encrypted(&mut self) {
        self.encrypted = true;
    }

    /// Opened on SQLite3MC's VFS (with a key; it may be plain since `rekey`).
    #[cfg_attr(not(feature = "cipher"), allow(dead_code))]
    pub fn encrypted(&self) -> bool {
        self.encrypted
    }

    /// An integer a pragma or query of internal SQL gives (0 for none).
    pub fn figure(&self, sql: &str) -> Result<i64> {
        Ok(self.row(sql, |_| {})?.first().copied().unwrap_or(0))
    }

    /// Prepares the first statement of `sql`; returns it (`None` if the SQL
    /// holds only blanks) and the SQL after it.
    pub fn prepare<'s>(&self, sql: &'s str, flags: u32) -> Result<(Option<Statement>, &'s str)> {
        let mut stmt = ptr::null_mut();
        let mut tail: *const c_char = ptr::null();
        let start = sql.as_ptr() as *const c_char;
        let rc = unsafe { ffi::sqlite3_prepare_v3(self.raw, start, sql.len() as i32, flags, &mut stmt, &mut tail) };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(rc));
        }
        let used = if tail.is_null() { sql.len() } else { tail as usize - start as usize };
        Ok((Statement::from_raw(stmt), &sql[used..]))
    }

    /// [`Conn::prepare`] while `note` hears every authorizer call. SQLite
    /// consults its authorizer only while it prepares, so this is where a
    /// statement tells what it reads and writes, its triggers and views
    /// included. The authorizer is removed again before this returns.
    pub fn prepare_noting<'s>(
        &self,
        sql: &'s str,
        flags: u32,
        note: &mut dyn FnMut(&Access),
    ) -> Result<(Option<Statement>, &'s str)> {
        let mut note = note;
        let ctx = &mut note as *mut &mut dyn FnMut(&Access) as *mut c_void;
        unsafe { ffi::sqlite3_set_authorizer(self.raw, Some(on_authorize), ctx) };
        let prepared = self.prepare(sql, flags);
        unsafe { ffi::sqlite3_set_authorizer(self.raw, None, ptr::null_mut()) };
        prepared
    }

    /// Steps a statement to the end, ignoring rows.
    pub fn step_all(&self, stmt: *mut ffi::sqlite3_stmt) -> Result<()> {
        loop {
            match unsafe { ffi::sqlite3_step(stmt) } {
                ffi::SQLITE_ROW => continue,
                ffi::SQLITE_DONE => return Ok(()),
                rc => return Err(self.error(rc)),
            }
        }
    }

    /// Runs one statement of internal SQL, prepared for this call only.
    /// `bind` binds its parameters; the first row's integer columns come
    /// back (empty when there is no row).
    pub fn row(&self, sql: &str, bind: impl FnOnce(*mut ffi::sqlite3_stmt)) -> Result<Vec<i64>> {
        let stmt = self.prepare(sql, 0)?.0.ok_or_else(|| Error::BadParam("internal SQL holds no statement".into()))?;
        bind(stmt.raw());
        match unsafe { ffi::sqlite3_step(stmt.raw()) } {
            ffi::SQLITE_ROW => {
                let n = unsafe { ffi::sqlite3_column_count(stmt.raw()) };
                Ok((0..n).map(|i| unsafe { ffi::sqlite3_column_int64(stmt.raw(), i) }).collect())
            }
            ffi::SQLITE_DONE => Ok(Vec::new()),
            rc => Err(self.error(rc)),
        }
    }

    /// Runs internal SQL that returns one BLOB and hands its bytes to `f`
    /// (empty for NULL); no row is `RESQ_NOT_FOUND`.
    pub fn blob(
        &self,
        sql: &str,
        bind: impl FnOnce(*mut ffi::sqlite3_stmt),
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let stmt = self.prepare(sql, 0)?.0.ok_or_else(|| Error::BadParam("internal SQL holds no statement".into()))?;
        bind(stmt.raw());
        match unsafe { ffi::sqlite3_step(stmt.raw()) } {
            ffi::SQLITE_ROW => unsafe {
                let p = ffi::sqlite3_column_blob(stmt.raw(), 0) as *const u8;
                let n = ffi::sqlite3_column_bytes(stmt.raw(), 0) as usize;
                f(if p.is_null() || n == 0 { &[] } else { std::slice::from_raw_parts(p, n) })
            },
            ffi::SQLITE_DONE => Err(Error::NotFound("the row is gone".into())),
            rc => Err(self.error(rc)),
        }
    }

    /// The text column of every row of internal SQL (names from a pragma).
    pub fn texts(&self, sql: &str, bind: impl FnOnce(*mut ffi::sqlite3_stmt)) -> Result<Vec<String>> {
        let stmt = self.prepare(sql, 0)?.0.ok_or_else(|| Error::BadParam("internal SQL holds no statement".into()))?;
        bind(stmt.raw());
        let mut out = Vec::new();
        loop {
            match unsafe { ffi::sqlite3_step(stmt.raw()) } {
                ffi::SQLITE_ROW => out.push(unsafe { column_text(stmt.raw(), 0) }),
                ffi::SQLITE_DONE => return Ok(out),
                rc => return Err(self.error(rc)),
            }
        }
    }

    /// `(changes, lastInsertRowid)` of the last statement.
    pub fn figures(&self) -> (i64, i64) {
        unsafe { (ffi::sqlite3_changes64(self.raw), ffi::sqlite3_last_insert_rowid(self.raw)) }
    }

    /// Rows changed since the connection opened, by every statement and trigger.
    pub fn total_changes(&self) -> i64 {
        unsafe { ffi::sqlite3_total_changes64(self.raw) }
    }

    /// Whether a transaction is open (`BEGIN` without its end yet).
    pub fn in_transaction(&self) -> bool {
        unsafe { ffi::sqlite3_get_autocommit(self.raw) == 0 }
    }

    /// Turns triggers on or off for statements prepared from now on.
    pub fn set_triggers(&self, on: bool) -> Result<()> {
        let rc = unsafe {
            ffi::sqlite3_db_config(self.raw, ffi::SQLITE_DBCONFIG_ENABLE_TRIGGER, on as c_int, ptr::null_mut::<c_int>())
        };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(rc));
        }
        Ok(())
    }

    /// Opens one cell for incremental I/O. Unknown table, column or rowid is
    /// `RESQ_NOT_FOUND`; a cell that holds no BLOB or TEXT is `RESQ_BAD_PARAM`.
    pub fn open_blob(&self, db: &str, table: &str, column: &str, rowid: i64, write: bool) -> Result<BlobHandle> {
        let (db_c, table_c, column_c) = (cstring(db)?, cstring(table)?, cstring(column)?);
        let mut h = ptr::null_mut();
        let rc = unsafe {
            ffi::sqlite3_blob_open(
                self.raw,
                db_c.as_ptr(),
                table_c.as_ptr(),
                column_c.as_ptr(),
                rowid,
                write as c_int,
                &mut h,
            )
        };
        if rc == ffi::SQLITE_OK {
            return Ok(BlobHandle::from_raw(h));
        }
        // A failed open may still hand back a handle to close.
        if !h.is_null() {
            drop(BlobHandle::from_raw(h));
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

    /// Closes the connection; every statement and blob handle must be gone.
    /// A second call does nothing.
    pub fn close(&mut self) -> Result<()> {
        if self.raw.is_null() {
            return Ok(());
        }
        let rc = unsafe { ffi::sqlite3_close(self.raw) };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(rc));
        }
        self.raw = ptr::null_mut();
        Ok(())
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // The owners of its statements and blob handles drop them first
        // (see `Db`'s field order).
        let _ = self.close();
    }
}

/// One authorizer call (see `sqlite3_set_authorizer`): the action code
/// (`SQLITE_READ`, `SQLITE_INSERT`, …) and its arguments, empty where SQLite
/// passes none.
pub struct Access<'a> {
    pub action: i32,
    /// The table, for the actions on rows.
    pub a: &'a str,
    /// The column, for `SQLITE_READ` and `SQLITE_UPDATE` (empty when a
    /// table is read but no column, as by `count(*)`).
    pub b: &'a str,
    /// The schema: `main`, `temp` or an attached name.
    pub db: &'a str,
    /// The innermost trigger or view responsible (`None`: the statement itself).
    pub inner: Option<&'a str>,
}

unsafe extern "C" fn on_authorize(
    ctx: *mut c_void,
    action: c_int,
    a: *const c_char,
    b: *const c_char,
    db: *const c_char,
    inner: *const c_char,
) -> c_int {
    let note = &mut *(ctx as *mut &mut dyn FnMut(&Access));
    let s = |p: *const c_char| if p.is_null() { Cow::Borrowed("") } else { CStr::from_ptr(p).to_string_lossy() };
    let (a, b, db) = (s(a), s(b), s(db));
    let inner = (!inner.is_null()).then(|| s(inner));
    note(&Access { action, a: &a, b: &b, db: &db, inner: inner.as_deref() });
    ffi::SQLITE_OK
}

/// Text of a column as an owned string (NULL is empty).
pub unsafe fn column_text(stmt: *mut ffi::sqlite3_stmt, i: i32) -> String {
    let p = ffi::sqlite3_column_text(stmt, i);
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p.cast()).to_string_lossy().into_owned()
    }
}

/// Binds a string parameter (copied by SQLite).
pub unsafe fn bind_text(stmt: *mut ffi::sqlite3_stmt, i: i32, s: &str) {
    ffi::sqlite3_bind_text64(
        stmt,
        i,
        s.as_ptr().cast(),
        s.len() as u64,
        ffi::SQLITE_TRANSIENT(),
        ffi::SQLITE_UTF8 as u8,
    );
}

/// Binds a BLOB parameter (copied by SQLite).
pub unsafe fn bind_blob(stmt: *mut ffi::sqlite3_stmt, i: i32, b: &[u8]) {
    ffi::sqlite3_bind_blob64(stmt, i, b.as_ptr().cast(), b.len() as u64, ffi::SQLITE_TRANSIENT());
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::BadParam("a name cannot contain a NUL character".into()))
}
