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
//! A `readBlob` far into a value reads on a snapshot too, kept for the value
//! while nothing commits ([`Snapshots::blob_read`]): a media player's
//! seeks, with the gallery's calls in between, each find their place from
//! the value's kept blob handle rather than walking its overflow-page chain
//! from the start again (about 0.2 ms per MiB walked). The snapshot is
//! current as long as the writer has made no commit since it began, so a
//! read there sees the last commit, as a read anywhere must; after a commit
//! it is let go, and the next such read begins another. One begun while
//! another session's write is under way reads beside it. A `readBlob` near
//! the start of a value made beside the writer reads on a reader, which
//! ends its read with the call.
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

/// A `readBlob` from this many bytes into a value on reads on a snapshot
/// kept for the value ([`Snapshots::blob_read`]); nearer, finding the place
/// from the start costs under a millisecond.
const SEEK_FROM: f64 = (4 << 20) as f64;

/// Values kept on snapshots for `readBlob`s at once, the least recently
/// read let go first: two videos playing, say.
const MAX_SEEKS: usize = 2;

/// A snapshot kept for `readBlob`s of one value.
struct Seek {
    cell: (String, String, i64),
    /// The writer's commits when it began: it is current while they are.
    commits: u64,
    db: Db,
}

#[derive(Default)]
pub struct Snapshots {
    /// The streams reading on a snapshot, by session id.
    open: Vec<(u32, Db)>,
    /// The export in progress, when it reads on a snapshot.
    export: Option<Db>,
    /// The values `readBlob` keeps a snapshot for, least recently read first.
    seeks: Vec<Seek>,
    idle: Vec<Db>,
}

/// Where a chunk of a stream is read: on the writer, or on the snapshot at
/// this place among the open ones (until a [`Snapshots`] method changes them).
pub enum On {
    Writer,
    Snapshot(usize),
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
        match (self.open.iter().position(|(x, _)| *x == id), beside) {
            (Some(i), _) => Ok(On::Snapshot(i)),
            (None, false) => Ok(On::Writer),
            (None, true) => Err(Error::OnWriter),
        }
    }

    /// Reads `[start, start + len)` of `cell` on the snapshot at `i`, as
    /// [`Snapshots::on`] found it, into `sink`; the snapshot is let go
    /// after the stream's last chunk, or an error.
    pub fn read(
        &mut self,
        writer: &Db,
        i: usize,
        cell: (&str, &str, i64),
        (start, len): (u64, u64),
        sink: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<()> {
        let (id, snap) = &mut self.open[i];
        let r = snap.read_blob(cell.0, cell.1, cell.2, start, len, sink);
        if r.is_err() || !writer.stream_is_open(*id) {
            let (_, snap) = self.open.swap_remove(i);
            self.put_back(snap);
        }
        r
    }

    /// Runs `read`, a `readBlob` of `cell` from `offset` bytes in, on a
    /// reader of the last commit: on the snapshot kept for `cell` far into
    /// a value (see the module's notes), or, `beside` the writer, on a
    /// reader for this call alone. `None`: the writer runs it (inside its
    /// transaction, near the start, or on a database without readers; a
    /// read that failed here, so its error is the writer's). `beside`, it
    /// never answers `None`, but `RESQ_ON_WRITER` where there is no reader.
    pub fn blob_read<T>(
        &mut self,
        writer: &Db,
        reader: &dyn Fn() -> Result<Db>,
        cell: (&str, &str, i64),
        offset: f64,
        beside: bool,
        read: impl FnOnce(&mut Db) -> Result<T>,
    ) -> Option<Result<T>> {
        if writer.in_transaction() && !beside {
            return None;
        }
        self.forget_stale(writer);
        if offset < SEEK_FROM {
            if !beside {
                return None;
            }
            let Some(mut db) = self.idle.pop().or_else(|| reader().ok()) else {
                return Some(Err(Error::OnWriter));
            };
            let r = read(&mut db);
            self.put_back(db);
            return Some(r);
        }
        let seek = match self.seeks.iter().position(|x| (x.cell.0.as_str(), x.cell.1.as_str(), x.cell.2) == cell) {
            Some(i) => self.seeks.remove(i),
            None => match self.begin_seek(writer, reader, cell) {
                Ok(seek) => seek,
                Err(e) => return beside.then_some(Err(e)),
            },
        };
        self.seeks.push(seek);
        let last = self.seeks.len() - 1;
        let r = read(&mut self.seeks[last].db);
        if r.is_err() {
            let seek = self.seeks.pop().unwrap();
            self.put_back(seek.db);
            if !beside {
                return None;
            }
        }
        Some(r)
    }

    /// A snapshot for `readBlob`s of `cell`, begun now; the least recently
    /// read one is let go at [`MAX_SEEKS`].
    fn begin_seek(&mut self, writer: &Db, reader: &dyn Fn() -> Result<Db>, cell: (&str, &str, i64)) -> Result<Seek> {
        if self.seeks.len() >= MAX_SEEKS {
            let oldest = self.seeks.remove(0);
            self.put_back(oldest.db);
        }
        let mut db = self.idle.pop().map_or_else(reader, Ok)?;
        if let Err(e) = db.begin_snapshot() {
            self.put_back(db);
            return Err(e);
        }
        let cell = (cell.0.to_owned(), cell.1.to_owned(), cell.2);
        Ok(Seek { cell, commits: writer.commits(), db })
    }

    /// Lets go the snapshots of sessions that ended (finished, cancelled,
    /// their caller gone, or forgotten past the writer's cap), and those
    /// kept for `readBlob`s that a commit has made stale.
    pub fn forget_ended(&mut self, writer: &Db) {
        let (ended, open): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.open).into_iter().partition(|(id, _)| !writer.stream_is_open(*id));
        self.open = open;
        for (_, snap) in ended {
            self.put_back(snap);
        }
        self.forget_stale(writer);
    }

    fn forget_stale(&mut self, writer: &Db) {
        let now = writer.commits();
        // On every readBlob: nothing to move in the usual case.
        if self.seeks.iter().all(|x| x.commits == now) {
            return;
        }
        let (stale, current): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.seeks).into_iter().partition(|x| x.commits != now);
        self.seeks = current;
        for seek in stale {
            self.put_back(seek.db);
        }
    }

    /// Lets every stream's snapshot go: they read on the writer from now on
    /// (see the module's notes); and those kept for `readBlob`s.
    pub fn let_go(&mut self) {
        for (_, snap) in std::mem::take(&mut self.open) {
            self.put_back(snap);
        }
        for seek in std::mem::take(&mut self.seeks) {
            self.put_back(seek.db);
        }
    }

    /// Lets every snapshot go, the export's too (it ends), and closes every
    /// reader: the database is to leave WAL, or close.
    pub fn close(&mut self, writer: &mut Db) {
        self.let_go();
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
            self.let_go();
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
        self.let_go();
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
