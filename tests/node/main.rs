//! The wasm engine (`resq_wasm::worker`) in Node, on storage "memory": what
//! the worker bootstrap gets back from each call, byte for byte where the
//! contract fixes the bytes. OPFS needs a browser worker: see `tests/browser.rs`.
//! This file holds the helpers; the tests are in the modules at its end.
//!
//! Run: `cargo test --target wasm32-unknown-unknown --test node`.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, BigInt, Float64Array, JsString, Object, Reflect, Uint8Array};
use resq_wasm::worker::Connection;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

// ---------------------------------------------------------------- helpers

/// A private in-memory database with this blob transfer threshold.
async fn open_mem(threshold: f64) -> Connection {
    Connection::open(":memory:".into(), "memory".into(), threshold, JsValue::UNDEFINED, false, JsValue::UNDEFINED)
        .await
        .unwrap_or_else(|e| panic!("open :memory: failed: {}", describe(&e)))
}

/// Positional parameters: a JS array of these values.
fn params(values: &[JsValue]) -> JsValue {
    values.iter().collect::<Array>().into()
}

/// Named parameters: a plain object with these keys (no prefixes).
fn named(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        Reflect::set(&o, &JsValue::from_str(k), v).unwrap();
    }
    o.into()
}

fn bytes(b: &[u8]) -> JsValue {
    Uint8Array::from(b).into()
}

fn big(i: i64) -> JsValue {
    BigInt::from(i).into()
}

fn num(n: f64) -> JsValue {
    JsValue::from_f64(n)
}

fn text(s: &str) -> JsValue {
    JsValue::from_str(s)
}

/// A property of a JS object (undefined when absent).
fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn has(v: &JsValue, key: &str) -> bool {
    Reflect::has(v, &JsValue::from_str(key)).unwrap()
}

/// `(changes, lastInsertRowid)` of an `execute`/`executeBatch` result, both
/// as numbers (panics if either is not a number).
fn figures(r: &JsValue) -> (f64, f64) {
    let changes = get(r, "changes").as_f64().expect("changes is a number");
    let rowid = get(r, "lastInsertRowid").as_f64().expect("lastInsertRowid is a number");
    (changes, rowid)
}

fn exec(db: &mut Connection, sql: &str, p: JsValue) -> JsValue {
    db.execute(sql, p).unwrap_or_else(|e| panic!("execute {sql:?} failed: {}", describe(&e)))
}

/// `queryBytes` as a string (it must be UTF-8).
fn json(db: &mut Connection, sql: &str, p: JsValue) -> String {
    let out = db.query_bytes(sql, p).unwrap_or_else(|e| panic!("queryBytes {sql:?} failed: {}", describe(&e)));
    String::from_utf8(out.to_vec()).expect("queryBytes is UTF-8")
}

/// An error object as the worker posts it: (code, errno, message).
fn error_parts(e: &JsValue) -> (String, Option<f64>, String) {
    assert!(e.is_object(), "errors are objects, got {e:?}");
    let code = get(e, "code").as_string().unwrap_or_else(|| panic!("no string code on {e:?}"));
    let errno = get(e, "errno").as_f64();
    let message = get(e, "message").as_string().unwrap_or_else(|| panic!("no string message on {e:?}"));
    (code, errno, message)
}

fn describe(e: &JsValue) -> String {
    if e.is_object() && has(e, "code") {
        let (code, errno, message) = error_parts(e);
        format!("{code} (errno {errno:?}): {message}")
    } else {
        format!("{e:?}")
    }
}

/// The call must fail with `RESQ_BAD_PARAM` and a message containing `names`.
fn expect_bad_param<T>(r: Result<T, JsValue>, names: &str) {
    let e = match r {
        Ok(_) => panic!("expected RESQ_BAD_PARAM naming {names:?}, the call succeeded"),
        Err(e) => e,
    };
    let (code, errno, message) = error_parts(&e);
    assert_eq!(code, "RESQ_BAD_PARAM", "{message}");
    assert_eq!(errno, None, "package errors carry no errno");
    assert!(message.contains(names), "message {message:?} should name {names:?}");
}

/// One integer out of a one-row, one-column `queryBytes` (`[{"n":42}]`).
fn scalar(db: &mut Connection, sql: &str) -> String {
    let out = json(db, sql, JsValue::UNDEFINED);
    let inner = out.strip_prefix("[{").and_then(|s| s.strip_suffix("}]")).unwrap_or_else(|| panic!("one row: {out}"));
    inner.split_once(':').expect("one column").1.to_string()
}

/// `queryBytes` of `sql` without parameters, as a string.
fn json_of(db: &mut Connection, sql: &str) -> String {
    json(db, sql, JsValue::UNDEFINED)
}

/// How many times the connection's live prepared statement `sql` has run
/// (`sqlite_stmt`, from SQLITE_ENABLE_STMTVTAB), or `None` when no statement
/// of that SQL is prepared: a cache-less connection finalizes each one.
fn runs(db: &mut Connection, sql: &str) -> Option<u64> {
    let out = json(db, "SELECT run FROM sqlite_stmt WHERE sql = ?", params(&[text(sql)]));
    if out == "[]" {
        return None;
    }
    let n = out.strip_prefix(r#"[{"run":"#).and_then(|s| s.strip_suffix("}]")).and_then(|n| n.parse().ok());
    Some(n.unwrap_or_else(|| panic!("one row with a run count: {out}")))
}

/// No transaction was left open: a `BEGIN` would fail inside one.
fn assert_no_transaction(db: &mut Connection) {
    exec(db, "BEGIN", JsValue::UNDEFINED);
    exec(db, "ROLLBACK", JsValue::UNDEFINED);
}

// Each call's answers and errors.
mod calls;
// The statement cache, memory bounds, the largest value.
mod limits;
// Live queries: what changed, what a query reads, watch answers.
mod live;
