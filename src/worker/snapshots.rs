//! `blobStream`s on snapshots. A stream of committed data reads on a reader
//! connection of its own, which holds a read transaction (its snapshot) and
//! the value's blob handle from the stream's first chunk to its last. The
//! calls that run in between, on the writer or on the worker's shared
//! reader, touch neither. So the stream keeps its place in the value's
//! overflow-page chain (a chunk costs the same wherever it is, however many
//! calls come between two of them), and it delivers the value it began on,
//! whatever commits meanwhile. Its chunks need nothing of the writer: they
//! are read while another session's write awaits its next chunk.
//!
//! The writer's session list (`reads`) keeps every stream's caller, its
//! end, and whether its row changed; a snapshot only says where the chunks
//! come from. A stream begun inside a transaction reads that transaction's
//! writes, so on the writer; so does one past [`MAX_OPEN`] streams, and
//! every stream of a database in memory (it has no WAL, so no readers).
//!
//! A snapshot keeps the WAL from being copied back past it. So it is let go
//! ([`Snapshots::let_go`]) when the WAL has to empty (an export; a rekey,
//! an import or a close, which leave WAL), and when the WAL has grown to
//! [`journal::held_too_long`] behind it. Its stream then reads on the
//! writer, like one that never had a snapshot: it goes on if its row did
//! not change since it began, and fails with `SQLITE_ABORT` if it did.
//!
//! An `export()` reads on a snapshot too ([`Snapshots::export_begin`]). A
//! plain database's pages come through the snapshot's pager, the WAL's
//! included, so streams keep theirs. An encrypted database's leave as they
//! are stored, from the file: the WAL is emptied into it first (streams'
//! snapshots let go), and the snapshot begun right after reads the file
//! alone; SQLite copies nothing into the file while such a reader reads
//! it. Either way commits go on into the WAL meanwhile. The export is
//! never let go for the WAL's size (that would fail it): it holds the
//! checkpoints back until it is read to its end, cancelled, or ended by
//! the worker's queue.

use super::cipher;
use super::db::Db;
use super::journal;
use crate::codec::{Error, Result};

/// Streams read on snapshots at once; more read on the writer. Each is a
/// connection, with its page cache.
const MAX_OPEN: usize = 4;

/// Readers kept, without a snapshot, for the next stream: opening one reads
/// the schema again (and an encrypted one derives its key).
const MAX_IDLE: usize = 1;

#[derive(Default)]
pub struct Snapshots {
    /// The streams reading on a snapshot, by session id.
    open: Vec<(u32, Db)>,
    /// The export in progress, when it reads on a snapshot.
    export: Option<Db>,
    idle: Vec<Db>,
}

/// Where a chunk of a stream is read.
pub enum On {
    Writer,
    Snapshot,
}

impl Snapshots {
    /// Begins `tab`'s stream on a range of `cell`: `(id, start, end)`.
    /// `beside`: the writer is another call's now, so the stream must begin
    /// on a snapshot or not here (`RESQ_ON_WRITER`). `reader` opens a
    /// reader of the database (`RESQ_ON_WRITER` where there is none).
    pub fn open(
        &mut self,
        writer: &mut Db,
        reader: &dyn Fn() -> Result<Db>,
        tab: &str,
        cell: (&str, &str, i64),
        (offset, length): (Option<f64>, Option<f64>),
        beside: bool,
    ) -> Result<(u32, u64, u64)> {
        self.forget_ended(writer);
        let snapshot = if writer.in_transaction() && !beside { None } else { self.take(reader) };
        let Some(mut snap) = snapshot else {
            if beside {
                return Err(Error::OnWriter);
            }
            return writer.stream_open(tab, cell.0, cell.1, cell.2, offset, length);
        };
        let range = snap.begin_snapshot().and_then(|_| snap.blob_range(cell.0, cell.1, cell.2, offset, length));
        let (start, len) = match range {
            Ok(range) => range,
            Err(e) => {
                self.put_back(snap);
                return Err(e);
            }
        };
        let id = writer.stream_register(tab, cell, start + len);
        self.open.push((id, snap));
        Ok((id, start, start + len))
    }

    /// Where session `id`'s next chunk is read: on its snapshot if it has
    /// one; else on the writer, which must be free for it (not `beside`).
    pub fn on(&self, id: u32, beside: bool) -> Result<On> {
        match (self.open.iter().any(|(x, _)| *x == id), beside) {
            (true, _) => Ok(On::Snapshot),
            (false, false) => Ok(On::Writer),
            (false, true) => Err(Error::OnWriter),
        }
    }

