//! The record that makes a following tab's writes exactly-once across a
//! change of leader (see `src/js/link.ts`).
//!
//! A tab that follows numbers its calls. When the tab that leads goes away,
//! the follower sends the calls it has no answer for to the next leader
//! again, and cannot know which of them committed. So a following tab's
//! write commits together with a row of `sqlite_resq_calls` naming the tab, the call's
//! number and its answer, in the same transaction: the next leader looks
//! the call up before it runs it, and answers from the row if it is there.
//!
//! The table lives in the database file, out of the way of schema tools:
//! its name starts with `sqlite_`, which SQLite reserves (users cannot
//! create, drop or alter such tables; Kysely's and Drizzle's introspection
//! skip them, as they skip `sqlite_sequence`). It is `WITHOUT ROWID`, so no
//! update or pre-update hook reports its rows: live queries never hear of
//! it. It holds only the calls of a tab that are not yet answered: each
//! recorded write deletes the tab's rows below the oldest call it still
//! waits for, a tab that leaves has its rows deleted, and a worker that
//! opens the database deletes the rows of tabs that are gone.

use super::conn::{bind_blob, bind_text, Conn};
use super::db::{Db, Savepoint};
use super::handle::Statement;
use crate::codec::changes::Mark;
use crate::codec::{sql, Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::c_int;
use std::ptr;

const CREATE: &str =
    "CREATE TABLE IF NOT EXISTS sqlite_resq_calls(tab TEXT NOT NULL, seq INTEGER NOT NULL, result BLOB NOT NULL, PRIMARY KEY(tab, seq)) WITHOUT ROWID";

const CALL: Savepoint =
    Savepoint { begin: "SAVEPOINT resq_call", release: "RELEASE resq_call", rollback: "ROLLBACK TO resq_call" };

/// One connection's record keeping: the savepoint of the call being run,
/// and the two statements every recorded write runs, prepared once (a
/// prepare costs about as much as the rest of a small write's record).
/// Drop it, or [`Calls::reset`] it, before the connection closes.
#[derive(Default)]
pub struct Calls {
    open: Option<Mark>,
    writes: Option<Writes>,
}

/// `DELETE` of a tab's rows below a call, and `INSERT` of a call's row.
struct Writes {
    delete: Statement,
    insert: Statement,
}

impl Calls {
    /// Before a following tab's call runs outside a transaction: opens the
    /// savepoint the call and its row commit in, and returns true (a call
    /// that turns out not to write is not recorded: see [`Calls::wrote`]).
    /// SQL that manages transactions or refuses to run inside one (`BEGIN`,
    /// `VACUUM`, `ATTACH`, a `PRAGMA`: see [`sql::runs_in_savepoint`]) runs
    /// as it is, unrecorded: run again after a change of leader, it does
    /// what it did (or fails as a second `BEGIN` would).
    pub fn begin(&mut self, db: &mut Db, sql: &str) -> Result<bool> {
        if self.open.is_some() || db.in_transaction() || !sql::runs_in_savepoint(sql) {
            return Ok(false);
        }
        self.open = Some(db.begin_savepoint(&CALL)?);
        Ok(true)
    }

    /// Whether the call being run wrote to the database.
    pub fn wrote(&self, db: &Db) -> bool {
        unsafe { ffi::sqlite3_txn_state(db.conn().raw(), ptr::null()) == ffi::SQLITE_TXN_WRITE }
    }

    /// Ends the call begun with [`Calls::begin`]: with `result`, records it
    /// as call `seq` of `tab` (and forgets the tab's calls below `below`),
    /// then commits; a failure to record undoes the call.
    pub fn end(&mut self, db: &mut Db, tab: &str, seq: i64, below: i64, result: Option<&[u8]>) -> Result<()> {
        let Some(mark) = self.open.take() else { return Ok(()) };
        let recorded = match result {
            Some(r) => self.put(db.conn(), tab, seq, below, r),
            None => Ok(()),
        };
        db.end_savepoint(&CALL, mark, recorded)
    }

    /// Forgets the prepared statements (before the connection closes, or
    /// after the file was replaced, which may not have the table).
    pub fn reset(&mut self) {
        self.writes = None;
    }

    /// Inserts the row of call `seq` of `tab`, after deleting the tab's rows
    /// below `below`, creating the table the first time. The table can be
    /// gone under the prepared statements (a rollback undid its creation):
    /// then they are prepared again, once.
    fn put(&mut self, conn: &Conn, tab: &str, seq: i64, below: i64, result: &[u8]) -> Result<()> {
        match self.put_once(conn, tab, seq, below, result) {
            Err(Error::Sqlite { message, .. }) if message.contains("no such table") => {
                self.put_once(conn, tab, seq, below, result)
            }
            r => r,
        }
    }

    fn put_once(&mut self, conn: &Conn, tab: &str, seq: i64, below: i64, result: &[u8]) -> Result<()> {
        if self.writes.is_none() {
            if prepare_if_recording(conn, "SELECT 1 FROM sqlite_resq_calls LIMIT 0")?.is_none() {
                create(conn)?;
            }
            let delete = prepared(conn, "DELETE FROM sqlite_resq_calls WHERE tab = ?1 AND seq < ?2")?;
            let insert =
                prepared(conn, "INSERT OR REPLACE INTO sqlite_resq_calls(tab, seq, result) VALUES (?1, ?2, ?3)")?;
            self.writes = Some(Writes { delete, insert });
        }
        let w = self.writes.as_ref().expect("prepared above");
        let run = |stmt: &Statement, bind: &dyn Fn(*mut ffi::sqlite3_stmt)| {
            bind(stmt.raw());
            let r = conn.step_all(stmt.raw());
            unsafe {
                ffi::sqlite3_reset(stmt.raw());
                ffi::sqlite3_clear_bindings(stmt.raw());
            }
            r
        };
        let r = run(&w.delete, &|s| unsafe {
            bind_text(s, 1, tab);
            ffi::sqlite3_bind_int64(s, 2, below);
        })
        .and_then(|_| {
            run(&w.insert, &|s| unsafe {
                bind_text(s, 1, tab);
                ffi::sqlite3_bind_int64(s, 2, seq);
                bind_blob(s, 3, result);
            })
        });
        if r.is_err() {
            self.writes = None;
        }
        r
    }

    /// Undoes the call begun with [`Calls::begin`] (it failed).
    pub fn abort(&mut self, db: &mut Db) {
        if let Some(mark) = self.open.take() {
            let _ = db.end_savepoint::<()>(&CALL, mark, Err(Error::BadParam("the call failed".into())));
        }
    }

    /// Records call `seq` of `tab` inside the transaction that is open (a
    /// `transaction()`'s, just before its `COMMIT`).
    pub fn record(&mut self, db: &mut Db, tab: &str, seq: i64, below: i64, result: &[u8]) -> Result<()> {
        if !db.in_transaction() {
            return Err(Error::BadParam("no transaction is open to record the call in".into()));
        }
        self.put(db.conn(), tab, seq, below, result)
    }

    /// The answer recorded for call `seq` of `tab`, if it committed.
    pub fn find(&self, db: &Db, tab: &str, seq: i64) -> Result<Option<Vec<u8>>> {
        let conn = db.conn();
        let Some(stmt) =
            prepare_if_recording(conn, "SELECT result FROM sqlite_resq_calls WHERE tab = ?1 AND seq = ?2")?
        else {
            return Ok(None);
        };
        unsafe {
            bind_text(stmt.raw(), 1, tab);
            ffi::sqlite3_bind_int64(stmt.raw(), 2, seq);
            match ffi::sqlite3_step(stmt.raw()) {
                ffi::SQLITE_ROW => {
                    let p = ffi::sqlite3_column_blob(stmt.raw(), 0) as *const u8;
                    let n = ffi::sqlite3_column_bytes(stmt.raw(), 0) as usize;
                    Ok(Some(if p.is_null() { Vec::new() } else { std::slice::from_raw_parts(p, n).to_vec() }))
                }
                ffi::SQLITE_DONE => Ok(None),
                rc => Err(conn.error(rc)),
            }
        }
    }

    /// Deletes the rows of the tabs not in `keep` (outside a transaction;
    /// `keep` empty: every row). Nothing is written when there are none.
    pub fn forget_all_but(&self, db: &mut Db, keep: &[String]) -> Result<()> {
        if db.in_transaction() {
            return Ok(());
        }
        let conn = db.conn();
        let Some(stmt) = prepare_if_recording(conn, "SELECT DISTINCT tab FROM sqlite_resq_calls")? else {
            return Ok(());
        };
        let mut gone = Vec::new();
        loop {
            match unsafe { ffi::sqlite3_step(stmt.raw()) } {
                ffi::SQLITE_ROW => {
                    let tab = unsafe { super::conn::column_text(stmt.raw(), 0) };
                    if !keep.contains(&tab) {
                        gone.push(tab);
                    }
                }
                ffi::SQLITE_DONE => break,
                rc => return Err(conn.error(rc)),
            }
        }
        drop(stmt);
        for tab in gone {
            self.forget(db, &tab)?;
        }
        Ok(())
    }

    /// Deletes the rows of `tab` (it left). Outside a transaction only: one
    /// open belongs to a caller, and this is none of its work.
    pub fn forget(&self, db: &mut Db, tab: &str) -> Result<()> {
        if db.in_transaction() {
            return Ok(());
        }
        let conn = db.conn();
        let Some(stmt) = prepare_if_recording(conn, "DELETE FROM sqlite_resq_calls WHERE tab = ?1")? else {
            return Ok(());
        };
        unsafe { bind_text(stmt.raw(), 1, tab) };
        conn.step_all(stmt.raw())
    }
}

/// Creates the table. SQLite refuses names that begin with `sqlite_` unless
/// the schema is writable, which the connection's defensive mode forbids:
/// both are lifted for this one statement, and restored whatever happens.
fn create(conn: &Conn) -> Result<()> {
    let db = conn.raw();
    let set = |op: c_int, on: bool| unsafe { ffi::sqlite3_db_config(db, op, on as c_int, ptr::null_mut::<c_int>()) };
    set(ffi::SQLITE_DBCONFIG_DEFENSIVE, false);
    set(ffi::SQLITE_DBCONFIG_WRITABLE_SCHEMA, true);
    let created = prepared(conn, CREATE).and_then(|s| conn.step_all(s.raw()));
    set(ffi::SQLITE_DBCONFIG_WRITABLE_SCHEMA, false);
    set(ffi::SQLITE_DBCONFIG_DEFENSIVE, true);
    created
}

fn prepared(conn: &Conn, sql: &str) -> Result<Statement> {
    conn.prepare(sql, 0)?.0.ok_or_else(|| Error::BadParam("internal SQL holds no statement".into()))
}

/// `sql` prepared, or `None` when the record's table does not exist (yet).
fn prepare_if_recording(conn: &Conn, sql: &str) -> Result<Option<Statement>> {
    match prepared(conn, sql) {
        Ok(s) => Ok(Some(s)),
        Err(Error::Sqlite { message, .. }) if message.contains("no such table") => Ok(None),
        Err(e) => Err(e),
    }
}
