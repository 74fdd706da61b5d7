//! JS values in, JS values out. Everything a caller can pass is checked here
//! against API.md's table before SQLite sees it; errors leave as plain
//! cloneable objects `{ code, errno, message }` that the page turns into
//! `ResqError`.

use super::cipher::Key;
use crate::codec::params::{plan, Supplied};
use crate::codec::value::{check_length, Arena, Value};
use crate::codec::Error;
use js_sys::{Array, ArrayBuffer, BigInt, JsString, Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::Blob;

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// A JS string, for `String.prototype` methods js-sys does not bind.
    #[wasm_bindgen(js_name = String)]
    type Str;
    /// `isWellFormed`: false when a lone surrogate is present.
    #[wasm_bindgen(method, js_name = isWellFormed)]
    fn is_well_formed(this: &Str) -> bool;
}

/// The parameters as the caller shaped them: nothing, an array, or an object.
pub enum Params {
    None,
    Positional(Array),
    Named(Object, Vec<String>),
}

impl Params {
    pub fn from_js(v: &JsValue) -> Result<Params, Error> {
        if v.is_undefined() || v.is_null() {
            return Ok(Params::None);
        }
        if let Some(a) = v.dyn_ref::<Array>() {
            return Ok(Params::Positional(a.clone()));
        }
        let proto = Object::get_prototype_of(v);
        let plain = v.is_object()
            && !v.is_function()
            && (proto.is_null() || proto == Object::get_prototype_of(&Object::new().into()));
        if plain {
            let obj: Object = v.clone().unchecked_into();
            let keys = Object::keys(&obj).iter().filter_map(|k| k.as_string()).collect();
            return Ok(Params::Named(obj, keys));
        }
        Err(Error::BadParam("parameters must be an array (for ?) or a plain object (for :name)".into()))
    }

    /// The object's keys (empty for an array), for naming a parameter.
    pub fn keys(&self) -> &[String] {
        match self {
            Params::Named(_, keys) => keys,
            _ => &[],
        }
    }

    pub fn supplied(&self) -> Supplied<'_> {
        match self {
            Params::None => Supplied::None,
            Params::Positional(a) => Supplied::Positional(a.length() as usize),
            Params::Named(_, keys) => Supplied::Named(keys),
        }
    }

    /// The value at a slot index from [`crate::codec::params::plan`].
    pub fn get(&self, index: usize) -> JsValue {
        match self {
            Params::None => JsValue::UNDEFINED,
            Params::Positional(a) => a.get(index as u32),
            Params::Named(obj, keys) => {
                Reflect::get(obj, &JsValue::from_str(&keys[index])).unwrap_or(JsValue::UNDEFINED)
            }
        }
    }
}

/// Checks `params` against a statement's parameter `names` and stores
/// each value in the arena. `Blob`s (a `File`, a staged value) become
/// `Value::Streamed` and join `blobs` when the call can stream them (else they
/// are refused); their labels come back in order.
pub fn bind_params(
    params: &Params,
    names: &[Option<String>],
    arena: &mut Arena,
    mut blobs: Option<&mut Vec<Blob>>,
) -> Result<Vec<String>, Error> {
    let mut labels = Vec::new();
    for slot in plan(names, params.supplied())? {
        let label = || slot.label.describe(params.keys());
        let v = params.get(slot.value);
        if let Some(blob) = v.dyn_ref::<Blob>() {
            let Some(blobs) = blobs.as_deref_mut() else {
                return Err(Error::BadParam(format!("{}: a Blob or File of 4 MB or more streams into the cell a write stores it in, which this call cannot do (execute, query and queryBytes can); read it into a Uint8Array for this call", label())));
            };
            check_length(blob.size() as u64, label)?;
            arena.push(Value::Streamed(blob.size() as u64));
            blobs.push(blob.clone());
            labels.push(label());
        } else {
            push_value(arena, &v, label)?;
        }
    }
    Ok(labels)
}

