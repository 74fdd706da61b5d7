//! The wasm-bindgen surface the worker bootstrap calls: one [`Connection`]
//! per worker. Results leave wasm memory with one copy each, into fresh
//! `ArrayBuffer`s the bootstrap then transfers (not copies) to the page.

use super::convert::{error_to_js, integer_to_js, Params};
use super::db::{Db, Rows};
use super::storage::Storage;
use crate::codec::Error;
use js_sys::{Array, Float64Array, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

type JsResult<T> = Result<T, JsValue>;

fn js_err(e: Error) -> JsValue {
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

#[wasm_bindgen]
pub struct Connection {
    db: Db,
    storage: Storage,
    name: String,
}

#[wasm_bindgen]
impl Connection {
    /// Opens `name` on `storage` (`"opfs"` or `"memory"`).
    pub async fn open(name: String, storage: String, blob_threshold: f64) -> JsResult<Connection> {
        let threshold = if blob_threshold.is_finite() && blob_threshold >= 0.0 { blob_threshold as usize } else { usize::MAX };
        let storage = match storage.as_str() {
            "memory" => Storage::Memory,
            "opfs" => Storage::opfs(&name).await.map_err(js_err)?,
            other => return Err(js_err(Error::BadParam(format!("unknown storage {other:?}; use 'opfs' or 'memory'")))),
        };
        let vfs = Storage::vfs_name(&name, &storage);
        match Db::open(&name, vfs.as_deref(), threshold) {
            Ok(db) => Ok(Connection { db, storage, name }),
            Err(e) => {
                let mut storage = storage;
                storage.release(&name);
                Err(js_err(e))
            }
        }
    }

    /// `{ changes, lastInsertRowid }`, plus `streams` (the `Blob`s to write
    /// with [`Self::stream_write`] and then [`Self::stream_end`]) when the
    /// parameters held any.
    pub fn execute(&mut self, sql: &str, params: JsValue) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let params = Params::from_js(&params).map_err(js_err)?;
        let figures = self.db.execute(sql, &params).map_err(|e| js_err(e.with_sql(sql)))?;
        let out = figures_to_js(figures);
        let streams = self.db.streaming();
        if !streams.is_empty() {
            let _ = Reflect::set(&out, &"streams".into(), &streams.into_iter().collect::<Array>());
        }
        Ok(out)
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

    /// `[start, end]` of a range of one stored BLOB, checked as `readBlob`
    /// checks it (for `blobStream` and `blobFile`).
    #[wasm_bindgen(js_name = blobRange)]
    pub fn blob_range(&mut self, table: &str, column: &str, rowid: JsValue, offset: Option<f64>, length: Option<f64>) -> JsResult<Vec<f64>> {
        let rowid = rowid_from_js(&rowid).map_err(js_err)?;
        let (start, len) = self.db.blob_range(table, column, rowid, offset, length).map_err(js_err)?;
        Ok(vec![start as f64, (start + len) as f64])
    }

    /// `readBlob`: bytes of one cell, `[offset, offset + length)`.
    #[wasm_bindgen(js_name = readBlob)]
    pub fn read_blob(&mut self, table: &str, column: &str, rowid: JsValue, offset: Option<f64>, length: Option<f64>) -> JsResult<Uint8Array> {
        let rowid = rowid_from_js(&rowid).map_err(js_err)?;
        self.db.read_blob(table, column, rowid, offset, length).map_err(js_err)
    }

    #[wasm_bindgen(js_name = executeBatch)]
    pub fn execute_batch(&mut self, sql: &str, sets: JsValue) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let sets: Array = sets
            .dyn_into()
            .map_err(|_| js_err(Error::BadParam("executeBatch takes an array of parameter sets".into())))?;
        let figures = self.db.execute_batch(sql, &sets).map_err(|e| js_err(e.with_sql(sql)))?;
        Ok(figures_to_js(figures))
    }

    /// `queryBytes`: the JSON text, in a fresh buffer.
    #[wasm_bindgen(js_name = queryBytes)]
    pub fn query_bytes(&mut self, sql: &str, params: JsValue) -> JsResult<Uint8Array> {
        self.db.drop_read_handle();
        let params = Params::from_js(&params).map_err(js_err)?;
        self.db
            .query(sql, &params, Rows::Bytes, &mut |_| 0)
            .map_err(|e| js_err(e.with_sql(sql)))?;
        Ok(Uint8Array::from(self.db.json.as_bytes()))
    }

    /// `query`: `{ json, columns, fixups, side, buffers }`, the layout of
    /// `codec::wire` (fix-up fields are absent when there are none).
    pub fn query(&mut self, sql: &str, params: JsValue) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let params = Params::from_js(&params).map_err(js_err)?;
        let buffers = Array::new();
        let columns = self
            .db
            .query(sql, &params, Rows::Objects, &mut |b| buffers.push(&Uint8Array::from(b)) as usize - 1)
            .map_err(|e| js_err(e.with_sql(sql)))?;
        let out = Object::new();
        let set = |k: &str, v: &JsValue| {
            let _ = Reflect::set(&out, &k.into(), v);
        };
        set("json", &Uint8Array::from(self.db.json.as_bytes()));
        let fix = &self.db.fixups;
        if !fix.cells.is_empty() {
            set("columns", &columns.iter().map(|c| JsValue::from_str(c)).collect::<Array>());
            set("fixups", &Float64Array::from(fix.cells.as_slice()));
            set("side", &Uint8Array::from(fix.side.as_slice()));
            set("buffers", &buffers);
        }
        Ok(out.into())
    }

    /// Whether a transaction is open (`BEGIN` without `COMMIT` yet).
    #[wasm_bindgen(js_name = inTransaction)]
    pub fn in_transaction(&self) -> bool {
        self.db.in_transaction()
    }

    /// Closes the database and releases its storage. A second call is a no-op.
    pub fn close(&mut self) -> JsResult<()> {
        let r = self.db.close();
        self.storage.release(&self.name);
        r.map_err(js_err)
    }
}

/// Panics on purpose: the tests' way to prove that a trap in the worker
/// rejects every pending call with RESQ_WORKER_DIED instead of hanging.
#[wasm_bindgen(js_name = crashForTests)]
pub fn crash_for_tests() {
    panic!("deliberate panic (test hook)");
}

/// The worker's wasm memory in bytes (`memory.buffer.byteLength`), for the
/// memory-bound tests and benchmarks.
#[wasm_bindgen(js_name = wasmMemoryBytes)]
pub fn wasm_memory_bytes() -> f64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    let buffer: js_sys::ArrayBuffer = memory.buffer().unchecked_into();
    buffer.byte_length() as f64
}

/// A rowid from JS: a safe integer `number` or a `bigint`.
fn rowid_from_js(v: &JsValue) -> Result<i64, Error> {
    if let Some(n) = v.as_f64() {
        if let Some(crate::codec::Value::Integer(i)) = crate::codec::Value::from_number(n) {
            return Ok(i);
        }
    } else if v.is_bigint() {
        if let Ok(i) = i64::try_from(v.clone().unchecked_into::<js_sys::BigInt>()) {
            return Ok(i);
        }
    }
    Err(Error::BadParam("rowid must be an integer (a number or a bigint)".into()))
}

fn figures_to_js((changes, rowid): (i64, i64)) -> JsValue {
    let o = Object::new();
    let _ = Reflect::set(&o, &"changes".into(), &JsValue::from(changes as f64));
    let _ = Reflect::set(&o, &"lastInsertRowid".into(), &integer_to_js(rowid));
    o.into()
}
