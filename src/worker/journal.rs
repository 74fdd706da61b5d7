//! The journal mode of a database on OPFS: WAL, and the rollback journal
//! for the two things WAL cannot do.
//!
//! Under WAL a commit is one write of its pages to the `-wal` file and one
//! flush (`synchronous=FULL`), where the rollback journal took three; and
//! readers see the last commit while a writer works. Its wal-index lives
//! in the worker's memory (`gather/shm.rs`), since one worker owns the
//! file. Two things keep a database off WAL for a while:
//!
//! - **A new database stays on the rollback journal until it has a page.**
//!   WAL fixes the page size when it begins, and `PRAGMA page_size` before
//!   the first table is how a page size is chosen. [`settle`] moves it to
//!   WAL before the first statement after its first commit.
//! - **A rekey, and an import whose page size differs**, run on the
//!   rollback journal ([`off_wal`]): SQLite3 Multiple Ciphers cannot
//!   encrypt a plain database in WAL mode, the backup API cannot change a
//!   WAL database's page size, and a rekey cut off midway is recovered from
//!   its journal (`cipher.rs`). Leaving WAL checkpoints every frame into
//!   the file first; the database goes back to WAL after.
//!
//! **Checkpoints** copy the WAL's pages into the database file. SQLite's
//! automatic one (at 1,000 pages, at the end of the commit that reaches
//! them) is off (`hooks.rs` has the WAL hook): the worker checkpoints when
//! its queue is idle, and after the reply of a call whose commit left a
//! copy enough to write, or the WAL large enough ([`due`]), in slices of
//! [`SLICE`] bytes with the worker's other calls between them
//! (`backfill.rs`). A large value is
//! still written twice, but neither its call nor the next waits for the
//! second write.
//!
//! A memory database keeps its journal in memory and never uses WAL.

use super::backfill::ToCopy;
use super::conn::Conn;
use crate::codec::{Error, Result};

/// The rollback journal: TRUNCATE keeps the journal's pool slot and, with
/// `synchronous=FULL`, syncs after the truncation that marks a commit.
const ROLLBACK: &str = "PRAGMA journal_mode=TRUNCATE";
const WAL: &str = "PRAGMA journal_mode=WAL";

/// Sets up a connection on OPFS: every commit flushed, and WAL if the
/// database has pages. Returns whether it still has to move to WAL
/// (see [`settle`]).
pub fn open(conn: &Conn) -> Result<bool> {
    conn.row("PRAGMA synchronous=FULL", |_| {})?;
    // The WAL is truncated back to 64 MiB when a checkpoint has emptied it.
    conn.row("PRAGMA journal_size_limit=67108864", |_| {})?;
    if conn.figure("PRAGMA main.page_count")? == 0 {
        set(conn, ROLLBACK, "truncate")?;
        return Ok(true);
    }
    set(conn, WAL, "wal")?;
    Ok(false)
}

/// Moves a new database to WAL once it has a page, outside a transaction.
/// Returns whether it still has to.
pub fn settle(conn: &Conn) -> Result<bool> {
    if conn.in_transaction() || conn.figure("PRAGMA main.page_count")? == 0 {
        return Ok(true);
    }
    set(conn, WAL, "wal")?;
    Ok(false)
}

/// Runs `f` with the database on the rollback journal, and puts it back on
/// WAL after if it was there, whatever `f` gave.
pub fn off_wal<T>(conn: &Conn, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if !in_wal(conn)? {
        return f();
    }
    set(conn, ROLLBACK, "truncate")?;
    let result = f();
    let back = set(conn, WAL, "wal");
    let value = result?;
    back.map(|_| value)
}

/// Whether the database of `conn` is in WAL mode now.
pub fn in_wal(conn: &Conn) -> Result<bool> {
    Ok(conn.texts("PRAGMA main.journal_mode", |_| {})?.first().is_some_and(|m| m == "wal"))
}

