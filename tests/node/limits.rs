//! What a connection keeps and how far it goes: its statement cache, wasm
//! memory bounded with large values, and the largest value. Part of the
//! `node` test (main.rs).

use super::*;

/// The wasm instance's memory in bytes (it never shrinks).
fn wasm_memory_bytes() -> f64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    memory.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as f64
}

/// Prepared statements a connection keeps (`CACHE_SIZE` in src/worker/cache.rs).
const STATEMENT_CACHE: usize = 64;

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

#[wasm_bindgen_test]
async fn blob_stream_sessions_are_their_callers_own_and_bounded() {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO t VALUES (1, ?)", params(&[bytes(&[5; 64])]));
    let open = |db: &mut Connection, tab: &str| {
        db.blob_stream_open(tab, "t", "data", num(1.0), None, None, false).unwrap()[0] as u32
    };
    let ended = |r: Result<Uint8Array, JsValue>| expect_bad_param(r, "this blob stream has ended");

    // Another caller's session is as unknown to it as an ended one, and
    // its close leaves the session be.
    let a = open(&mut db, "a");
    ended(db.blob_stream_read("b", a, 0.0, 8.0, false));
    db.blob_stream_close("b", a);
    assert_eq!(db.blob_stream_read("a", a, 0.0, 8.0, false).expect("a's own").to_vec(), [5; 8]);
    // Unknown sessions are refused before a buffer of their length is made.
    ended(db.blob_stream_read("a", a + 1000, 0.0, 1e10, false));

    // A caller that leaves takes its sessions with it, and only its own.
    let b = open(&mut db, "b");
    db.blob_streams_close("a");
    ended(db.blob_stream_read("a", a, 8.0, 8.0, false));
    assert_eq!(db.blob_stream_read("b", b, 0.0, 8.0, false).expect("b's own").to_vec(), [5; 8]);

    // Past 256 sessions of all callers, the oldest is forgotten.
    let first = open(&mut db, "c");
    for _ in 0..255 {
        open(&mut db, "c");
    }
    ended(db.blob_stream_read("b", b, 8.0, 8.0, false));
    assert_eq!(db.blob_stream_read("c", first, 0.0, 8.0, false).expect("still kept").to_vec(), [5; 8]);
    open(&mut db, "c");
    ended(db.blob_stream_read("c", first, 8.0, 8.0, false));
}
