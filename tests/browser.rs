//! The wasm engine (`resq_wasm::worker`) in a dedicated worker in headless
//! Chromium, on storage "opfs": persistence across close/open, several
//! databases at once, and the lock on a name that is already open.
//!
//! Run: `CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --test browser`.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Reflect, Uint8Array};
use resq_wasm::worker::Connection;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

// ---------------------------------------------------------------- helpers

/// A database name no other test (or earlier run in this profile) uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}-{}.db", js_sys::Date::now() as u64, (js_sys::Math::random() * 1e9) as u64)
}

async fn open_opfs(name: &str) -> Connection {
    Connection::open(name.into(), "opfs".into(), 1024.0, JsValue::UNDEFINED, false, JsValue::UNDEFINED)
        .await
        .unwrap_or_else(|e| panic!("open {name:?} on OPFS failed: {}", describe(&e)))
}

/// Positional parameters: a JS array of these values.
fn params(values: &[JsValue]) -> JsValue {
    values.iter().collect::<Array>().into()
}

fn bytes(b: &[u8]) -> JsValue {
    Uint8Array::from(b).into()
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn exec(db: &mut Connection, sql: &str, p: JsValue) -> JsValue {
    db.execute(sql, p).unwrap_or_else(|e| panic!("execute {sql:?} failed: {}", describe(&e)))
}

/// `queryBytes` as a string.
fn json(db: &mut Connection, sql: &str) -> String {
    let out = db
        .query_bytes(sql, JsValue::UNDEFINED)
        .unwrap_or_else(|e| panic!("queryBytes {sql:?} failed: {}", describe(&e)));
    String::from_utf8(out.to_vec()).expect("queryBytes is UTF-8")
}

/// An error object as the worker posts it: (code, message).
fn error_parts(e: &JsValue) -> (String, String) {
    let code = get(e, "code").as_string().unwrap_or_else(|| panic!("no string code on {e:?}"));
    let message = get(e, "message").as_string().unwrap_or_default();
    (code, message)
}

fn describe(e: &JsValue) -> String {
    match get(e, "code").as_string() {
        Some(_) => {
            let (code, message) = error_parts(e);
            format!("{code}: {message}")
        }
        None => format!("{e:?}"),
    }
}

// ------------------------------------------------------------------ tests

#[wasm_bindgen_test]
async fn opfs_data_survives_close_and_reopen() {
    let name = unique("persist");
    let blob: Vec<u8> = (0..5000u32).map(|i| (i % 256) as u8).collect();
    {
        let mut db = open_opfs(&name).await;
        exec(&mut db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, data BLOB)", JsValue::UNDEFINED);
        let r = exec(&mut db, "INSERT INTO t(name, data) VALUES (?, ?)", params(&["cat.jpg".into(), bytes(&blob)]));
        assert_eq!(get(&r, "lastInsertRowid").as_f64(), Some(1.0));
        exec(&mut db, "INSERT INTO t(name, data) VALUES ('dog.jpg', x'00ff')", JsValue::UNDEFINED);
        db.close().expect("close");
        db.close().expect("a second close is a no-op");
    }
    let mut db = open_opfs(&name).await;
    assert_eq!(
        json(&mut db, "SELECT id, name, length(data) AS n FROM t ORDER BY id"),
        r#"[{"id":1,"name":"cat.jpg","n":5000},{"id":2,"name":"dog.jpg","n":2}]"#
    );
    // The bytes themselves, through query's own-buffer path (5000 ≥ 1024).
    let q = db.query("SELECT data FROM t WHERE id = 1", JsValue::UNDEFINED).expect("query");
    let out = get(&q, "buffers").dyn_into::<Array>().expect("buffers").get(0).dyn_into::<Uint8Array>().unwrap();
    assert_eq!(out.to_vec(), blob);
    // Still writable after reopening, and that survives too.
    exec(&mut db, "DELETE FROM t WHERE id = 2", JsValue::UNDEFINED);
    db.close().expect("close");
    let mut db = open_opfs(&name).await;
    assert_eq!(json(&mut db, "SELECT group_concat(id) AS ids FROM t"), r#"[{"ids":"1"}]"#);
    db.close().expect("close");
}

#[wasm_bindgen_test]
async fn a_new_opfs_name_starts_empty() {
    let mut db = open_opfs(&unique("fresh")).await;
    assert_eq!(json(&mut db, "SELECT count(*) AS n FROM sqlite_schema"), r#"[{"n":0}]"#);
    db.close().expect("close");
}

#[wasm_bindgen_test]
async fn two_opfs_databases_open_at_once() {
    let (name_a, name_b) = (unique("two-a"), unique("two-b"));
    let mut a = open_opfs(&name_a).await;
    let mut b = open_opfs(&name_b).await;
    exec(&mut a, "CREATE TABLE t(v); INSERT INTO t VALUES ('in a')", JsValue::UNDEFINED);
    exec(&mut b, "CREATE TABLE t(v); INSERT INTO t VALUES ('in b'), ('also in b')", JsValue::UNDEFINED);
    assert_eq!(json(&mut a, "SELECT group_concat(v) AS v FROM t"), r#"[{"v":"in a"}]"#);
    assert_eq!(json(&mut b, "SELECT group_concat(v) AS v FROM t"), r#"[{"v":"in b,also in b"}]"#);
    // Closing one leaves the other working.
    a.close().expect("close a");
    exec(&mut b, "INSERT INTO t VALUES ('after a closed')", JsValue::UNDEFINED);
    assert_eq!(json(&mut b, "SELECT count(*) AS n FROM t"), r#"[{"n":3}]"#);
    b.close().expect("close b");
    // Both persisted separately.
    let mut a = open_opfs(&name_a).await;
    assert_eq!(json(&mut a, "SELECT count(*) AS n FROM t"), r#"[{"n":1}]"#);
    a.close().expect("close a");
}

#[wasm_bindgen_test]
async fn opening_an_open_name_again_is_locked() {
    let name = unique("locked");
    let mut first = open_opfs(&name).await;
    exec(&mut first, "CREATE TABLE t(v); INSERT INTO t VALUES (1)", JsValue::UNDEFINED);

    let second =
        Connection::open(name.clone(), "opfs".into(), 1024.0, JsValue::UNDEFINED, false, JsValue::UNDEFINED).await;
    let outcome = match &second {
        Ok(_) => "the second open succeeded".to_string(),
        Err(e) => describe(e),
    };
    assert!(
        matches!(&second, Err(e) if error_parts(e).0 == "RESQ_LOCKED"),
        "a second open of {name:?} while the first is open must fail with RESQ_LOCKED; got: {outcome}"
    );

    // The failed open took nothing from the first connection.
    exec(&mut first, "INSERT INTO t VALUES (2)", JsValue::UNDEFINED);
    assert_eq!(json(&mut first, "SELECT count(*) AS n FROM t"), r#"[{"n":2}]"#);
    first.close().expect("close");
    // Once closed, the name opens again, with its data.
    let mut again = open_opfs(&name).await;
    assert_eq!(json(&mut again, "SELECT count(*) AS n FROM t"), r#"[{"n":2}]"#);
    again.close().expect("close");
}

/// `open` with `encrypt` (the end of a `rekey(key)` of a plain database):
/// a plain file is encrypted under the key as it opens, and one that is
/// encrypted already (the worker that encrypted it went before its tab
/// heard) opens with the key. The build with ciphers only (`npm test` runs
/// it, in a debug build, where a misaligned read of a VFS file also fails).
#[cfg(feature = "cipher")]
#[wasm_bindgen_test]
async fn opening_to_encrypt_encrypts_a_plain_file_and_opens_an_encrypted_one() {
    let name = unique("encrypt");
    // A passphrase in the key's one form, as the page gives it (keyproof.ts).
    let passphrase = |p: &str| bytes(&[b"p", p.as_bytes()].concat());
    let key = passphrase("a passphrase");
    let open = |key: JsValue, encrypt: bool| {
        Connection::open(name.clone(), "opfs".into(), 1024.0, key, encrypt, JsValue::UNDEFINED)
    };
    let mut db = open_opfs(&name).await;
    exec(&mut db, "CREATE TABLE t(v); INSERT INTO t VALUES ('kept')", JsValue::UNDEFINED);
    db.close().expect("close");

    let mut db = open(key.clone(), true).await.unwrap_or_else(|e| panic!("encrypted as it opens: {}", describe(&e)));
    assert_eq!(json(&mut db, "SELECT v FROM t"), r#"[{"v":"kept"}]"#);
    db.close().expect("close");
    let plain = open(JsValue::UNDEFINED, false).await.err().expect("encrypted now: no key opens it");
    assert_eq!(error_parts(&plain).0, "RESQ_BAD_KEY", "{}", describe(&plain));

    let mut db = open(key.clone(), true).await.unwrap_or_else(|e| panic!("opened with its key: {}", describe(&e)));
    assert_eq!(json(&mut db, "SELECT v FROM t"), r#"[{"v":"kept"}]"#);
    db.close().expect("close");
    let wrong = open(passphrase("another"), true).await.err().expect("encrypted under another key");
    assert_eq!(error_parts(&wrong).0, "RESQ_BAD_KEY", "{}", describe(&wrong));
}

/// Under WAL a reader beside the writer reads the last commit while the
/// writer's transaction is open, and leaves to the writer what it cannot run.
#[wasm_bindgen_test]
async fn a_reader_reads_the_last_commit_while_the_writer_writes() {
    let name = unique("reader");
    let mut db = open_opfs(&name).await;
    // A new database has no reader until it is in WAL mode (after its first commit).
    let early = db.reader().err().map(|e| error_parts(&e).0);
    assert_eq!(early.as_deref(), Some("RESQ_ON_WRITER"));
    exec(&mut db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO t(v) VALUES ('one')", JsValue::UNDEFINED);
    let mut reader = db.reader().unwrap_or_else(|e| panic!("reader: {}", describe(&e)));
    exec(&mut db, "BEGIN", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO t(v) VALUES ('two')", JsValue::UNDEFINED);
    assert_eq!(json(&mut db, "SELECT count(*) AS n FROM t"), r#"[{"n":2}]"#, "the writer sees its own write");
    assert_eq!(json(&mut reader, "SELECT count(*) AS n FROM t"), r#"[{"n":1}]"#, "the reader sees the last commit");
    for sql in
        ["INSERT INTO t(v) VALUES ('x') RETURNING id", "BEGIN", "PRAGMA user_version = 3", "SELECT * FROM nowhere"]
    {
        let e = reader.query_bytes(sql, JsValue::UNDEFINED).expect_err(sql);
        assert_eq!(error_parts(&e).0, "RESQ_ON_WRITER", "{sql}");
    }
    let e = reader.execute("DELETE FROM t", JsValue::UNDEFINED).expect_err("execute on a reader");
    assert_eq!(error_parts(&e).0, "RESQ_ON_WRITER");
    exec(&mut db, "COMMIT", JsValue::UNDEFINED);
    assert_eq!(json(&mut reader, "SELECT group_concat(v) AS v FROM t"), r#"[{"v":"one,two"}]"#, "then the new commit");
    // The reader holds its lock on the file: the writer cannot leave WAL
    // (and delete the -wal file) under it.
    let e = db.query_bytes("PRAGMA journal_mode=TRUNCATE", JsValue::UNDEFINED).expect_err("leaving WAL under a reader");
    assert_eq!(error_parts(&e).0, "SQLITE_BUSY");
    // The writer closes first; the reader keeps the storage until it closes too.
    db.close().unwrap();
    assert_eq!(json(&mut reader, "SELECT count(*) AS n FROM t"), r#"[{"n":2}]"#);
    reader.close().unwrap();
    let mut again = open_opfs(&name).await;
    assert_eq!(json(&mut again, "SELECT count(*) AS n FROM t"), r#"[{"n":2}]"#);
    again.close().unwrap();
}
