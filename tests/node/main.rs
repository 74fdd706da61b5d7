//! The wasm engine (`resq_wasm::worker`) in Node, on storage "memory": what
//! the worker bootstrap gets back from each call, byte for byte where the
//! contract fixes the bytes. OPFS needs a browser worker: see `tests/browser.rs`.
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
    Connection::open(":memory:".into(), "memory".into(), threshold, JsValue::UNDEFINED)
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

// ------------------------------------------------------------------ tests

/// No transaction was left open: a `BEGIN` would fail inside one.
fn assert_no_transaction(db: &mut Connection) {
    exec(db, "BEGIN", JsValue::UNDEFINED);
    exec(db, "ROLLBACK", JsValue::UNDEFINED);
}

/// The wasm instance's memory in bytes (it never shrinks).
fn wasm_memory_bytes() -> f64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    memory.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as f64
}

#[wasm_bindgen_test]
async fn open_memory_and_close() {
    let mut db = open_mem(1024.0).await;
    assert_eq!(json(&mut db, "SELECT 1 AS one", JsValue::UNDEFINED), r#"[{"one":1}]"#);
    db.close().expect("close");
    db.close().expect("a second close is a no-op");
}

#[wasm_bindgen_test]
async fn open_rejects_unknown_storage() {
    let e = Connection::open("x.db".into(), "indexeddb".into(), 1024.0, JsValue::UNDEFINED)
        .await
        .err()
        .expect("unknown storage fails");
    let (code, _, message) = error_parts(&e);
    assert_eq!(code, "RESQ_BAD_PARAM");
    assert!(message.contains("indexeddb"), "{message}");
}

#[wasm_bindgen_test]
async fn execute_returns_changes_and_last_insert_rowid() {
    let mut db = open_mem(1024.0).await;
    let r = exec(&mut db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)", JsValue::UNDEFINED);
    assert_eq!(figures(&r), (0.0, 0.0));

    let r = exec(&mut db, "INSERT INTO t(name) VALUES (?)", params(&[text("a")]));
    assert_eq!(figures(&r), (1.0, 1.0));
    let r = exec(&mut db, "INSERT INTO t(name) VALUES (?), (?)", params(&[text("b"), text("c")]));
    assert_eq!(figures(&r), (2.0, 3.0));
    let r =
        exec(&mut db, "INSERT INTO t(id, name) VALUES (:id, :name)", named(&[("name", text("d")), ("id", num(10.0))]));
    assert_eq!(figures(&r), (1.0, 10.0));
    let r = exec(&mut db, "UPDATE t SET name = upper(name) WHERE id < ?", params(&[num(3.0)]));
    assert_eq!(get(&r, "changes").as_f64(), Some(2.0));

    // A rowid outside ±(2^53 − 1) comes back as a bigint.
    let r = exec(&mut db, "INSERT INTO t(id, name) VALUES (?, 'max')", params(&[big(i64::MAX)]));
    assert_eq!(get(&r, "changes").as_f64(), Some(1.0));
    let rowid = get(&r, "lastInsertRowid");
    assert!(rowid.is_bigint(), "lastInsertRowid {rowid:?} should be a bigint");
    assert_eq!(i64::try_from(rowid.unchecked_into::<BigInt>()).unwrap(), i64::MAX);
    // ... and exactly 2^53 − 1 is still a number.
    let r = exec(&mut db, "INSERT INTO t(id, name) VALUES (?, 'safe')", params(&[num(9007199254740991.0)]));
    assert_eq!(figures(&r), (1.0, 9007199254740991.0));

    assert_eq!(
        json(&mut db, "SELECT id, name FROM t ORDER BY id LIMIT 4", JsValue::UNDEFINED),
        r#"[{"id":1,"name":"A"},{"id":2,"name":"B"},{"id":3,"name":"c"},{"id":10,"name":"d"}]"#
    );
}

#[wasm_bindgen_test]
async fn execute_script_without_params_runs_every_statement() {
    let mut db = open_mem(1024.0).await;
    let r = exec(
        &mut db,
        "CREATE TABLE m(x); -- a migration\nINSERT INTO m VALUES (1); INSERT INTO m VALUES (2), (3);",
        JsValue::UNDEFINED,
    );
    // The figures are the last statement's.
    assert_eq!(figures(&r), (2.0, 3.0));
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM m"), "3");
    // With parameters, exactly one statement.
    expect_bad_param(
        db.execute("INSERT INTO m VALUES (?); INSERT INTO m VALUES (?)", params(&[num(1.0), num(2.0)])),
        "one statement",
    );
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM m"), "3");
}

#[wasm_bindgen_test]
async fn query_bytes_is_exact_json_for_every_storage_class() {
    let mut db = open_mem(1024.0).await;
    // No declared types: every value is stored as given (no affinity).
    exec(&mut db, "CREATE TABLE v(id, imin, imax, neg, r, r2, t, b, e, n)", JsValue::UNDEFINED);
    exec(
        &mut db,
        "INSERT INTO v VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        params(&[
            num(1.0),
            big(i64::MIN),
            big(i64::MAX),
            num(-42.0),
            num(1.5),
            num(0.1),
            text("say \"hi\" \\ 😀\nok\u{1}"),
            bytes(&[0, 1, 2, 0xfd, 0xfe, 0xff, 0x10]),
            bytes(&[]),
            JsValue::NULL,
        ]),
    );
    // Values from SQL itself too: a REAL that is integral, an empty string.
    exec(&mut db, "INSERT INTO v VALUES (2, -1, 0, 7, 2.0, -0.25, '', x'ff', x'', NULL)", JsValue::UNDEFINED);

    let got = json(&mut db, "SELECT * FROM v ORDER BY id", JsValue::UNDEFINED);
    let want = concat!(
        r#"[{"id":1,"imin":-9223372036854775808,"imax":9223372036854775807,"neg":-42,"r":1.5,"r2":0.1,"#,
        r#""t":"say \"hi\" \\ 😀\nok\u0001","b":"AAEC/f7/EA==","e":"","n":null},"#,
        r#"{"id":2,"imin":-1,"imax":0,"neg":7,"r":2,"r2":-0.25,"t":"","b":"/w==","e":"","n":null}]"#,
    );
    assert_eq!(got, want);
    // The storage classes are what we think they are.
    assert_eq!(
        json(&mut db, "SELECT typeof(imin) a, typeof(r) b, typeof(t) c, typeof(b) d, typeof(e) e, typeof(n) f FROM v WHERE id = 1", JsValue::UNDEFINED),
        r#"[{"a":"integer","b":"real","c":"text","d":"blob","e":"blob","f":"null"}]"#
    );
    // No rows is an empty array; a query with params binds them.
    assert_eq!(json(&mut db, "SELECT * FROM v WHERE id = ?", params(&[num(99.0)])), "[]");
    assert_eq!(json(&mut db, "SELECT t FROM v WHERE id = $id", named(&[("id", num(2.0))])), r#"[{"t":""}]"#);
}