    /// Reads `[start, start + len)` of `cell` on session `id`'s snapshot
    /// (see [`Snapshots::on`]) into `sink`; the snapshot is let go after
    /// the stream's last chunk, or an error.
    pub fn read(
        &mut self,
        writer: &Db,
        id: u32,
        cell: (&str, &str, i64),
        (start, len): (u64, u64),
        sink: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<()> {
        let Some(i) = self.open.iter().position(|(x, _)| *x == id) else {
            return Err(Error::OnWriter);
        };
        let r = self.open[i].1.read_blob(cell.0, cell.1, cell.2, start, len, sink);
        if r.is_err() || !writer.stream_is_open(id) {
            let (_, snap) = self.open.swap_remove(i);
            self.put_back(snap);
        }
        r
    }

    /// Lets go the snapshots of sessions that ended (finished, cancelled,
    /// their caller gone, or forgotten past the writer's cap).
    pub fn forget_ended(&mut self, writer: &Db) {
        let (ended, open): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.open).into_iter().partition(|(id, _)| !writer.stream_is_open(*id));
        self.open = open;
        for (_, snap) in ended {
            self.put_back(snap);
        }
    }

    /// Lets every stream's snapshot go: they read on the writer from now on
    /// (see the module's notes).
    pub fn let_go(&mut self, writer: &mut Db) {
        for (id, snap) in std::mem::take(&mut self.open) {
            writer.stream_lost_snapshot(id);
            self.put_back(snap);
        }
    }

    /// Lets every snapshot go, the export's too (it ends), and closes every
    /// reader: the database is to leave WAL, or close.
    pub fn close(&mut self, writer: &mut Db) {
        self.let_go(writer);
        self.export_end(writer);
        for mut snap in self.idle.drain(..) {
            let _ = snap.close();
        }
    }

    /// Begins an `export()`: the file's size, and whether it reads on a
    /// snapshot. On one, nothing else waits for it: the WAL is emptied into
    /// the file, and the snapshot, begun right after, reads the file alone,
    /// which no checkpoint writes into until it ends (commits meanwhile
    /// stay in the WAL). Without one (a database in memory, or not in WAL
    /// mode yet) it reads on the writer, which nothing else may use until
    /// it ends.
    pub fn export_begin(&mut self, writer: &mut Db, reader: &dyn Fn() -> Result<Db>) -> Result<(u64, bool)> {
        self.export_end(writer);
        if writer.in_transaction() {
            return writer.export_begin().map(|size| (size, false));
        }
        // A plain database's pages are read through the snapshot's pager,
        // the WAL's included: nothing has to empty. An encrypted one's
        // leave as they are stored, from the file: the WAL empties into it
        // first, and no stream's snapshot may hold it.
        let plain = !cipher::keyed(writer.conn());
        if !plain {
            self.let_go(writer);
        }
        let Some(mut snap) = self.take(reader) else {
            return writer.export_begin().map(|size| (size, false));
        };
        let ready = if plain { Ok(()) } else { writer.export_checkpoint() };
        let size = ready.and_then(|_| snap.begin_snapshot()).and_then(|_| snap.export_here(plain));
        match size {
            Ok(size) => {
                self.export = Some(snap);
                Ok((size, true))
            }
            Err(e) => {
                self.put_back(snap);
                Err(e)
            }
        }
    }

    /// Bytes the next [`Snapshots::export_read`] of at most `max` gives.
    pub fn export_next_len(&self, writer: &Db, max: u64) -> u64 {
        self.export.as_ref().unwrap_or(writer).export_next_len(max)
    }

    /// Reads the export's next bytes (see `Db::export_read`); its snapshot
    /// is let go after the last page, or an error.
    pub fn export_read(&mut self, writer: &mut Db, max: u64, sink: &mut dyn FnMut(u64, &[u8])) -> Result<()> {
        let Some(snap) = self.export.as_mut() else {
            return writer.export_read(max, sink);
        };
        let r = snap.export_read(max, sink);
        if r.is_err() || snap.export_next_len(1) == 0 {
            self.export_end(writer);
        }
        r
    }

    /// Ends the export in progress, if any.
    pub fn export_end(&mut self, writer: &mut Db) {
        writer.export_end();
        if let Some(mut snap) = self.export.take() {
            snap.export_end();
            self.put_back(snap);
        }
    }

    /// Lets the snapshots go if the WAL has grown far past its bound behind
    /// them (see `journal::held_too_long`): `true` if it did.
    pub fn let_go_if_held(&mut self, writer: &mut Db) -> Result<bool> {
        if self.open.is_empty() || !journal::held_too_long(writer.wal_frames(), writer.page_size()?) {
            return Ok(false);
        }
        self.let_go(writer);
        Ok(true)
    }

    /// A reader for a new snapshot: one kept idle, or a new one; `None` at
    /// [`MAX_OPEN`], or where the database has no readers.
    fn take(&mut self, reader: &dyn Fn() -> Result<Db>) -> Option<Db> {
        if self.open.len() >= MAX_OPEN {
            return None;
        }
        self.idle.pop().or_else(|| reader().ok())
    }

    fn put_back(&mut self, mut snap: Db) {
        snap.end_snapshot();
        if self.idle.len() < MAX_IDLE {
            self.idle.push(snap);
        } else {
            let _ = snap.close();
        }
    }
}
