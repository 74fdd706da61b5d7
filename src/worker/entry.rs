//! The wasm-bindgen surface the worker bootstrap calls: one [`Connection`]
//! per worker. JS values are converted here (with `convert`) and nowhere
//! below. Results leave wasm memory with one copy each, into fresh
//! `ArrayBuffer`s the bootstrap then transfers (not copies) to the page.

use super::calls::Calls;
use super::cipher;
use super::cipher::Key;
use super::convert::{bind_params, error_to_js, integer_to_js, key_from_js, Params};
use super::db::{Db, Figures, Rows};
use super::snapshots::Snapshots;
use super::storage::{Shared, Storage};
use crate::codec::hash::ResultHash;
use crate::codec::value::Arena;
use crate::codec::{name, Error};
use js_sys::{Array, Float64Array, Object, Reflect, Uint8Array};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::Blob;

mod batch;
mod blobs;
mod file;
mod record;

type JsResult<T> = Result<T, JsValue>;

pub(super) fn js_err(e: Error) -> JsValue {
    error_to_js(&e)
}

#[wasm_bindgen(start)]
fn start() {
    // A panic aborts the instance; leave its message where the bootstrap
    // can report it with RESQ_WORKER_DIED.
    std::panic::set_hook(Box::new(|info| {
        let _ = Reflect::set(&js_sys::global(), &"__resqPanic".into(), &info.to_string().into());
    }));
}

/// Bytes from which a `Blob`/`File` parameter streams; smaller ones are read
/// by the worker and passed as bytes (see `codec::stream`).
#[wasm_bindgen(js_name = streamLimit)]
pub fn stream_limit() -> f64 {
    crate::codec::stream::STREAM_LIMIT as f64
}

/// Longest SQL text a call takes, in bytes of UTF-8 (see `codec::sql`). The
/// bootstrap cuts a longer one before it reaches wasm memory.
#[wasm_bindgen(js_name = sqlLimit)]
pub fn sql_limit() -> f64 {
    crate::codec::sql::MAX_SQL_BYTES as f64
}

/// How `sql` (one statement) ends the open transaction: `"commit"`
/// (`COMMIT`, `END`), `"rollback"` (`ROLLBACK`, not `ROLLBACK TO`), or
/// `""` when it does not (`BEGIN` included). The core's rule
/// (`codec::sql::ends_transaction`), for the worker's transaction timeout.
#[wasm_bindgen(js_name = transactionEnd)]
pub fn transaction_end(sql: &str) -> String {
    use crate::codec::sql;
    let begins = sql::skip_blank(sql).get(..5).is_some_and(|w| w.eq_ignore_ascii_case("BEGIN"));
    match (sql::ends_transaction(sql) && !begins, sql::is_rollback(sql)) {
        (true, true) => "rollback".into(),
        (true, false) => "commit".into(),
        _ => String::new(),
    }
}

// The types of what the methods below take and give, beyond what
// wasm-bindgen knows (a `JsValue` is `any` to it): each method names its
// own with `unchecked_param_type` and `unchecked_return_type`, so the
// generated `resq_wasm.d.ts` is the boundary's one type, and a method
// changed here fails `tsc` where the worker calls it. The result shapes
// the page receives as they are are the protocol's (protocol.ts; built, it
// is pkg/protocol.d.ts, beside this glue's pkg/wasm/).
#[wasm_bindgen(typescript_custom_section)]
const BOUNDARY_TYPES: &str = r#"
import type { QueryResult, RunResult, WatchResult } from '../protocol.js';

/** `execute`'s answer: with `streams` when `Blob` parameters are to be written into their cells. */
export interface Executed extends RunResult {
  streams?: Blob[];
}
"#;

#[wasm_bindgen]
pub struct Connection {
    /// Following tabs' calls, recorded with their writes (see `calls`).
    /// First: fields drop in order, and its statements go before `db`.
    calls: Calls,
    db: Db,
    /// Readers holding `blobStream` snapshots (see `snapshots`); before
    /// `storage`, which they read through.
    snapshots: Snapshots,
    /// The storage, shared with this worker's other connections on it;
    /// `None` once closed.
    storage: Option<Rc<Shared>>,
    name: String,
    /// The `Blob`s of a streaming `execute`, in the order the engine writes them.
    blobs: Vec<Blob>,
    /// An encoded `executeBatch` run in steps: its sets not run yet.
    batch: Option<batch::Steps>,
    /// What a reader of the same database opens with (see [`Self::reader`]).
    threshold: usize,
    key: Option<Key>,
}

