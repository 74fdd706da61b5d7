//! Owners for SQLite's handles: a prepared statement that is finalized, and
//! an incremental-I/O blob that is closed, when its owner drops it — on
//! every path, errors included.

use sqlite_wasm_rs as ffi;

/// A prepared statement, finalized on drop.
pub struct Statement(*mut ffi::sqlite3_stmt);

impl Statement {
    /// Takes ownership of a statement SQLite prepared (`None` for null: the
    /// SQL held only blanks).
    pub fn from_raw(raw: *mut ffi::sqlite3_stmt) -> Option<Statement> {
        (!raw.is_null()).then_some(Statement(raw))
    }

    pub fn raw(&self) -> *mut ffi::sqlite3_stmt {
        self.0
    }
}

impl Drop for Statement {
    fn drop(&mut self) {
        unsafe { ffi::sqlite3_finalize(self.0) };
    }
}

/// An open BLOB for incremental I/O, closed on drop.
pub struct BlobHandle(*mut ffi::sqlite3_blob);

impl BlobHandle {
    pub fn from_raw(raw: *mut ffi::sqlite3_blob) -> BlobHandle {
        BlobHandle(raw)
    }

    pub fn raw(&self) -> *mut ffi::sqlite3_blob {
        self.0
    }

    /// The value's size in bytes.
    pub fn size(&self) -> u64 {
        unsafe { ffi::sqlite3_blob_bytes(self.0) as u64 }
    }
}

impl Drop for BlobHandle {
    fn drop(&mut self) {
        unsafe { ffi::sqlite3_blob_close(self.0) };
    }
}
