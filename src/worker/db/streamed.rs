//! `Blob`/`File` values that stream into their cells (see `streams`): a
//! call with such values runs its statement in a savepoint that stays open
//! after the call returns, with the target cells open, while the worker
//! writes the bytes a chunk at a time; [`Db::stream_end`] then keeps or
//! undoes all of it.

use super::{Bind, Db, Figures, Rows, Savepoint};
use crate::codec::changes::Mark;
use crate::codec::stream::Placeholder;
use crate::codec::{Error, Result};
use crate::worker::cache::{bind_arena, parameter_names};
use crate::worker::handle::Statement;
use crate::worker::rows::Columns;
use crate::worker::streams::{self, Footprint, Stream, Streamed};
use sqlite_wasm_rs as ffi;

const STREAM: Savepoint =
    Savepoint { begin: "SAVEPOINT resq_stream", release: "RELEASE resq_stream", rollback: "ROLLBACK TO resq_stream" };

impl Db {
    /// A statement with streamed values, prepared afresh so the authorizer
    /// sees what it writes; its savepoint stays open until [`Db::stream_end`].
    pub(super) fn execute_streaming(&mut self, sql: &str, bind: &mut Bind) -> Result<Figures> {
        let mark = self.begin_savepoint(&STREAM)?;
        let run = (|| {
            let (stmt, footprint, streamed) = self.prepare_streaming(sql, bind)?;
            let (conn, hooks) = (&self.conn, &self.hooks);
            streams::run(conn, &footprint, &streamed, false, |watch| {
                hooks.watching(watch, || conn.step_all(stmt.raw()))
            })
        })();
        self.arena.clear();
        self.keep_streams(mark, run)
    }

    /// Prepares a statement with streamed values afresh, so the authorizer
    /// sees what it reads and writes, and binds one call's values to it.
    fn prepare_streaming(&mut self, sql: &str, bind: &mut Bind) -> Result<(Statement, Footprint, Vec<Streamed>)> {
        let (stmt, footprint) = streams::prepare(&self.conn, sql)?;
        self.arena.clear();
        let labels = bind(&parameter_names(&stmt), &mut self.arena)?;
        let streamed = bind_arena(&self.conn, stmt.raw(), &self.arena, &mut self.placeholders, labels)?;
        Ok((stmt, footprint, streamed))
    }

    /// After a streaming statement ran in the savepoint begun at `mark`:
    /// keeps its target cells open for [`Db::stream_write`] (the savepoint
    /// stays open until [`Db::stream_end`]), or ends the savepoint at once
    /// when there is nothing to write or the statement failed.
    fn keep_streams<T>(&mut self, mark: Mark, run: Result<(Vec<Stream>, T)>) -> Result<T> {
        match run {
            // Nothing to write (the statement changed no row): done now.
            Ok((streams, value)) if streams.iter().all(Stream::is_empty) => {
                self.end_savepoint(&STREAM, mark, Ok(value))
            }
            Ok((streams, value)) => {
                self.streams = streams;
                self.stream_mark = mark;
                Ok(value)
            }
            Err(e) => self.end_savepoint(&STREAM, mark, Err(e)),
        }
    }

    /// How many streamed values the last `execute` still has to write.
    pub fn streaming(&self) -> usize {
        self.streams.len()
    }

    /// Writes one chunk of streamed value `i` at `offset` into its cells.
    pub fn stream_write(&mut self, i: usize, offset: u64, chunk: &[u8]) -> Result<()> {
        match self.streams.get(i) {
            Some(s) => s.write(&self.conn, offset, chunk),
            None => Err(Error::BadParam("no Blob parameter is being written".into())),
        }
    }

    /// Ends the streaming `execute`: keeps its effects (`ok`) or undoes them.
    pub fn stream_end(&mut self, ok: bool) -> Result<()> {
        self.streams.clear();
        let result = if ok { Ok(()) } else { Err(Error::BadParam("the streamed values were not all written".into())) };
        match self.end_savepoint(&STREAM, self.stream_mark, result) {
            Err(_) if !ok => Ok(()),
            other => other,
        }
    }

    /// A write with streamed values whose rows (`RETURNING`) are wanted:
    /// run as `execute` runs one (see [`Db::execute_streaming`]), writing
    /// its rows as it steps. A row that holds a placeholder is refused, and
    /// so is a statement that reads, outside its triggers, a column a
    /// streamed value goes into (see `streams`): its rows would show the
    /// placeholder, not the bytes.
    pub(super) fn query_streaming(
        &mut self,
        sql: &str,
        bind: &mut Bind,
        mode: Rows,
        own: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<Vec<String>> {
        let mark = self.begin_savepoint(&STREAM)?;
        let run = (|| {
            let (stmt, footprint, streamed) = self.prepare_streaming(sql, bind)?;
            let returns_rows = unsafe { ffi::sqlite3_column_count(stmt.raw()) } > 0;
            let placeholders: Vec<Placeholder> = streamed.iter().map(|s| s.placeholder).collect();
            let (conn, hooks, rows) = (&self.conn, &self.hooks, &mut self.rows);
            let mut names = Vec::new();
            let mut cols = Columns::default();
            let (streams, _) = streams::run(conn, &footprint, &streamed, returns_rows, |watch| {
                hooks
                    .watching(watch, || rows.write(conn, stmt.raw(), &mut cols, mode, own, &placeholders))
                    .map(|n| names = n)
            })?;
            Ok((streams, names))
        })();
        self.arena.clear();
        self.keep_streams(mark, run)
    }
}