#[wasm_bindgen]
impl Connection {
    /// Opens `name` on `storage`: `"opfs"`, `"idb"`, `"memory"`, or
    /// `"default"` (see `Storage::placed`). `idb`: the name's files in
    /// IndexedDB, as `IdbFiles` (`idb.ts`) loaded them (none: a new name);
    /// `undefined` for memory.
    /// `key`: `undefined`, or a key in its one form (see `key_from_js`).
    /// `encrypt`: a plain file is encrypted under `key` as it opens, and
    /// one encrypted already opens with it (the end of a `rekey(key)` of a
    /// plain database: see `cipher::open_to_encrypt`).
    pub async fn open(
        name: String,
        storage: String,
        blob_threshold: f64,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | undefined")] key: JsValue,
        encrypt: bool,
        #[wasm_bindgen(unchecked_param_type = "object | undefined")] idb: JsValue,
    ) -> JsResult<Connection> {
        name::check(&name, &storage).map_err(js_err)?;
        let key = if key.is_undefined() { None } else { Some(key_from_js(&key).map_err(js_err)?) };
        let threshold =
            if blob_threshold.is_finite() && blob_threshold >= 0.0 { blob_threshold as usize } else { usize::MAX };
        let storage = match storage.as_str() {
            "memory" => Storage::Memory,
            asked => Storage::placed(&name, asked, idb).await.map_err(js_err)?,
        };
        let vfs = Storage::vfs_name(&name, &storage);
        // Any number unlikely to repeat: it only keeps placeholders apart.
        let seed = (js_sys::Math::random() * 9007199254740991.0) as u64 ^ (js_sys::Date::now() as u64) << 11;
        let storage = Shared::new(storage, &name);
        let db = Db::open(&name, vfs.as_deref(), key.as_ref(), encrypt, threshold, seed).map_err(js_err)?;
        Ok(Connection {
            db,
            snapshots: Snapshots::default(),
            storage: Some(storage),
            name,
            blobs: Vec::new(),
            calls: Calls::default(),
            batch: None,
            threshold,
            key,
        })
    }

    /// A reader of this database: another connection on it, in this worker,
    /// that reads the last commit while this one writes (WAL; see
    /// `Db::open_reader`). Its writing methods answer `RESQ_ON_WRITER`, as
    /// do reads it cannot run; the worker runs those here instead. A
    /// database in memory, or not in WAL mode yet, has none
    /// (`RESQ_ON_WRITER`). It keeps the storage open until it is closed too.
    pub fn reader(&self) -> JsResult<Connection> {
        let storage = self.storage.as_ref().ok_or_else(|| js_err(Error::Closed))?;
        let db = open_reader(&self.storage, &self.name, self.key.as_ref(), self.threshold).map_err(js_err)?;
        Ok(Connection {
            db,
            snapshots: Snapshots::default(),
            storage: Some(Rc::clone(storage)),
            name: self.name.clone(),
            blobs: Vec::new(),
            calls: Calls::default(),
            batch: None,
            threshold: self.threshold,
            key: self.key.clone(),
        })
    }

