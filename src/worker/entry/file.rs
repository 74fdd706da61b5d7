//! The database as a file, on the [`Connection`]: an `export()` read out a
//! chunk of whole pages at a time, and `importDatabase` of a staged file.

use super::{js_err, open_reader, sink, Connection, JsResult};
use crate::worker::convert::key_from_js;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Connection {
    /// Begins an `export()`: `[size, snapshot]`, the database file's size in
    /// bytes, and 1 when it reads on a snapshot (nothing else waits for
    /// it), 0 when on this connection (nothing else may run until
    /// [`Self::export_end`] or the last read). See `snapshots`.
    #[wasm_bindgen(js_name = exportBegin)]
    pub fn export_begin(&mut self) -> JsResult<Vec<f64>> {
        let reader = || open_reader(&self.storage, &self.name, self.key.as_ref(), self.threshold);
        let (size, snapshot) = self.snapshots.export_begin(&mut self.db, &reader).map_err(js_err)?;
        Ok(vec![size as f64, f64::from(u8::from(snapshot))])
    }

    /// The next bytes of the export, whole pages, at most `max` of them
    /// (at least one page); empty once all were read.
    #[wasm_bindgen(js_name = exportRead)]
    pub fn export_read(&mut self, max: f64) -> JsResult<Uint8Array> {
        let out = Uint8Array::new_with_length(self.snapshots.export_next_len(&self.db, max as u64) as u32);
        if out.length() > 0 {
            self.snapshots.export_read(&mut self.db, max as u64, &mut sink(&out)).map_err(js_err)?;
        }
        Ok(out)
    }

    /// Ends the export in progress early (cancelled), if any.
    #[wasm_bindgen(js_name = exportEnd)]
    pub fn export_end(&mut self) {
        self.snapshots.export_end(&mut self.db);
    }

    /// `importDatabase`: replaces the database with the file of `size` bytes
    /// that `read(offset, length)` reads (a `Uint8Array` of exactly
    /// `length` bytes), once it has been checked; see `Db::import`. `key`
    /// (as `open` takes it, or `undefined`) reads an encrypted file.
    #[wasm_bindgen(js_name = importDatabase)]
    pub fn import_database(
        &mut self,
        size: f64,
        #[wasm_bindgen(unchecked_param_type = "(at: number, length: number) => Uint8Array")] read: js_sys::Function,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | undefined")] key: JsValue,
    ) -> JsResult<()> {
        let key = if key.is_undefined() { None } else { Some(key_from_js(&key).map_err(js_err)?) };
        let read = Box::new(move |at: u64, buf: &mut [u8]| {
            let got = read.call2(&JsValue::NULL, &JsValue::from(at as f64), &JsValue::from(buf.len() as f64)).map_err(
                |e| {
                    Reflect::get(&e, &"message".into())
                        .ok()
                        .and_then(|m| m.as_string())
                        .unwrap_or_else(|| format!("{e:?}"))
                },
            )?;
            let bytes: Uint8Array = got.dyn_into().map_err(|_| "the reader did not return bytes".to_string())?;
            if bytes.length() as usize != buf.len() {
                return Err(format!(
                    "{} bytes read at offset {at}, where {} were asked for",
                    bytes.length(),
                    buf.len()
                ));
            }
            bytes.copy_to(buf);
            Ok(())
        });
        self.snapshots.close(&mut self.db);
        self.db.import(size as u64, read, key.as_ref()).map_err(js_err)?;
        // The file's record of calls is another database's: none of this
        // one's tabs is waiting on it.
        self.calls.reset();
        self.calls.forget_all_but(&mut self.db, &[]).map_err(js_err)
    }
}
