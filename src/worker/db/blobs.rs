//! Stored BLOBs read on the [`Db`]: ranges of one value, and the
//! `blobStream` sessions (see `reads`), on this connection or, for a
//! session on a snapshot, on a reader of its own (see `snapshots`).

use super::Db;
use crate::codec::Result;

impl Db {
    /// Call this first in every call but the blob reads (see [`Reads`]).
    pub fn drop_read_handle(&mut self) {
        self.reads.drop_handle();
    }

    /// `(start, length)` of a range of one stored BLOB, checked against its size.
    pub fn blob_range(
        &mut self,
        table: &str,
        column: &str,
        rowid: i64,
        offset: Option<f64>,
        length: Option<f64>,
    ) -> Result<(u64, u64)> {
        self.reads.range(&self.conn, table, column, rowid, offset, length)
    }

    /// `readBlob`: bytes `[start, start + len)` of one cell (a range
    /// [`Db::blob_range`] checked), chunk by chunk into `sink(at, bytes)`.
    pub fn read_blob(
        &mut self,
        table: &str,
        column: &str,
        rowid: i64,
        start: u64,
        len: u64,
        sink: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<()> {
        self.reads.read(&self.conn, (table, column, rowid), start, len, sink)
    }

    /// Begins a `blobStream` session of `tab`'s: `(id, start, end)`.
    pub fn stream_open(
        &mut self,
        tab: &str,
        table: &str,
        column: &str,
        rowid: i64,
        offset: Option<f64>,
        length: Option<f64>,
    ) -> Result<(u32, u64, u64)> {
        self.reads.open_session(&self.conn, tab, (table, column, rowid), offset, length)
    }

    /// The cell `[start, start + len)` of `tab`'s session `id` is to be
    /// read from (with [`Db::read_blob`]), or why not: the session is
    /// unknown, ended, or, read here rather than `on_snapshot`, its value
    /// changed since it began (`SQLITE_ABORT`).
    pub fn stream_cell(
        &mut self,
        tab: &str,
        id: u32,
        range: (u64, u64),
        on_snapshot: bool,
    ) -> Result<(String, String, i64)> {
        self.reads.session_cell(tab, id, range, on_snapshot)
    }

    pub fn stream_close(&mut self, tab: &str, id: u32) {
        self.reads.close_session(tab, id);
    }

    /// Ends every `blobStream` session of `tab` (its caller left).
    pub fn streams_close(&mut self, tab: &str) {
        self.reads.close_sessions(tab);
    }

    /// Records a session of `tab`'s on a cell whose range a snapshot of its
    /// own checked (see `snapshots`), ending at byte `end`: its id.
    pub fn stream_register(&mut self, tab: &str, cell: (&str, &str, i64), end: u64) -> u32 {
        self.reads.register(tab, cell, end, false)
    }

    /// Session `id` is still open.
    pub fn stream_is_open(&self, id: u32) -> bool {
        self.reads.is_open(id)
    }

    /// Begins the read transaction a reader keeps for a snapshot: what it
    /// reads next, and until [`Db::end_snapshot`], is of the last commit
    /// before that read.
    pub fn begin_snapshot(&mut self) -> Result<()> {
        self.exec_simple("BEGIN")
    }

    /// Ends the snapshot's read transaction, and drops its read handle.
    pub fn end_snapshot(&mut self) {
        self.drop_read_handle();
        if self.conn.in_transaction() {
            let _ = self.exec_simple("ROLLBACK");
        }
    }
}
