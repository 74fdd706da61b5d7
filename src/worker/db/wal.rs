//! The WAL as the writer sees it: its frames since the last checkpoint,
//! when a checkpoint is due, and the checkpoints themselves (in slices,
//! `backfill`; or whole, before an export).

use super::Db;
use crate::codec::Result;
use crate::worker::backfill::{Backfill, Slice};
use crate::worker::journal;

impl Db {
    /// Whether the WAL is due a checkpoint: the call that committed
    /// checkpoints before the next runs (`journal::due`). The answer is
    /// kept until the WAL changes, since every call asks.
    pub fn checkpoint_due(&mut self) -> Result<bool> {
        let frames = self.hooks.wal_frames();
        if frames == 0 {
            return Ok(false);
        }
        let key = (self.hooks.commits(), frames);
        if let Some((k, due)) = self.due {
            if k == key {
                return Ok(due);
            }
        }
        let shrinks = self.shrinks()?;
        let due = journal::due(frames, self.page_size()?, shrinks, || Backfill::pages_to_copy(&self.conn))?;
        self.due = Some((key, due));
        Ok(due)
    }

    /// Whether the last commit left the database smaller than the file
    /// has grown (a VACUUM's): a copy would give the space back. The
    /// file's size is asked once (an OPFS call), then followed from the
    /// commits' sizes: it is taken as the largest since the WAL was last
    /// copied whole, which a copy may or may not have written yet.
    fn shrinks(&mut self) -> Result<bool> {
        let Some(now) = Backfill::commit_pages(&self.conn) else { return Ok(false) };
        let high = match self.file_pages {
            Some(high) => high,
            None => Backfill::file_pages(&self.conn)?.unwrap_or(0),
        };
        self.file_pages = Some(high.max(now));
        Ok(now < high)
    }

    /// Frames in the WAL that no checkpoint has copied yet.
    pub fn wal_frames(&self) -> i32 {
        self.hooks.wal_frames()
    }

    /// Commits into the WAL since this connection opened (see `hooks`).
    pub fn commits(&self) -> u64 {
        self.hooks.commits()
    }

    /// The page size, read once (WAL fixes it).
    pub fn page_size(&mut self) -> Result<i64> {
        if self.page_size == 0 {
            self.page_size = self.conn.figure("PRAGMA main.page_size")?;
        }
        Ok(self.page_size)
    }

    /// Whether the WAL holds frames a checkpoint could copy.
    pub fn wal_pending(&self) -> bool {
        self.hooks.wal_frames() > 0
    }

    /// Copies a slice of the WAL into the database file (see `backfill`),
    /// outside a transaction. Returns whether it copied frames and more
    /// are left: the worker comes back for the next slice, holding writes
    /// back meanwhile (`queue.ts`), so every commit after a copy that ends
    /// writes the WAL over from its start, as after SQLite's checkpoint.
    pub fn checkpoint_slice(&mut self) -> Result<bool> {
        if self.conn.in_transaction() || self.hooks.wal_frames() == 0 {
            return Ok(false);
        }
        if self.backfill.is_none() {
            // A kept read handle's snapshot would keep frames back.
            self.drop_read_handle();
            self.backfill = Backfill::plan(&self.conn)?;
        }
        let Some(plan) = self.backfill.as_mut() else { return Ok(false) };
        let slice = plan.slice(&self.conn, journal::SLICE);
        if !matches!(slice, Ok(Slice::More | Slice::Busy)) {
            self.backfill = None;
        }
        match slice? {
            Slice::More => Ok(true),
            Slice::Busy | Slice::Stale => Ok(false),
            Slice::Done(left) => {
                self.hooks.wal_checkpointed(left as i32);
                if left == 0 {
                    // The file was cut to the database's size.
                    self.file_pages = Backfill::commit_pages(&self.conn);
                }
                // What a reader's snapshot kept back, or committed since.
                Ok(left > 0)
            }
        }
    }

    /// Copies every committed frame into the database file and empties the
    /// WAL (see `journal::checkpoint_all`); nothing inside a transaction.
    /// Frames from before this connection (a crash's) count too.
    pub fn checkpoint_all(&mut self) -> Result<()> {
        if self.conn.in_transaction() {
            return Ok(());
        }
        self.backfill = None;
        // A kept read handle holds a read transaction, in which SQLite
        // checkpoints nothing (SQLITE_LOCKED).
        self.drop_read_handle();
        journal::checkpoint_all(&self.conn)?;
        self.hooks.wal_checkpointed(0);
        self.file_pages = None;
        Ok(())
    }
}
