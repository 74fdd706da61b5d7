//! The connection's hooks. SQLite keeps one hook of each kind per
//! connection, so each is installed here once, for the connection's life,
//! and told to every part that listens:
//!
//! | hook | heard by |
//! |---|---|
//! | update | `blobStream` sessions (`reads`): a row of theirs changed |
//! | pre-update | change tracking (`codec::changes`): a table of `main` changed; the placeholder [`Watch`] of a streaming `execute` (`streams`), while its statement steps |
//! | commit | change tracking: the pending tables are committed |
//! | rollback | sessions (their values may be undone); change tracking: the pending tables are not |
//! | WAL | the checkpoints' schedule (`journal`): the frames in the `-wal` file after each commit; kept snapshots (`snapshots`): a commit was made |
//!
//! Installing the WAL hook replaces SQLite's own automatic checkpoint
//! (itself a WAL hook), so no commit pays for a checkpoint by surprise:
//! the worker checkpoints when it is idle, or when the WAL has grown past
//! its bound (`journal::due`).
//!
//! A registered pre-update hook also turns off SQLite's truncate
//! optimization, by which `DELETE FROM t` without a `WHERE` erases the
//! table's pages without visiting its rows and so without calling any hook
//! (`sqlite3DeleteFrom` checks `db->xPreUpdateCallback` when it codes the
//! statement). Such a `DELETE` now deletes row by row: slower on a large
//! table, but seen by change tracking and by the sessions' update hook.
//!
//! No hook sees the schema table (`sqlite_schema`) written: DDL writes it
//! through SQL that SQLite parses nested, and a nested parse leaves the
//! table off the opcodes that call the hooks (`if( !pParse->nested )` before
//! `P4_TABLE` in SQLite's insert and delete code). Nor does a hook see a
//! virtual table's rows. So DDL is marked by `Db` before a `CREATE`, `DROP`
//! or `ALTER` steps ([`Hooks::changes`]), and a virtual table is tracked
//! through its shadow tables (see `tables`).
//!
//! `Db` installs the hooks when it opens the connection and removes them
//! before it closes (or drops) it, so no hook outlives what it points to.

use super::conn::Conn;
use super::reads::Sessions;
use super::streams::Watch;
use crate::codec::changes::Changes;
use sqlite_wasm_rs as ffi;
use std::cell::{Cell, RefCell, RefMut};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::rc::Rc;

/// What the hooks tell; boxed, as the hooks hold its address.
struct Listeners {
    sessions: Rc<RefCell<Sessions>>,
    changes: RefCell<Changes>,
    /// The streaming statement's watch while it steps, else null.
    watch: Cell<*mut Watch>,
    /// Frames in `main`'s `-wal` file after the last commit (0 before
    /// any, and after a checkpoint that emptied it).
    wal_frames: Cell<i32>,
    /// Commits into `main`'s WAL since the connection opened.
    commits: Cell<u64>,
}

pub struct Hooks {
    listeners: Box<Listeners>,
    installed: bool,
}

// The hooks run inside SQLite calls the worker makes, never while a listener
// is borrowed by the worker's own code; `try_borrow_mut` keeps that a rule
// rather than a panic in a callback.

unsafe extern "C" fn on_update(ctx: *mut c_void, _op: c_int, db: *const c_char, table: *const c_char, rowid: i64) {
    let l = &*(ctx as *const Listeners);
    if let Ok(mut sessions) = l.sessions.try_borrow_mut() {
        sessions.row_changed(CStr::from_ptr(db).to_bytes(), CStr::from_ptr(table).to_bytes(), rowid);
    }
}

unsafe extern "C" fn on_preupdate(
    ctx: *mut c_void,
    db: *mut ffi::sqlite3,
    op: c_int,
    schema: *const c_char,
    table: *const c_char,
    _old_rowid: i64,
    new_rowid: i64,
) {
    let l = &*(ctx as *const Listeners);
    if CStr::from_ptr(schema).to_bytes() == b"main" {
        if let Ok(mut changes) = l.changes.try_borrow_mut() {
            changes.changed(&CStr::from_ptr(table).to_string_lossy());
        }
    }
    let watch = l.watch.get();
    if !watch.is_null() {
        (*watch).note(db, op, schema, table, new_rowid);
    }
}