#[wasm_bindgen_test]
async fn query_returns_plain_json_when_nothing_needs_fixing() {
    let mut db = open_mem(8.0).await;
    let r = db.query("SELECT 1 AS a, 'x' AS b, NULL AS c, 2.5 AS d", JsValue::UNDEFINED).expect("query");
    let json = get(&r, "json").dyn_into::<Uint8Array>().expect("json is a Uint8Array");
    assert_eq!(String::from_utf8(json.to_vec()).unwrap(), r#"[{"a":1,"b":"x","c":null,"d":2.5}]"#);
    for k in ["columns", "fixups", "side", "buffers"] {
        assert!(!has(&r, k), "{k} should be absent without fix-ups");
    }
}

#[wasm_bindgen_test]
async fn query_returns_fixups_for_blobs_and_bigints() {
    const THRESHOLD: usize = 8;
    let mut db = open_mem(THRESHOLD as f64).await;
    exec(&mut db, "CREATE TABLE f(id INTEGER PRIMARY KEY, small, big, n)", JsValue::UNDEFINED);
    let below: Vec<u8> = (1..THRESHOLD as u8).collect(); // 7 bytes: inline, in `side`
    let at: Vec<u8> = (100..100 + THRESHOLD as u8).collect(); // 8 bytes: a buffer of its own
    let above: Vec<u8> = vec![0xab; 3 * THRESHOLD]; // 24 bytes: own buffer
    exec(&mut db, "INSERT INTO f VALUES (1, ?, ?, ?)", params(&[bytes(&below), bytes(&at), big(i64::MAX)]));
    exec(&mut db, "INSERT INTO f VALUES (2, ?, ?, ?)", params(&[bytes(&[9, 9]), bytes(&above), big(i64::MIN)]));
    exec(&mut db, "INSERT INTO f VALUES (3, NULL, NULL, 9007199254740991)", JsValue::UNDEFINED);

    let r = db.query("SELECT id, small, big, n FROM f ORDER BY id", JsValue::UNDEFINED).expect("query");
    let json = get(&r, "json").dyn_into::<Uint8Array>().expect("json is a Uint8Array");
    assert_eq!(
        String::from_utf8(json.to_vec()).unwrap(),
        concat!(
            r#"[{"id":1,"small":null,"big":null,"n":"9223372036854775807"},"#,
            r#"{"id":2,"small":null,"big":null,"n":"-9223372036854775808"},"#,
            r#"{"id":3,"small":null,"big":null,"n":9007199254740991}]"#
        )
    );

    let columns: Vec<String> = get(&r, "columns")
        .dyn_into::<Array>()
        .expect("columns is an array")
        .iter()
        .map(|c| c.as_string().expect("column names are strings"))
        .collect();
    assert_eq!(columns, ["id", "small", "big", "n"]);

    // Five numbers per fix-up: row, column, kind (0 inline, 1 own, 2 bigint), a, b.
    let fixups = get(&r, "fixups").dyn_into::<Float64Array>().expect("fixups is a Float64Array").to_vec();
    #[rustfmt::skip]
    let want = vec![
        0.0, 1.0, 0.0, 0.0, 7.0, // row 0 small: inline at side[0..7]
        0.0, 2.0, 1.0, 0.0, 0.0, // row 0 big: buffers[0]
        0.0, 3.0, 2.0, 0.0, 0.0, // row 0 n: bigint
        1.0, 1.0, 0.0, 7.0, 2.0, // row 1 small: inline at side[7..9]
        1.0, 2.0, 1.0, 1.0, 0.0, // row 1 big: buffers[1]
        1.0, 3.0, 2.0, 0.0, 0.0, // row 1 n: bigint
    ];
    assert_eq!(fixups, want);

    let side = get(&r, "side").dyn_into::<Uint8Array>().expect("side is a Uint8Array").to_vec();
    assert_eq!(side, [&below[..], &[9, 9]].concat());

    let buffers = get(&r, "buffers").dyn_into::<Array>().expect("buffers is an array");
    assert_eq!(buffers.length(), 2);
    let b0 = buffers.get(0).dyn_into::<Uint8Array>().expect("a Uint8Array");
    let b1 = buffers.get(1).dyn_into::<Uint8Array>().expect("a Uint8Array");
    assert_eq!(b0.to_vec(), at);
    assert_eq!(b1.to_vec(), above);
    // Own buffers are whole buffers, outside wasm memory (transferable).
    assert_eq!(b0.byte_offset(), 0);
    assert_eq!(b0.buffer().byte_length(), at.len() as u32);
    assert_ne!(
        JsValue::from(b0.buffer()),
        wasm_bindgen::memory().unchecked_into::<js_sys::WebAssembly::Memory>().buffer()
    );

    // The same cells through queryBytes: base64, integers with all digits.
    assert_eq!(
        json_of(&mut db, "SELECT small, n FROM f WHERE id = 1"),
        r#"[{"small":"AQIDBAUGBw==","n":9223372036854775807}]"#
    );
}

fn json_of(db: &mut Connection, sql: &str) -> String {
    json(db, sql, JsValue::UNDEFINED)
}

#[wasm_bindgen_test]
async fn query_fixups_only_for_the_last_duplicate_column() {
    let mut db = open_mem(4.0).await;
    let r = db.query("SELECT x'0102' AS a, x'0303030303' AS a", JsValue::UNDEFINED).expect("query");
    let fixups = get(&r, "fixups").dyn_into::<Float64Array>().unwrap().to_vec();
    // Only column 1 (the last `a`) gets a fix-up: it is the one JSON.parse keeps.
    assert_eq!(fixups, vec![0.0, 1.0, 1.0, 0.0, 0.0]);
    assert_eq!(get(&r, "buffers").dyn_into::<Array>().unwrap().length(), 1);
}

#[wasm_bindgen_test]
async fn parameter_errors_name_the_parameter_and_run_nothing() {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE p(a, b)", JsValue::UNDEFINED);
    let ins = "INSERT INTO p VALUES (?, ?)";

    expect_bad_param(db.execute(ins, params(&[num(1.0), JsValue::UNDEFINED])), "parameter 2");
    expect_bad_param(db.execute(ins, params(&[num(f64::NAN), num(1.0)])), "parameter 1");
    expect_bad_param(db.execute(ins, params(&[num(1.0), num(f64::INFINITY)])), "parameter 2");
    expect_bad_param(db.execute(ins, params(&[Object::new().into(), num(1.0)])), "parameter 1");
    expect_bad_param(db.execute(ins, params(&[num(1.0), js_sys::Function::new_no_args("").into()])), "parameter 2");
    let huge = BigInt::new(&JsValue::from_str("9223372036854775808")).unwrap();
    expect_bad_param(db.execute(ins, params(&[huge.into(), num(1.0)])), "parameter 1");
    let lone = JsString::from_char_code1(0xD800);
    expect_bad_param(db.execute(ins, params(&[num(1.0), lone.into()])), "parameter 2");
    // Wrong counts.
    expect_bad_param(db.execute(ins, params(&[num(1.0)])), "2 parameters");
    expect_bad_param(db.execute(ins, params(&[num(1.0), num(2.0), num(3.0)])), "2 parameters");
    expect_bad_param(db.execute(ins, JsValue::UNDEFINED), "2 parameters");
    // Named: missing, extra, and a bad value named as the SQL spells it.
    let named_ins = "INSERT INTO p VALUES (:a, @b)";
    expect_bad_param(db.execute(named_ins, named(&[("a", num(1.0))])), "@b");
    expect_bad_param(db.execute(named_ins, named(&[("a", num(1.0)), ("b", num(2.0)), ("c", num(3.0))])), "`c`");
    expect_bad_param(db.execute(named_ins, named(&[("a", num(1.0)), ("b", JsValue::UNDEFINED)])), "@b");
    // Parameters must be an array or a plain object.
    expect_bad_param(db.execute(ins, num(5.0)), "array");
    // query and queryBytes check the same way.
    expect_bad_param(db.query("SELECT ?", params(&[JsValue::UNDEFINED])), "parameter 1");
    expect_bad_param(db.query_bytes("SELECT ?, ?", params(&[num(1.0), num(f64::NAN)])), "parameter 2");

    // Nothing ran, and the connection is fine.
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM p"), "0");
    exec(&mut db, ins, params(&[JsValue::TRUE, num(-0.0)]));
    assert_eq!(json_of(&mut db, "SELECT a, typeof(b) AS tb FROM p"), r#"[{"a":1,"tb":"real"}]"#);
}

#[wasm_bindgen_test]
async fn sqlite_errors_carry_the_extended_code() {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE u(x UNIQUE)", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO u VALUES (?)", params(&[num(1.0)]));
    let e = db.execute("INSERT INTO u VALUES (?)", params(&[num(1.0)])).expect_err("duplicate");
    let (code, errno, message) = error_parts(&e);
    assert_eq!(code, "SQLITE_CONSTRAINT_UNIQUE");
    assert_eq!(errno, Some(2067.0));
    assert!(message.contains("UNIQUE constraint failed: u.x"), "{message}");
    assert!(message.contains("INSERT INTO u VALUES (?)"), "message names the SQL: {message}");

    let e = db.query_bytes("SELEC 1", JsValue::UNDEFINED).expect_err("syntax error");
    let (code, errno, message) = error_parts(&e);
    assert_eq!(code, "SQLITE_ERROR");
    assert_eq!(errno, Some(1.0));
    assert!(message.contains("syntax error") && message.contains("SELEC 1"), "{message}");

    let e = db.query("SELECT * FROM missing", JsValue::UNDEFINED).expect_err("no such table");
    assert!(error_parts(&e).2.contains("no such table: missing"));

    // The failed statement left nothing behind: the connection still works.
    exec(&mut db, "INSERT INTO u VALUES (?)", params(&[num(2.0)]));
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM u"), "2");
}

#[wasm_bindgen_test]
async fn execute_batch_is_all_or_nothing() {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE b(id INTEGER PRIMARY KEY, x UNIQUE)", JsValue::UNDEFINED);
    let ins = "INSERT INTO b(x) VALUES (?)";
    let sets =
        |xs: &[JsValue]| -> JsValue { xs.iter().map(|x| params(std::slice::from_ref(x))).collect::<Array>().into() };

    let r = db.execute_batch(ins, sets(&[num(1.0), num(2.0), num(3.0)])).expect("batch");
    assert_eq!(figures(&r), (3.0, 3.0), "changes is the total");

    // A constraint failure in the third set undoes the first two.
    let e = db.execute_batch(ins, sets(&[num(4.0), num(5.0), num(1.0)])).expect_err("duplicate in set 3");
    let (code, errno, _) = error_parts(&e);
    assert_eq!((code.as_str(), errno), ("SQLITE_CONSTRAINT_UNIQUE", Some(2067.0)));
    assert_eq!(json_of(&mut db, "SELECT group_concat(x) AS xs FROM b"), r#"[{"xs":"1,2,3"}]"#);

    // A bad value in the second set: RESQ_BAD_PARAM naming the set and parameter.
    let e = db.execute_batch(ins, sets(&[num(6.0), JsValue::UNDEFINED])).expect_err("undefined");
    let (code, _, message) = error_parts(&e);
    assert_eq!(code, "RESQ_BAD_PARAM");
    assert!(message.contains("parameter set 2") && message.contains("parameter 1"), "{message}");
    assert_eq!(json_of(&mut db, "SELECT group_concat(x) AS xs FROM b"), r#"[{"xs":"1,2,3"}]"#);

    // Named sets, and the connection is not left inside a transaction.
    let named_sets: Array = [7.0, 8.0].iter().map(|x| named(&[("x", num(*x))])).collect();
    let r = db.execute_batch("INSERT INTO b(x) VALUES (:x)", named_sets.into()).expect("named batch");
    assert_eq!(figures(&r), (2.0, 5.0));
    assert_no_transaction(&mut db);
    // Not an array of sets; more than one statement.
    expect_bad_param(db.execute_batch(ins, num(1.0)), "array");
    expect_bad_param(db.execute_batch("INSERT INTO b(x) VALUES (?); SELECT 1", sets(&[num(9.0)])), "one statement");
    assert_eq!(json_of(&mut db, "SELECT group_concat(x) AS xs FROM b"), r#"[{"xs":"1,2,3,7,8"}]"#);
}

#[wasm_bindgen_test]
async fn a_failing_script_leaves_nothing() {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE keep(x); INSERT INTO keep VALUES (1)", JsValue::UNDEFINED);
    let e = db
        .execute(
            "CREATE TABLE s1(x); INSERT INTO s1 VALUES (1); INSERT INTO keep VALUES (2); INSERT INTO nope VALUES (3);",
            JsValue::UNDEFINED,
        )
        .expect_err("the last statement fails");
    let (code, _, message) = error_parts(&e);
    assert_eq!(code, "SQLITE_ERROR");
    assert!(message.contains("no such table: nope"), "{message}");
    assert_eq!(json_of(&mut db, "SELECT name FROM sqlite_schema WHERE name = 's1'"), "[]");
    assert_eq!(json_of(&mut db, "SELECT group_concat(x) AS xs FROM keep"), r#"[{"xs":"1"}]"#);
    assert_no_transaction(&mut db);
    // The database is still usable for the next script.
    exec(&mut db, "CREATE TABLE s1(x); INSERT INTO s1 VALUES (1)", JsValue::UNDEFINED);
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM s1"), "1");
}

/// Prepared statements a connection keeps (`CACHE_SIZE` in src/worker/db.rs).
const STATEMENT_CACHE: usize = 64;

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

#[wasm_bindgen_test]
async fn statement_cache_reuses_and_evicts_correctly() {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE c(id INTEGER PRIMARY KEY, v)", JsValue::UNDEFINED);
    let ins = "INSERT INTO c(v) VALUES (?)";
    assert_eq!(runs(&mut db, ins), None);
    for i in 0..500 {
        let r = exec(&mut db, ins, params(&[num(i as f64)]));
        assert_eq!(figures(&r), (1.0, (i + 1) as f64));
    }
    // One prepared statement ran 500 times, and is still prepared.
    assert_eq!(runs(&mut db, ins), Some(500));
    let sel = "SELECT count(*) AS n, sum(v) AS s FROM c WHERE v >= ?";
    for i in 0..100 {
        let want = format!(r#"[{{"n":{},"s":{}}}]"#, 500 - i * 5, (i * 5..500).sum::<i64>());
        assert_eq!(json(&mut db, sel, params(&[num((i * 5) as f64)])), want);
        if i == 0 {
            assert_eq!(runs(&mut db, sel), Some(1));
        }
    }
    assert_eq!(runs(&mut db, sel), Some(100));
    // More distinct statements than the cache holds: it keeps the newest
    // ones (`SELECT 137 AS k` … `SELECT 199 AS k`) and the query that lists
    // them, which took the place of the oldest, `SELECT 136 AS k`.
    for i in 0..200 {
        assert_eq!(json_of(&mut db, &format!("SELECT {i} AS k")), format!(r#"[{{"k":{i}}}]"#));
    }
    let live = "SELECT count(*) AS live, count(k) AS ks, min(k) AS lo, max(k) AS hi FROM \
                (SELECT CASE WHEN sql GLOB 'SELECT [0-9]* AS k' THEN CAST(substr(sql, 8) AS INTEGER) END AS k FROM sqlite_stmt)";
    let oldest_kept = 200 - (STATEMENT_CACHE - 1);
    assert_eq!(
        json_of(&mut db, live),
        format!(r#"[{{"live":{STATEMENT_CACHE},"ks":{},"lo":{oldest_kept},"hi":199}}]"#, STATEMENT_CACHE - 1)
    );
    assert_eq!(runs(&mut db, ins), None, "evicted statements are finalized");
    // The evicted statements are prepared again when they come back.
    assert_eq!(figures(&exec(&mut db, ins, params(&[num(1000.0)]))), (1.0, 501.0));
    assert_eq!(json(&mut db, sel, params(&[num(999.0)])), r#"[{"n":1,"s":1000}]"#);
    assert_eq!(runs(&mut db, ins), Some(1));
    // A statement that failed mid-way is reset: the next run starts over.
    exec(&mut db, "CREATE TABLE once(x UNIQUE)", JsValue::UNDEFINED);
    let dup = "INSERT INTO once VALUES (?), (?)";
    assert!(db.execute(dup, params(&[num(1.0), num(1.0)])).is_err());
    assert_eq!(figures(&exec(&mut db, dup, params(&[num(1.0), num(2.0)]))).0, 2.0);
}

#[wasm_bindgen_test]
async fn cached_statement_follows_schema_changes() {
    // SQLite re-prepares a statement whose schema changed, inside its next
    // step; the column list of `SELECT *` changes with it.
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE s(a, b, c); INSERT INTO s VALUES (1, 2, 3)", JsValue::UNDEFINED);
    let all = "SELECT * FROM s";
    assert_eq!(json_of(&mut db, all), r#"[{"a":1,"b":2,"c":3}]"#);
    exec(&mut db, "ALTER TABLE s DROP COLUMN a", JsValue::UNDEFINED);
    let after_drop = json_of(&mut db, all);
    exec(&mut db, "ALTER TABLE s ADD COLUMN d DEFAULT 4", JsValue::UNDEFINED);
    let after_add = json_of(&mut db, all);
    exec(&mut db, "ALTER TABLE s RENAME COLUMN b TO bee", JsValue::UNDEFINED);
    let after_rename = json_of(&mut db, all);
    let objects = db.query(all, JsValue::UNDEFINED).expect("query");
    let after_rename_query = String::from_utf8(get(&objects, "json").unchecked_into::<Uint8Array>().to_vec()).unwrap();
    assert_eq!(
        [after_drop.as_str(), &after_add, &after_rename, &after_rename_query],
        [r#"[{"b":2,"c":3}]"#, r#"[{"b":2,"c":3,"d":4}]"#, r#"[{"bee":2,"c":3,"d":4}]"#, r#"[{"bee":2,"c":3,"d":4}]"#,],
        "a cached `SELECT *` after DROP COLUMN, ADD COLUMN, RENAME COLUMN (queryBytes ×3, query)"
    );
}

#[wasm_bindgen_test]
async fn wasm_memory_stays_bounded_with_large_blobs() {
    const SIZE: usize = 4 << 20;
    const REPS: usize = 8;
    let mut db = open_mem(64.0 * 1024.0).await;
    exec(&mut db, "CREATE TABLE big(id INTEGER PRIMARY KEY, data BLOB)", JsValue::UNDEFINED);
    let mut blob: Vec<u8> = (0..SIZE).map(|i| (i * 7 % 251) as u8).collect();
    let start = wasm_memory_bytes();
    let mut sizes = Vec::new();
    for rep in 0..REPS {
        blob[0] = rep as u8;
        blob[SIZE - 1] = rep as u8;
        let r = exec(&mut db, "INSERT INTO big(data) VALUES (?)", params(&[bytes(&blob)]));
        let id = get(&r, "lastInsertRowid");

        // query: the blob leaves in a buffer of its own, intact.
        let q = db.query("SELECT data FROM big WHERE id = ?", params(std::slice::from_ref(&id))).expect("query");
        let out = get(&q, "buffers").dyn_into::<Array>().expect("own buffer").get(0).dyn_into::<Uint8Array>().unwrap();
        assert_eq!(out.length() as usize, SIZE);
        assert_eq!((out.get_index(0), out.get_index(1), out.get_index(SIZE as u32 - 1)), (rep as u8, 7, rep as u8));

        // queryBytes: the same blob as base64 JSON.
        let j =
            db.query_bytes("SELECT data FROM big WHERE id = ?", params(std::slice::from_ref(&id))).expect("queryBytes");
        assert_eq!(j.length() as usize, SIZE.div_ceil(3) * 4 + r#"[{"data":""}]"#.len());

        exec(&mut db, "DELETE FROM big WHERE id = ?", params(&[id]));
        sizes.push(wasm_memory_bytes());
    }
    console_log!("wasm memory before: {start}, after each repetition: {sizes:?}");
    // Memory may grow while the allocators warm up, but not on every
    // repetition: from the third on it stays put.
    assert_eq!(sizes[REPS - 1], sizes[2], "wasm memory after each repetition: {sizes:?}");
    // And one repetition's working set is a handful of copies of the blob
    // (the test's own, the bound parameter, SQLite's pages, the JSON text).
    assert!(sizes[REPS - 1] - start <= (10 * SIZE) as f64, "before: {start}, after: {sizes:?}");
}

#[wasm_bindgen_test]
async fn values_reach_two_gib_minus_one_and_one_byte_more_is_too_big_naming_the_limit() {
    let mut db = open_mem(1024.0).await;
    // zeroblob's bytes are never made: its length alone is checked.
    assert_eq!(scalar(&mut db, "SELECT length(zeroblob(2147483647)) AS n"), "2147483647");
    let e = db.query_bytes("SELECT zeroblob(2147483648)", JsValue::UNDEFINED).expect_err("over the limit");
    let (code, errno, message) = error_parts(&e);
    assert_eq!((code.as_str(), errno), ("SQLITE_TOOBIG", Some(18.0)));
    assert!(message.contains("2147483647 bytes (2 GiB − 1)"), "{message}");

    // Bytes one over the limit are refused before they are copied into
    // wasm memory (an untouched 2 GiB buffer costs no real memory here).
    exec(&mut db, "CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)", JsValue::UNDEFINED);
    let over = Uint8Array::new_with_length(1 << 31);
    let e = db.execute("INSERT INTO t(data) VALUES (?)", params(&[over.into()])).expect_err("over the limit");
    let (code, errno, message) = error_parts(&e);
    assert_eq!((code.as_str(), errno), ("SQLITE_TOOBIG", Some(18.0)));
    assert!(
        message.contains("parameter 1: the value is 2147483648 bytes, over the limit of 2147483647 bytes"),
        "{message}"
    );
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM t"), "0");
    exec(&mut db, "INSERT INTO t(data) VALUES (?)", params(&[bytes(&[1, 2, 3])]));
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM t"), "1");
}

// Live queries: what changed, what a query reads, watch answers.
mod live;
