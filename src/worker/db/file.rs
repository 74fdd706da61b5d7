//! The database as a file: an `export()` reads its pages out in order, of
//! one state (a snapshot's, or with nothing else running meanwhile);
//! `importDatabase` checks a file and copies it over the database (see
//! `backup`).

use super::Db;
use crate::codec::backup::HEADER_LEN;
use crate::codec::changes::SCHEMA;
use crate::codec::{Error, Result};
use crate::worker::backup::{self, Export};
use crate::worker::cipher::{self, Key};
use crate::worker::journal;
use crate::worker::source::{self, ReadAt};

impl Db {
    /// Begins an `export()` on this connection: returns the file's size in
    /// bytes. Nothing else may run on the connection until
    /// [`Db::export_end`] (the worker's queue sees to that), so every page
    /// read is of one state. (Under WAL an export reads on a snapshot
    /// instead: see `snapshots`.)
    pub fn export_begin(&mut self) -> Result<u64> {
        self.export_checkpoint()?;
        self.export_here(false)
    }

    /// What an export needs of the writer first: no transaction open, and
    /// the WAL copied into the file and emptied, so the file alone holds
    /// the last commit.
    pub fn export_checkpoint(&mut self) -> Result<()> {
        if self.conn.in_transaction() {
            return Err(Error::BadParam(
                "export() reads committed data: end the open transaction (COMMIT or ROLLBACK) first".into(),
            ));
        }
        self.drop_read_handle();
        self.export = None;
        self.checkpoint_all()
    }

    /// Begins reading the database's pages on this connection: its size.
    /// `through_pager`: as the connection sees them (a snapshot's, the WAL's
    /// pages included; see `Export::begin`), else from the file. On a
    /// snapshot begun right after [`Db::export_checkpoint`], the file holds
    /// that state until the snapshot ends: no checkpoint writes into it
    /// while a reader reads the file alone.
    pub fn export_here(&mut self, through_pager: bool) -> Result<u64> {
        let export = Export::begin(&self.conn, through_pager)?;
        let size = export.size();
        self.export = Some(export);
        Ok(size)
    }

    /// Bytes the next [`Db::export_read`] of at most `max` gives (whole
    /// pages; 0 once every page was read).
    pub fn export_next_len(&self, max: u64) -> u64 {
        self.export.as_ref().map_or(0, |e| if e.finished() { 0 } else { e.next_len(max) })
    }

    /// Reads the next [`Db::export_next_len`]`(max)` bytes of the export into
    /// `sink`; the export ends after its last page, or on an error.
    pub fn export_read(&mut self, max: u64, sink: &mut dyn FnMut(u64, &[u8])) -> Result<()> {
        let Some(export) = self.export.as_mut() else {
            return Err(Error::BadParam("no export is in progress".into()));
        };
        let r = export.read(&self.conn, max, sink);
        if r.is_err() || export.finished() {
            self.export = None;
        }
        r
    }

    /// Ends the export in progress, if any (its reading statement is finalized).
    pub fn export_end(&mut self) {
        self.export = None;
    }

    /// `importDatabase`: replaces the database with the file of `size`
    /// bytes that `read` reads, once it has been checked: its header
    /// (`codec::backup`), then every page (`PRAGMA quick_check`), opened
    /// untrusted. Then one write transaction copies it over the database;
    /// a failure anywhere changes nothing. Live queries hear that every
    /// table changed, and every `blobStream` session ends (`SQLITE_ABORT`).
    ///
    /// An encrypted file is read with `key` (SQLite3MC decrypts it, and
    /// the copy is encrypted with this database's key): which file may go
    /// into which database is `backup::admit`'s rule.
    pub fn import(&mut self, size: u64, mut read: ReadAt, key: Option<&Key>) -> Result<()> {
        if self.conn.in_transaction() {
            return Err(Error::BadParam(
                "a database cannot be replaced while a transaction is open on it; end it (COMMIT or ROLLBACK) first"
                    .into(),
            ));
        }
        let mut head = [0u8; HEADER_LEN];
        let have = (size as usize).min(HEADER_LEN);
        if have > 0 {
            read(0, &mut head[..have])
                .map_err(|m| Error::BadParam(format!("the imported file could not be read: {m}")))?;
        }
        let encrypted = backup::admit(&head[..have], size, cipher::keyed(&self.conn), key.is_some())?;
        let src = source::open(size, read, key.filter(|_| encrypted))?;
        backup::check(src.conn())?;
        self.drop_read_handle();
        self.export_end();
        journal::off_wal(&self.conn, || backup::copy(&self.conn, src.conn()))?;
        let mut changes = self.hooks.changes();
        changes.changed(SCHEMA);
        changes.committed();
        self.reads.all_changed();
        Ok(())
    }
}
