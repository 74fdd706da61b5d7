//! `queryTables`: the tables of `main` one query reads, so a live query
//! re-runs when `takeChanged` names one of them.
//!
//! SQLite's authorizer says what a statement reads, but only while it is
//! prepared, so the query is prepared afresh here (not taken from the
//! statement cache) with the authorizer listening for `SQLITE_READ`. Its
//! answer, checked in `tests/node/live.rs`:
//!
//! - a view is read as its base tables (the view's own name may come too,
//!   and is dropped: a view has no rows of its own to change);
//! - `count(*)`, and a subquery's table read for no column, come with no
//!   schema name: such a name counts when `main` has a table of that name
//!   (at worst a `temp` table of the same name makes a spurious match);
//! - reads of the schema table come as `sqlite_master`, kept as
//!   `sqlite_schema`, the name `takeChanged` gives DDL;
//! - a virtual table is read as itself, but its rows are written to its
//!   shadow tables (FTS5's `x_content`, `x_data`, …), which are what the
//!   pre-update hook reports: those are added;
//! - table-valued functions (`pragma_table_info`, `json_each`) are not
//!   tables of `main`, and are dropped.

use super::conn::Conn;
use crate::codec::changes::table_key;
use crate::codec::{sql, Error, Result};
use sqlite_wasm_rs as ffi;
use std::collections::BTreeSet;

/// The tables (as [`table_key`]s, sorted) that the one query in `sql` reads.
/// Refuses SQL that is not exactly one statement that returns rows and
/// writes nothing.
pub fn query_tables(conn: &Conn, sql: &str) -> Result<Vec<String>> {
    let mut read = BTreeSet::new();
    let (stmt, tail) = conn.prepare_noting(sql, 0, &mut |x| {
        if x.action == ffi::SQLITE_READ && (x.db == "main" || x.db.is_empty()) {
            read.insert(table_key(x.a));
        }
    })?;
    let one = "queryTables takes exactly one query";
    let Some(stmt) = stmt else { return Err(Error::BadParam(format!("{one}; the SQL holds none"))) };
    if !sql::is_blank(tail) {
        return Err(Error::BadParam(format!("{one}; the SQL holds more than one statement")));
    }
    // Transaction control is "read-only" to SQLite; it returns no rows.
    let (readonly, columns) =
        unsafe { (ffi::sqlite3_stmt_readonly(stmt.raw()) != 0, ffi::sqlite3_column_count(stmt.raw())) };
    if !readonly || columns == 0 {
        return Err(Error::BadParam(format!("{one} that reads rows and writes nothing")));
    }
    drop(stmt);
    // `type:name` (a type has no colon) of every table and view of `main`.
    let kinds = conn.texts("SELECT type || ':' || name FROM pragma_table_list WHERE schema = 'main'", |_| {})?;
    let kinds: Vec<(&str, String)> =
        kinds.iter().filter_map(|k| k.split_once(':')).map(|(kind, name)| (kind, table_key(name))).collect();
    let mut tables = BTreeSet::new();
    let mut virtuals = Vec::new();
    for (kind, key) in &kinds {
        if *kind != "view" && read.contains(key) {
            if *kind == "virtual" {
                virtuals.push(format!("{key}_"));
            }
            tables.insert(key.clone());
        }
    }
    for (kind, key) in &kinds {
        if *kind == "shadow" && virtuals.iter().any(|v| key.starts_with(v.as_str())) {
            tables.insert(key.clone());
        }
    }
    Ok(tables.into_iter().collect())
}