/// When the worker checkpoints after the reply of the call that
/// committed, however rarely it is idle, is decided by what a copy would
/// write (`Backfill::pages_to_copy`) and by the WAL's size:
///
/// - [`GROWTH_BOUND`] of pages past the database file's end: until a copy
///   writes them, they take the origin's quota twice over (in the WAL, and
///   as the file grows to take them), and on a full disk a WAL that cannot
///   be copied leaves no room for the DELETE and VACUUM that would free it;
/// - [`COPY_BOUND`] of pages in all: writes wait for a copy's end, so this
///   bounds how long they wait (a 16 MiB copy takes tens of milliseconds);
/// - [`WAL_BOUND`] of WAL.
///
/// A copy takes each page's last frame only, so commits that write the
/// same pages over wait for the last two: a value rewritten by each commit
/// alternates between two sets of pages (SQLite writes the new version
/// before it frees the old), which stay in the file once copied. At 8 MiB
/// of WAL alone, 128 appends building an 8 MB value copied about as much
/// as they wrote, and took 1.3–1.7× as long (experiment 027).
const GROWTH_BOUND: i64 = 8 << 20;
const COPY_BOUND: i64 = 16 << 20;

/// The size `journal_size_limit` lets the `-wal` file keep after a
/// checkpoint: a WAL this large takes no more of the origin's quota than
/// an emptied one may.
const WAL_BOUND: i64 = 64 << 20;

/// Whether a WAL of `frames` frames of `page_size`-byte pages is due a
/// checkpoint: at once if its last commit `shrinks` the database (a copy
/// gives the space back: a full disk's DELETE and VACUUM make room only
/// then); `copy` says what a copy would write, asked only once the WAL
/// holds enough frames for it to matter.
pub fn due(frames: i32, page_size: i64, shrinks: bool, copy: impl FnOnce() -> Result<ToCopy>) -> Result<bool> {
    let wal = i64::from(frames) * (page_size + 24);
    if shrinks || wal >= WAL_BOUND {
        return Ok(true);
    }
    if i64::from(frames) * page_size < GROWTH_BOUND {
        return Ok(false);
    }
    let copy = copy()?;
    Ok(i64::from(copy.growth) * page_size >= GROWTH_BOUND || i64::from(copy.pages) * page_size >= COPY_BOUND)
}

/// Whether a WAL of `frames` frames has grown so far past its bound
/// (twice) that the snapshots of streams holding it back are let go (see
/// `snapshots`): a stream read slowly, or paused, must not let the WAL
/// take the origin's quota while others write.
pub fn held_too_long(frames: i32, page_size: i64) -> bool {
    i64::from(frames) * (page_size + 24) >= 2 * WAL_BOUND
}

/// Bytes one slice of a checkpoint copies (`backfill`): a few
/// milliseconds of OPFS reads and writes, so a call that comes meanwhile
/// waits no longer than that (a 1 GiB WAL copied at once held the worker
/// 6–7 s).
pub const SLICE: i64 = 2 << 20;

/// Copies every committed frame into the database file, then empties the
/// WAL, so the file alone holds the last commit (`export()`): `RESQ_LOCKED`
/// if a reader keeps a frame from it. Nothing to do outside WAL mode.
pub fn checkpoint_all(conn: &Conn) -> Result<()> {
    // Outside WAL mode the pragma answers (0, -1, -1).
    let row = conn.row("PRAGMA main.wal_checkpoint(TRUNCATE)", |_| {})?;
    let at = |i: usize| row.get(i).copied().unwrap_or(0);
    if at(0) != 0 || at(1) != at(2) {
        return Err(Error::Locked("the database is busy: its WAL could not be checkpointed".into()));
    }
    Ok(())
}

/// Runs a journal-mode pragma and checks SQLite took it: it answers with the
/// mode it is in, which is the old one when it could not change.
fn set(conn: &Conn, pragma: &str, mode: &str) -> Result<()> {
    let now = conn.texts(pragma, |_| {})?;
    if now.first().map(String::as_str) != Some(mode) {
        return Err(Error::Locked(format!(
            "the journal mode could not become {mode} (it is {}): another connection is using the database",
            now.first().map_or("unknown", String::as_str)
        )));
    }
    Ok(())
}