unsafe extern "C" fn on_commit(ctx: *mut c_void) -> c_int {
    let l = &*(ctx as *const Listeners);
    if let Ok(mut changes) = l.changes.try_borrow_mut() {
        changes.committed();
    }
    0 // go on with the commit
}

unsafe extern "C" fn on_wal(ctx: *mut c_void, _db: *mut ffi::sqlite3, schema: *const c_char, frames: c_int) -> c_int {
    let l = &*(ctx as *const Listeners);
    if CStr::from_ptr(schema).to_bytes() == b"main" {
        l.wal_frames.set(frames);
        l.commits.set(l.commits.get() + 1);
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn on_rollback(ctx: *mut c_void) {
    let l = &*(ctx as *const Listeners);
    if let Ok(mut sessions) = l.sessions.try_borrow_mut() {
        sessions.rolled_back();
    }
    if let Ok(mut changes) = l.changes.try_borrow_mut() {
        changes.rolled_back();
    }
}

impl Hooks {
    /// Installs every hook on `conn`, before it runs any statement: the
    /// truncate optimization is decided when a statement is prepared.
    pub fn install(conn: &Conn, sessions: Rc<RefCell<Sessions>>) -> Hooks {
        let listeners = Box::new(Listeners {
            sessions,
            changes: RefCell::default(),
            watch: Cell::new(ptr::null_mut()),
            wal_frames: Cell::new(0),
            commits: Cell::new(0),
        });
        let ctx = &*listeners as *const Listeners as *mut c_void;
        unsafe {
            ffi::sqlite3_update_hook(conn.raw(), Some(on_update), ctx);
            ffi::sqlite3_preupdate_hook(conn.raw(), Some(on_preupdate), ctx);
            ffi::sqlite3_commit_hook(conn.raw(), Some(on_commit), ctx);
            ffi::sqlite3_rollback_hook(conn.raw(), Some(on_rollback), ctx);
            ffi::sqlite3_wal_hook(conn.raw(), Some(on_wal), ctx);
        }
        Hooks { listeners, installed: true }
    }

    /// Removes every hook (before the connection closes). A second call,
    /// or one on a closed connection, does nothing.
    pub fn remove(&mut self, conn: &Conn) {
        if !self.installed || conn.raw().is_null() {
            return;
        }
        unsafe {
            ffi::sqlite3_update_hook(conn.raw(), None, ptr::null_mut());
            ffi::sqlite3_preupdate_hook(conn.raw(), None, ptr::null_mut());
            ffi::sqlite3_commit_hook(conn.raw(), None, ptr::null_mut());
            ffi::sqlite3_rollback_hook(conn.raw(), None, ptr::null_mut());
            ffi::sqlite3_wal_hook(conn.raw(), None, ptr::null_mut());
        }
        self.installed = false;
    }

    /// The tables changed, pending and committed (not while a statement steps).
    pub fn changes(&self) -> RefMut<'_, Changes> {
        self.listeners.changes.borrow_mut()
    }

    /// Frames in the `-wal` file after the last commit (see [`Hooks::wal_checkpointed`]).
    pub fn wal_frames(&self) -> i32 {
        self.listeners.wal_frames.get()
    }

    /// Commits into the WAL so far: a reader that began its snapshot when
    /// this was the same reads the last commit.
    pub fn commits(&self) -> u64 {
        self.listeners.commits.get()
    }

    /// A checkpoint left `frames` in the WAL that no reader's snapshot
    /// still needs to be kept (0 when it copied them all).
    pub fn wal_checkpointed(&self, frames: i32) {
        self.listeners.wal_frames.set(frames);
    }

    /// Runs `f` (which steps a streaming statement) with `watch` told of
    /// every row change.
    pub fn watching<T>(&self, watch: &mut Watch, f: impl FnOnce() -> T) -> T {
        self.listeners.watch.set(watch);
        let result = f();
        self.listeners.watch.set(ptr::null_mut());
        result
    }
}
