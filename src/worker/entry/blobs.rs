//! Blob reads on the [`Connection`]: ranges of one stored value, read at
//! once (`readBlob`) or as a `blobStream` session of a caller's, each chunk
//! copied once into a fresh `Uint8Array`.

use super::{js_err, open_reader, sink, Connection, Db, JsResult};
use crate::codec::Error;
use crate::worker::snapshots::On;
use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Connection {
    /// `[start, end]` of a range of one stored BLOB, checked as `readBlob`
    /// checks it (for `blobFile`).
    #[wasm_bindgen(js_name = blobRange)]
    pub fn blob_range(
        &mut self,
        table: &str,
        column: &str,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] rowid: JsValue,
        offset: Option<f64>,
        length: Option<f64>,
    ) -> JsResult<Vec<f64>> {
        let rowid = rowid_from_js(&rowid).map_err(js_err)?;
        let (start, len) = self.db.blob_range(table, column, rowid, offset, length).map_err(js_err)?;
        Ok(vec![start as f64, (start + len) as f64])
    }

    /// `readBlob`: bytes of one cell, `[offset, offset + length)`.
    #[wasm_bindgen(js_name = readBlob)]
    pub fn read_blob(
        &mut self,
        table: &str,
        column: &str,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] rowid: JsValue,
        offset: Option<f64>,
        length: Option<f64>,
    ) -> JsResult<Uint8Array> {
        let rowid = rowid_from_js(&rowid).map_err(js_err)?;
        let (start, len) = self.db.blob_range(table, column, rowid, offset, length).map_err(js_err)?;
        let out = Uint8Array::new_with_length(len as u32);
        self.db.read_blob(table, column, rowid, start, len, &mut sink(&out)).map_err(js_err)?;
        Ok(out)
    }

    /// The `readBlob` call: as [`Self::read_blob`], but far into a value on
    /// a snapshot kept for it while nothing commits, and `beside` the
    /// writer (another call's now) on a reader of the last commit (see
    /// `snapshots`); `RESQ_ON_WRITER` where there is none.
    #[wasm_bindgen(js_name = readRange)]
    pub fn read_range(
        &mut self,
        table: &str,
        column: &str,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] rowid: JsValue,
        offset: Option<f64>,
        length: Option<f64>,
        beside: bool,
    ) -> JsResult<Uint8Array> {
        let id = rowid_from_js(&rowid).map_err(js_err)?;
        let reader = || open_reader(&self.storage, &self.name, self.key.as_ref(), self.threshold);
        let read = |db: &mut Db| {
            let (start, len) = db.blob_range(table, column, id, offset, length)?;
            let out = Uint8Array::new_with_length(len as u32);
            db.read_blob(table, column, id, start, len, &mut sink(&out))?;
            Ok(out)
        };
        let cell = (table, column, id);
        match self.snapshots.blob_read(&self.db, &reader, cell, offset.unwrap_or(0.0), beside, read) {
            Some(r) => r.map_err(js_err),
            None => self.read_blob(table, column, rowid, offset, length),
        }
    }

    /// Begins a `blobStream` of the caller `tab` (its tab's id, as `callEnd`
    /// takes it): `[session, start, end]`. Sessions are the caller's own,
    /// and the core bounds how many it keeps (see `reads`). Outside a
    /// transaction it reads a snapshot of its own (see `snapshots`).
    /// `beside`: the writer is another call's now (see `queue.ts`): it
    /// begins on a snapshot, or answers `RESQ_ON_WRITER`.
    #[wasm_bindgen(js_name = blobStreamOpen)]
    #[allow(clippy::too_many_arguments)]
    pub fn blob_stream_open(
        &mut self,
        tab: &str,
        table: &str,
        column: &str,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] rowid: JsValue,
        offset: Option<f64>,
        length: Option<f64>,
        beside: bool,
    ) -> JsResult<Vec<f64>> {
        let rowid = rowid_from_js(&rowid).map_err(js_err)?;
        let reader = || open_reader(&self.storage, &self.name, self.key.as_ref(), self.threshold);
        let (id, start, end) = self
            .snapshots
            .open(&mut self.db, &reader, tab, (table, column, rowid), (offset, length), beside)
            .map_err(js_err)?;
        Ok(vec![id as f64, start as f64, end as f64])
    }

    /// The next chunk of `tab`'s `blobStream`, of the value it began on.
    /// `beside`: as for [`Self::blob_stream_open`]; a stream without a
    /// snapshot then answers `RESQ_ON_WRITER`.
    #[wasm_bindgen(js_name = blobStreamRead)]
    pub fn blob_stream_read(
        &mut self,
        tab: &str,
        session: u32,
        offset: f64,
        length: f64,
        beside: bool,
    ) -> JsResult<Uint8Array> {
        let (start, len) = (offset as u64, length as u64);
        let on = self.snapshots.on(session, beside).map_err(js_err)?;
        // Checked before the buffer is made: its length is the caller's word.
        let on_snapshot = matches!(on, On::Snapshot(_));
        let (table, column, rowid) = self.db.stream_cell(tab, session, (start, len), on_snapshot).map_err(js_err)?;
        let out = Uint8Array::new_with_length(len as u32);
        let cell = (table.as_str(), column.as_str(), rowid);
        match on {
            On::Snapshot(i) => self.snapshots.read(&self.db, i, cell, (start, len), &mut sink(&out)),
            On::Writer => self.db.read_blob(cell.0, cell.1, rowid, start, len, &mut sink(&out)),
        }
        .map_err(js_err)?;
        Ok(out)
    }

    /// Ends `tab`'s `blobStream` early (cancelled); another caller's is left.
    #[wasm_bindgen(js_name = blobStreamClose)]
    pub fn blob_stream_close(&mut self, tab: &str, session: u32) {
        self.db.stream_close(tab, session);
        self.snapshots.forget_ended(&self.db);
    }

    /// Closes the read handle kept from the last blob read, ending the read
    /// transaction it holds: a reader's calls begin at the last commit, and
    /// nothing it kept holds a checkpoint back (the worker calls it after
    /// each request a reader ran).
    #[wasm_bindgen(js_name = endRead)]
    pub fn end_read(&mut self) {
        self.db.drop_read_handle();
    }

    /// Ends every `blobStream` of `tab` (it left).
    #[wasm_bindgen(js_name = blobStreamsClose)]
    pub fn blob_streams_close(&mut self, tab: &str) {
        self.db.streams_close(tab);
        self.snapshots.forget_ended(&self.db);
    }
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