    /// `{ changes, lastInsertRowid }`, plus `streams` (the `Blob`s to write
    /// with [`Self::stream_write`] and then [`Self::stream_end`]) when the
    /// parameters held any that stream.
    #[wasm_bindgen(unchecked_return_type = "Executed")]
    pub fn execute(
        &mut self,
        sql: &str,
        #[wasm_bindgen(unchecked_param_type = "unknown")] params: JsValue,
    ) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let params = Params::from_js(&params).map_err(js_err)?;
        let blobs = &mut self.blobs;
        let mut bind = |names: &[Option<String>], arena: &mut Arena| {
            blobs.clear();
            bind_params(&params, names, arena, Some(blobs))
        };
        let bind = if matches!(params, Params::None) { None } else { Some(&mut bind as _) };
        let figures = self.db.execute(sql, bind).map_err(|e| js_err(e.with_sql(sql)))?;
        let out = figures_to_js(figures);
        if self.db.streaming() > 0 {
            let streams: Array = self.blobs.drain(..).collect();
            let _ = Reflect::set(&out, &"streams".into(), &streams);
        }
        Ok(out)
    }

    /// Marks the calls that follow as run for a `transaction()` callback
    /// (`true`) or not: a callback's SQL may not begin or end the transaction.
    #[wasm_bindgen(js_name = transactionCallback)]
    pub fn transaction_callback(&mut self, on: bool) {
        self.db.set_transaction_callback(on);
    }

    /// A transaction is open: the worker then runs only the calls of the
    /// caller that opened it, so callers in other tabs never interleave.
    #[wasm_bindgen(js_name = transactionOpen)]
    pub fn transaction_open(&self) -> bool {
        self.db.in_transaction()
    }

    /// Writes one chunk of `Blob` parameter `stream` at byte `offset`.
    #[wasm_bindgen(js_name = streamWrite)]
    pub fn stream_write(&mut self, stream: usize, offset: f64, chunk: &[u8]) -> JsResult<()> {
        self.db.stream_write(stream, offset as u64, chunk).map_err(js_err)
    }

    /// Ends a streaming `execute`: commits its savepoint (`ok`) or rolls it back.
    #[wasm_bindgen(js_name = streamEnd)]
    pub fn stream_end(&mut self, ok: bool) -> JsResult<()> {
        self.db.stream_end(ok).map_err(js_err)
    }

    /// `queryBytes`: the JSON text, in a fresh buffer. A write with
    /// streamed values leaves them to write, as `execute` does: see
    /// [`Self::take_streams`].
    #[wasm_bindgen(js_name = queryBytes)]
    pub fn query_bytes(
        &mut self,
        sql: &str,
        #[wasm_bindgen(unchecked_param_type = "unknown")] params: JsValue,
    ) -> JsResult<Uint8Array> {
        self.db.drop_read_handle();
        let params = Params::from_js(&params).map_err(js_err)?;
        self.run_query(sql, &params, Rows::Bytes, true, &mut |_| 0)?;
        Ok(Uint8Array::from(self.db.rows.json.as_bytes()))
    }

    /// `query`: `{ json, columns, fixups, side, buffers }`, the layout of
    /// `codec::wire` (fix-up fields are absent when there are none). A
    /// write with streamed values leaves them to write, as `execute` does:
    /// see [`Self::take_streams`].
    #[wasm_bindgen(unchecked_return_type = "QueryResult")]
    pub fn query(
        &mut self,
        sql: &str,
        #[wasm_bindgen(unchecked_param_type = "unknown")] params: JsValue,
    ) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let params = Params::from_js(&params).map_err(js_err)?;
        let buffers = Array::new();
        let columns = self
            .run_query(sql, &params, Rows::Objects, true, &mut |b| buffers.push(&Uint8Array::from(b)) as usize - 1)?;
        Ok(self.rows_to_js(&columns, buffers))
    }

    /// After `query`/`queryBytes`: the `Blob`s to write with
    /// [`Self::stream_write`] and then [`Self::stream_end`] (a write whose
    /// rows came back with streamed values still to fill), else `null`.
    #[wasm_bindgen(js_name = takeStreams, unchecked_return_type = "Blob[] | null")]
    pub fn take_streams(&mut self) -> JsValue {
        if self.db.streaming() == 0 {
            self.blobs.clear();
            return JsValue::NULL;
        }
        self.blobs.drain(..).collect::<Array>().into()
    }

    /// `watchQuery`: runs a query as `queryBytes` (`bytes`) or `query` does,
    /// and hashes its result (see `codec::hash`). `null` when the hash is
    /// `previous`: the result stays in wasm memory. Else `{ hash, value }`,
    /// `value` exactly what `queryBytes`/`query` returns, `hash` 16 hex digits.
    #[wasm_bindgen(js_name = watchQuery, unchecked_return_type = "WatchResult | null")]
    pub fn watch_query(
        &mut self,
        sql: &str,
        #[wasm_bindgen(unchecked_param_type = "unknown")] params: JsValue,
        bytes: bool,
        previous: &str,
    ) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let params = Params::from_js(&params).map_err(js_err)?;
        let mode = if bytes { Rows::Bytes } else { Rows::Objects };
        // BLOBs that get buffers of their own are hashed as they pass, not
        // copied out: the result may not have changed.
        let (mut owned, mut count) = (ResultHash::new(0), 0);
        let columns = self.run_query(sql, &params, mode, false, &mut |b| {
            owned.part(b);
            count += 1;
            count - 1
        })?;
        let hash = self.result_hash(mode, &owned);
        if hash == previous {
            return Ok(JsValue::NULL);
        }
        let (hash, value) = match mode {
            Rows::Bytes => (hash, Uint8Array::from(self.db.rows.json.as_bytes()).into()),
            Rows::Objects if count == 0 => (hash, self.rows_to_js(&columns, Array::new())),
            // Changed, with own buffers that were not kept: run it again,
            // copying them out, and hash what this run returns.
            Rows::Objects => {
                let (mut owned, buffers) = (ResultHash::new(0), Array::new());
                let columns = self.run_query(sql, &params, mode, false, &mut |b| {
                    owned.part(b);
                    buffers.push(&Uint8Array::from(b)) as usize - 1
                })?;
                (self.result_hash(mode, &owned), self.rows_to_js(&columns, buffers))
            }
        };
        let out = Object::new();
        let _ = Reflect::set(&out, &"hash".into(), &hash.into());
        let _ = Reflect::set(&out, &"value".into(), &value);
        Ok(out.into())
    }

    /// `queryTables`: the tables of the `main` schema the one query in `sql`
    /// reads, lowercased, sorted; a view's are its base tables', a virtual
    /// table's include its shadow tables; `sqlite_schema` when it reads the
    /// schema. Refuses (`RESQ_BAD_PARAM`) SQL that is not exactly one
    /// statement that returns rows and writes nothing.
    #[wasm_bindgen(js_name = queryTables)]
    pub fn query_tables(&mut self, sql: &str) -> JsResult<Vec<String>> {
        self.db.drop_read_handle();
        self.db.query_tables(sql).map_err(|e| js_err(e.with_sql(sql)))
    }

    /// `takeChanged`: the tables of the `main` schema changed by transactions
    /// that committed since the last call, lowercased, sorted; forgets them.
    /// Rolled-back changes are left out, except that a `ROLLBACK TO` a
    /// savepoint of the caller's own may leave its tables in (a table named
    /// for nothing costs a watcher one re-run). `sqlite_schema` means DDL
    /// committed (`CREATE`, `DROP`, `ALTER`): any query may read differently
    /// (a table gone or reshaped, a view redefined), so re-run them all.
    #[wasm_bindgen(js_name = takeChanged)]
    pub fn take_changed(&mut self) -> Vec<String> {
        self.db.drop_read_handle();
        self.db.take_changed()
    }

    /// Throws `RESQ_UNSUPPORTED` if the database's pages are too small to
    /// be encrypted (see `cipher::encryptable`): checked before a plain
    /// database's worker hands it on to be encrypted.
    pub fn encryptable(&self) -> JsResult<()> {
        cipher::encryptable(self.db.conn(), &self.name).map_err(js_err)
    }

    /// `rekey`: the new key (as `open` takes it), or `null` to decrypt;
    /// see `cipher::rekey`.
    pub fn rekey(&mut self, #[wasm_bindgen(unchecked_param_type = "Uint8Array | null")] key: JsValue) -> JsResult<()> {
        let key = if key.is_null() { None } else { Some(key_from_js(&key).map_err(js_err)?) };
        self.db.drop_read_handle();
        self.snapshots.close(&mut self.db);
        cipher::rekey(self.db.conn(), key.as_ref()).map_err(js_err)?;
        self.key = key;
        Ok(())
    }

    /// After a call that committed: whether the WAL has grown past its
    /// bound, so the worker checkpoints before the next call (`journal::due`).
    #[wasm_bindgen(js_name = checkpointDue)]
    pub fn checkpoint_due(&mut self) -> JsResult<bool> {
        self.db.checkpoint_due().map_err(js_err)
    }

    /// Whether the WAL holds frames a checkpoint could copy: the worker
    /// checkpoints when its queue is idle.
    #[wasm_bindgen(js_name = walPending)]
    pub fn wal_pending(&self) -> bool {
        self.db.wal_pending()
    }

    /// Copies a slice of the WAL into the database file, a few
    /// milliseconds' worth, waiting for no reader; nothing inside a
    /// transaction. Returns whether more is left to copy now: the worker
    /// calls again after its other work (see `backfill`).
    /// Streams' snapshots are let go when they keep a slice from copying
    /// anything and the WAL has grown far past its bound (see `snapshots`);
    /// the next slice then copies.
    pub fn checkpoint(&mut self) -> JsResult<bool> {
        self.snapshots.forget_ended(&self.db);
        if self.db.checkpoint_slice().map_err(js_err)? {
            return Ok(true);
        }
        self.snapshots.let_go_if_held(&mut self.db).map_err(js_err)
    }

    /// Where the database lives: `"opfs"`, `"idb"` or `"memory"` (`db.storage`).
    pub fn storage(&self) -> String {
        self.storage.as_deref().map_or("memory", |s| s.storage().kind().as_str()).into()
    }

    /// Closes the database and releases its storage. A second call is a no-op.
    pub fn close(&mut self) -> JsResult<()> {
        // Its statements go before the connection.
        self.calls.reset();
        self.snapshots.close(&mut self.db);
        let r = self.db.close();
        // The last connection out releases the storage.
        self.storage = None;
        r.map_err(js_err)
    }
}

