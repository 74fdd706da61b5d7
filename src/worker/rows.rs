//! Row encoding for `query`/`queryBytes`: a statement stepped to the end,
//! its rows written as `queryBytes` JSON, or for `query` as JSON with BLOB
//! and big-integer cells left as placeholders plus their fix-ups (see
//! `codec::wire`). Wasm memory holds the JSON buffer, reused between calls.

use super::conn::Conn;
use crate::codec::json::{encoded_key, JsonWriter};
use crate::codec::stream::{Placeholder, PLACEHOLDER_LEN};
use crate::codec::value::is_safe_integer;
use crate::codec::wire::{last_of_name, Fixups, FIX_BIGINT, FIX_BLOB_OWN};
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::CStr;

/// A statement's result columns, kept between calls so a query encodes its
/// keys once, not once per call; checked against SQLite's names on every
/// call (a schema change re-prepares the statement and may rename them).
#[derive(Default)]
pub struct Columns {
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

/// Writes the rows of `query`/`queryBytes`: the JSON text, and for
/// [`Rows::Objects`] the fix-ups of `codec::wire`.
pub struct RowWriter {
    pub json: JsonWriter,
    pub fixups: Fixups,
    /// BLOB results at or above this many bytes get a buffer of their own.
    blob_threshold: usize,
}

const RETURNED_PLACEHOLDER: &str = "a result column holds a streamed Blob or File's 32-byte placeholder (a parameter returned as itself), not its bytes; return the rowid or key instead (RETURNING id) and read the value with readBlob, blobStream or blobFile";

impl RowWriter {
    pub fn new(blob_threshold: usize) -> RowWriter {
        RowWriter { json: JsonWriter::default(), fixups: Fixups::default(), blob_threshold }
    }

    /// Steps `stmt` to the end, writing its rows; `cols` are its columns as
    /// last seen. Returns the column names when `query` needs them (there
    /// are fix-ups), else none. A BLOB that is one of `placeholders` (a
    /// streamed value returned as such) is refused: it is not the value.
    pub fn write(
        &mut self,
        conn: &Conn,
        stmt: *mut ffi::sqlite3_stmt,
        cols: &mut Columns,
        mode: Rows,
        own: &mut dyn FnMut(&[u8]) -> usize,
        placeholders: &[Placeholder],
    ) -> Result<Vec<String>> {
        self.json.begin_rows();
        self.fixups.clear();
        // Column names are read after the first step: a statement whose schema
        // changed is re-prepared inside that step, and its names with it.
        let mut rc = unsafe { ffi::sqlite3_step(stmt) };
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
                            if len == PLACEHOLDER_LEN && placeholders.iter().any(|x| x[..] == *b) {
                                return Err(Error::BadParam(RETURNED_PLACEHOLDER.into()));
                            }
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
        if rc != ffi::SQLITE_DONE {
            return Err(conn.error(rc));
        }
        self.json.end_rows();
        Ok(names)
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
