//! The statement cache: prepared statements kept per connection, keyed by
//! SQL, most recently used first, each with its parameter names and its
//! result columns as last seen; and the binding of one call's values (the
//! parameter arena) to a statement.

use super::conn::Conn;
use super::handle::Statement;
use super::rows::Columns;
use super::streams::Streamed;
use crate::codec::stream::Placeholders;
use crate::codec::value::{Arena, Value};
use crate::codec::{sql, Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::CStr;
use std::ops::{Index, IndexMut};

/// Prepared statements kept per connection, most recently used first.
const CACHE_SIZE: usize = 64;

pub struct Cached {
    sql: String,
    pub stmt: Statement,
    /// Parameter names in SQLite's order (`None` for a bare `?`).
    pub names: Vec<Option<String>>,
    /// Result columns as last seen, with their encoded JSON keys.
    pub columns: Columns,
    /// DDL (see [`sql::changes_schema`]).
    pub changes_schema: bool,
}

/// The cache; `cache[at]` is the statement [`Cache::prepare`] returned `at` for.
#[derive(Default)]
pub struct Cache {
    list: Vec<Cached>,
}

impl Cache {
    /// A cached statement for exactly one statement of SQL. `Ok(None)` when
    /// the SQL holds more than one (a script), `BadParam` when it holds none.
    pub fn prepare(&mut self, conn: &Conn, sql: &str) -> Result<Option<usize>> {
        if let Some(i) = self.list.iter().position(|c| c.sql == sql) {
            let hit = self.list.remove(i);
            self.list.insert(0, hit);
            return Ok(Some(0));
        }
        let (stmt, tail) = conn.prepare(sql, ffi::SQLITE_PREPARE_PERSISTENT)?;
        let Some(stmt) = stmt else {
            return Err(Error::BadParam("the SQL holds no statement".into()));
        };
        if !sql::is_blank(tail) {
            return Ok(None);
        }
        let names = parameter_names(&stmt);
        self.list.truncate(CACHE_SIZE - 1);
        let changes_schema = sql::changes_schema(sql);
        self.list.insert(0, Cached { sql: sql.to_owned(), stmt, names, columns: Columns::default(), changes_schema });
        Ok(Some(0))
    }

    /// Finalizes every statement (before the connection closes).
    pub fn clear(&mut self) {
        self.list.clear();
    }
}

impl Index<usize> for Cache {
    type Output = Cached;
    fn index(&self, at: usize) -> &Cached {
        &self.list[at]
    }
}

impl IndexMut<usize> for Cache {
    fn index_mut(&mut self, at: usize) -> &mut Cached {
        &mut self.list[at]
    }
}

/// Binds the arena's values to `stmt`; a `Value::Streamed` gets a fresh
/// placeholder and joins the returned list, labelled from `labels` in order.
pub fn bind_arena(
    conn: &Conn,
    stmt: *mut ffi::sqlite3_stmt,
    arena: &Arena,
    placeholders: &mut Placeholders,
    labels: Vec<String>,
) -> Result<Vec<Streamed>> {
    let mut labels = labels.into_iter();
    let mut streamed = Vec::new();
    for (i, v) in arena.values().iter().enumerate() {
        let i = i as i32 + 1;
        // SQLITE_STATIC: the arena outlives the step; bindings are cleared
        // before the arena is reused.
        let rc = unsafe {
            match *v {
                Value::Null => ffi::sqlite3_bind_null(stmt, i),
                Value::Integer(n) => ffi::sqlite3_bind_int64(stmt, i, n),
                Value::Real(f) => ffi::sqlite3_bind_double(stmt, i, f),
                Value::Text(s) => {
                    let b = arena.bytes(s);
                    ffi::sqlite3_bind_text64(
                        stmt,
                        i,
                        b.as_ptr().cast(),
                        b.len() as u64,
                        ffi::SQLITE_STATIC(),
                        ffi::SQLITE_UTF8 as u8,
                    )
                }
                Value::Blob(s) => {
                    let b = arena.bytes(s);
                    if b.is_empty() {
                        // A null pointer would bind NULL; an empty BLOB is a zeroblob(0).
                        ffi::sqlite3_bind_zeroblob64(stmt, i, 0)
                    } else {
                        ffi::sqlite3_bind_blob64(stmt, i, b.as_ptr().cast(), b.len() as u64, ffi::SQLITE_STATIC())
                    }
                }
                Value::Streamed(size) => {
                    let placeholder = placeholders.fresh();
                    let label = labels.next().unwrap_or_else(|| format!("parameter {i}"));
                    streamed.push(Streamed { label, size, placeholder });
                    ffi::sqlite3_bind_blob64(
                        stmt,
                        i,
                        placeholder.as_ptr().cast(),
                        placeholder.len() as u64,
                        ffi::SQLITE_TRANSIENT(),
                    )
                }
            }
        };
        if rc != ffi::SQLITE_OK {
            return Err(conn.error(rc));
        }
    }
    Ok(streamed)
}

/// A statement's parameter names in SQLite's order (`None` for a bare `?`).
pub fn parameter_names(stmt: &Statement) -> Vec<Option<String>> {
    let count = unsafe { ffi::sqlite3_bind_parameter_count(stmt.raw()) };
    (1..=count)
        .map(|i| unsafe {
            let p = ffi::sqlite3_bind_parameter_name(stmt.raw(), i);
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        })
        .collect()
}