impl Connection {
    /// Runs one query of `query`, `queryBytes` or `watchQuery`: its result is
    /// left in `db.rows`, BLOBs that get buffers of their own go to `own`
    /// (which returns their index). Returns the column names when there are
    /// fix-ups. `stream`: the call takes `Blob`s that stream (a write with
    /// `RETURNING`); a live query does not.
    fn run_query(
        &mut self,
        sql: &str,
        params: &Params,
        mode: Rows,
        stream: bool,
        own: &mut dyn FnMut(&[u8]) -> usize,
    ) -> JsResult<Vec<String>> {
        let blobs = &mut self.blobs;
        let mut bind = |names: &[Option<String>], arena: &mut Arena| {
            blobs.clear();
            bind_params(params, names, arena, if stream { Some(&mut *blobs) } else { None })
        };
        self.db.query(sql, &mut bind, mode, own).map_err(|e| js_err(e.with_sql(sql)))
    }

    /// The `query` result object of the last [`Self::run_query`], with its
    /// own `buffers`.
    fn rows_to_js(&self, columns: &[String], buffers: Array) -> JsValue {
        let out = Object::new();
        let set = |k: &str, v: &JsValue| {
            let _ = Reflect::set(&out, &k.into(), v);
        };
        set("json", &Uint8Array::from(self.db.rows.json.as_bytes()));
        let fix = &self.db.rows.fixups;
        if !fix.cells.is_empty() {
            set("columns", &columns.iter().map(|c| JsValue::from_str(c)).collect::<Array>());
            set("fixups", &Float64Array::from(fix.cells.as_slice()));
            set("side", &Uint8Array::from(fix.side.as_slice()));
            set("buffers", &buffers);
        }
        out.into()
    }

