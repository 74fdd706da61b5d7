//! `executeBatch` on the [`Connection`]: in parts (the worker reads a
//! batch's `Blob`s a part at a time) and in steps (the worker answers
//! reads beside a long batch), with one savepoint from the first call to
//! the last, so a batch is still all or nothing (see `Db::execute_batch`).

use super::{figures_to_js, js_err, Connection, JsResult};
use crate::codec::batch::Batch;
use crate::codec::value::Arena;
use crate::codec::Error;
use crate::worker::convert::{bind_params, Params};
use js_sys::Array;
use wasm_bindgen::prelude::*;

/// An encoded batch between its steps: its buffer, copied into wasm
/// memory once, where its next set begins, and how many sets are left.
pub(super) struct Steps {
    bytes: Vec<u8>,
    at: usize,
    left: usize,
}

#[wasm_bindgen]
impl Connection {
    /// `executeBatch`: `sql` once per parameter set of `sets` (an array).
    /// `more`: more parts of this batch follow, each a call of its own; the
    /// sets are numbered across the whole batch; a part that fails ends it,
    /// and [`Self::batch_abort`] ends it between parts. `{ changes,
    /// lastInsertRowid }` of every part so far.
    #[wasm_bindgen(js_name = executeBatch, unchecked_return_type = "RunResult")]
    pub fn execute_batch(
        &mut self,
        sql: &str,
        #[wasm_bindgen(unchecked_param_type = "unknown[]")] sets: JsValue,
        more: bool,
    ) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let Ok(sets) = sets.dyn_into::<Array>() else {
            // A part that fails ends its batch.
            self.db.batch_abort();
            return Err(js_err(Error::BadParam("executeBatch takes an array of parameter sets".into())));
        };
        let mut bind = |n: usize, names: &[Option<String>], arena: &mut Arena| {
            let params = Params::from_js(&sets.get(n as u32))?;
            bind_params(&params, names, arena, None)
        };
        let figures =
            self.db.execute_batch(sql, sets.length() as usize, &mut bind, more).map_err(|e| js_err(e.with_sql(sql)))?;
        Ok(figures_to_js(figures))
    }

    /// `executeBatch` of sets the page encoded into one buffer
    /// ([`crate::codec::batch`]), at most `most` sets per call: `encoded`
    /// begins a batch, `undefined` goes on with the one begun, and
    /// [`Self::batch_left`] says how many sets are left. `{ changes,
    /// lastInsertRowid }` of every step so far.
    #[wasm_bindgen(js_name = executeBatchEncoded, unchecked_return_type = "RunResult")]
    pub fn execute_batch_encoded(&mut self, sql: &str, encoded: Option<Vec<u8>>, most: usize) -> JsResult<JsValue> {
        self.db.drop_read_handle();
        let steps = match encoded {
            Some(bytes) => {
                let batch = Batch::new(&bytes).map_err(js_err)?;
                let (at, left) = (batch.offset(), batch.len());
                Steps { bytes, at, left }
            }
            None => self.batch.take().ok_or_else(|| js_err(Error::BadParam("no batch to go on with".into())))?,
        };
        let sets = steps.left.min(most.max(1));
        let more = sets < steps.left;
        let mut batch = Batch::resume(&steps.bytes, steps.at);
        // `execute_batch` binds set 0, 1, … in order, each once.
        let mut bind =
            |_: usize, names: &[Option<String>], arena: &mut Arena| batch.bind_next(names, arena).map(|()| Vec::new());
        let figures = self.db.execute_batch(sql, sets, &mut bind, more).map_err(|e| js_err(e.with_sql(sql)))?;
        if more {
            self.batch = Some(Steps { at: batch.offset(), left: steps.left - sets, ..steps });
        }
        Ok(figures_to_js(figures))
    }

    /// Sets of the encoded batch begun and not run yet.
    #[wasm_bindgen(js_name = batchLeft)]
    pub fn batch_left(&self) -> usize {
        self.batch.as_ref().map_or(0, |s| s.left)
    }

    /// Ends an `executeBatch` between two parts or steps (the next part's
    /// values could not be read): every part is undone. Does nothing when
    /// no batch is open (the part that failed ended it).
    #[wasm_bindgen(js_name = batchAbort)]
    pub fn batch_abort(&mut self) {
        self.batch = None;
        self.db.batch_abort();
    }
}
