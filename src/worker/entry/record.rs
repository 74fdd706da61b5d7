//! The record of following tabs' calls on the [`Connection`] (see
//! `worker::calls`).

use super::{js_err, Connection, JsResult};
use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

/// The record of following tabs' calls (see `calls`): `tab` names the tab
/// (its lock), `seq` the call, and `below` the oldest call the tab still
/// waits for (its rows below that are forgotten).
#[wasm_bindgen]
impl Connection {
    /// Opens the savepoint a following tab's call and its record commit in;
    /// false when the SQL runs as it is (see `Calls::begin`).
    #[wasm_bindgen(js_name = callBegin)]
    pub fn call_begin(&mut self, sql: &str) -> JsResult<bool> {
        self.calls.begin(&mut self.db, sql).map_err(js_err)
    }

    /// Whether the call begun wrote anything (a read is not recorded).
    #[wasm_bindgen(js_name = callWrote)]
    pub fn call_wrote(&self) -> bool {
        self.calls.wrote(&self.db)
    }

    /// Commits the call begun, recording `result` with it when given.
    #[wasm_bindgen(js_name = callEnd)]
    pub fn call_end(&mut self, tab: &str, seq: f64, below: f64, result: Option<Vec<u8>>) -> JsResult<()> {
        self.calls.end(&mut self.db, tab, seq as i64, below as i64, result.as_deref()).map_err(js_err)
    }

    /// Undoes the call begun (it failed).
    #[wasm_bindgen(js_name = callAbort)]
    pub fn call_abort(&mut self) {
        self.calls.abort(&mut self.db);
    }

    /// Records a call inside the open transaction (before its `COMMIT`).
    #[wasm_bindgen(js_name = callRecord)]
    pub fn call_record(&mut self, tab: &str, seq: f64, below: f64, result: &[u8]) -> JsResult<()> {
        self.calls.record(&mut self.db, tab, seq as i64, below as i64, result).map_err(js_err)
    }

    /// The answer recorded for a call that committed, or `undefined`.
    #[wasm_bindgen(js_name = callFind)]
    pub fn call_find(&mut self, tab: &str, seq: f64) -> JsResult<Option<Uint8Array>> {
        let found = self.calls.find(&self.db, tab, seq as i64).map_err(js_err)?;
        Ok(found.map(|b| Uint8Array::from(&b[..])))
    }

    /// Forgets the calls of every tab not in `live` (the tabs alive now).
    #[wasm_bindgen(js_name = callsKeep)]
    pub fn calls_keep(&mut self, live: Vec<String>) -> JsResult<()> {
        self.calls.forget_all_but(&mut self.db, &live).map_err(js_err)
    }

    /// Forgets the calls of `tab` (it left).
    #[wasm_bindgen(js_name = callsForget)]
    pub fn calls_forget(&mut self, tab: &str) -> JsResult<()> {
        self.calls.forget(&mut self.db, tab).map_err(js_err)
    }
}