/// Checks one value against API.md's table and stores it in the arena.
///
/// `label` names the parameter (`parameter 2`, `:name`); it is called only
/// when an error needs the name.
fn push_value(arena: &mut Arena, v: &JsValue, label: impl Fn() -> String) -> Result<(), Error> {
    let bad = |what: String| Err(Error::BadParam(format!("{}: {what}", label())));
    if v.is_null() {
        arena.push(Value::Null);
    } else if let Some(b) = v.as_bool() {
        arena.push(Value::Integer(b as i64));
    } else if let Some(n) = v.as_f64() {
        arena.push(Value::number(n, &label)?);
    } else if v.is_bigint() {
        let big: BigInt = v.clone().unchecked_into();
        match i64::try_from(big) {
            Ok(i) => arena.push(Value::Integer(i)),
            Err(_) => return bad("the bigint is outside the 64-bit integer range".into()),
        }
    } else if let Some(s) = v.dyn_ref::<JsString>() {
        if !s.unchecked_ref::<Str>().is_well_formed() {
            return bad("the string has a lone surrogate (not valid Unicode)".into());
        }
        arena.push_text(&String::from(s));
    } else if let Some(bytes) = as_bytes(v) {
        check_length(bytes.length() as u64, &label)?;
        arena.push_blob_with(bytes.length() as usize, |dst| bytes.copy_to(dst));
    } else if v.is_undefined() {
        return bad("undefined is not a SQLite value (use null)".into());
    } else if v.is_function() {
        return bad("a function is not a SQLite value".into());
    } else {
        return bad("an object is not a SQLite value (pass null, a number, bigint, string, boolean or bytes)".into());
    }
    Ok(())
}

/// A key in its one form, as the page makes it where it is given one, and
/// checks it (keyproof.ts `keyBytes`): `p` and a passphrase's UTF-8, or `r`
/// and 32 raw bytes. It is read here, not checked again: anything else did
/// not come from the page's client.
pub fn key_from_js(v: &JsValue) -> Result<Key, Error> {
    let not_a_key = || Error::BadParam("the key is not in the form the page's client gives it".into());
    let bytes = v.dyn_ref::<Uint8Array>().ok_or_else(not_a_key)?;
    let len = bytes.length();
    match (len > 0).then(|| bytes.get_index(0)) {
        Some(b'r') if len == 33 => {
            let mut raw = [0u8; 32];
            bytes.subarray(1, len).copy_to(&mut raw);
            Ok(Key::Raw(raw))
        }
        Some(b'p') => {
            let mut utf8 = vec![0u8; len as usize - 1];
            bytes.subarray(1, len).copy_to(&mut utf8);
            String::from_utf8(utf8).map(Key::Passphrase).map_err(|e| {
                e.into_bytes().fill(0);
                not_a_key()
            })
        }
        _ => Err(not_a_key()),
    }
}

/// A `Uint8Array` over the bytes of an `ArrayBuffer` or any `ArrayBufferView`.
fn as_bytes(v: &JsValue) -> Option<Uint8Array> {
    if let Some(u) = v.dyn_ref::<Uint8Array>() {
        return Some(u.clone());
    }
    if let Some(b) = v.dyn_ref::<ArrayBuffer>() {
        return Some(Uint8Array::new(b));
    }
    if ArrayBuffer::is_view(v) {
        let get = |k: &str| Reflect::get(v, &JsValue::from_str(k)).ok();
        let buffer = get("buffer")?;
        let offset = get("byteOffset")?.as_f64()? as u32;
        let len = get("byteLength")?.as_f64()? as u32;
        return Some(Uint8Array::new_with_byte_offset_and_length(&buffer, offset, len));
    }
    None
}

/// An error as the plain object the worker posts to the page.
pub fn error_to_js(e: &Error) -> JsValue {
    let o = Object::new();
    let set = |k: &str, v: JsValue| {
        let _ = Reflect::set(&o, &JsValue::from_str(k), &v);
    };
    set("code", JsValue::from_str(e.code()));
    set("message", JsValue::from_str(&e.to_string()));
    if let Some(errno) = e.errno() {
        set("errno", JsValue::from(errno));
    }
    o.into()
}

/// A rowid or any i64 as JS wants it: a number when exact, a bigint outside.
pub fn integer_to_js(i: i64) -> JsValue {
    if crate::codec::value::is_safe_integer(i) {
        JsValue::from(i as f64)
    } else {
        JsValue::from(BigInt::from(i))
    }
}