    /// The hash of the last [`Self::run_query`]'s result in `mode`: every
    /// part it returns (the columns are the JSON's keys), its own buffers
    /// hashed in `owned` as they passed.
    fn result_hash(&self, mode: Rows, owned: &ResultHash) -> String {
        let mut hash = ResultHash::new(mode as u8);
        hash.part(self.db.rows.json.as_bytes());
        hash.numbers(&self.db.rows.fixups.cells);
        hash.part(&self.db.rows.fixups.side);
        hash.word(owned.finish());
        hash.hex()
    }
}

/// Another connection on the database `storage` holds (see
/// [`Connection::reader`]).
fn open_reader(storage: &Option<Rc<Shared>>, name: &str, key: Option<&Key>, threshold: usize) -> Result<Db, Error> {
    let storage = storage.as_ref().ok_or(Error::Closed)?;
    let vfs = Storage::vfs_name(name, storage.storage()).ok_or(Error::OnWriter)?;
    let seed = (js_sys::Math::random() * 9007199254740991.0) as u64;
    Db::open_reader(name, &vfs, key, threshold, seed)
}

/// Copies each chunk read into its place in `out`.
fn sink(out: &Uint8Array) -> impl FnMut(u64, &[u8]) + '_ {
    move |at, bytes| out.subarray(at as u32, at as u32 + bytes.len() as u32).copy_from(bytes)
}

fn figures_to_js((changes, rowid): Figures) -> JsValue {
    let o = Object::new();
    let _ = Reflect::set(&o, &"changes".into(), &JsValue::from(changes as f64));
    let _ = Reflect::set(&o, &"lastInsertRowid".into(), &integer_to_js(rowid));
    o.into()
}
