//! What each call returns, byte for byte where the contract fixes the
//! bytes: `execute`, scripts, `query`/`queryBytes` and their fix-ups,
//! `executeBatch`, and the errors of each. Part of the `node` test (main.rs).

use super::*;

#[wasm_bindgen_test]
async fn open_memory_and_close() {
    let mut db = open_mem(1024.0).await;
    assert_eq!(json(&mut db, "SELECT 1 AS one", JsValue::UNDEFINED), r#"[{"one":1}]"#);
    db.close().expect("close");
    db.close().expect("a second close is a no-op");
}

#[wasm_bindgen_test]
async fn open_rejects_unknown_storage() {
    let e = Connection::open("x.db".into(), "indexeddb".into(), 1024.0, JsValue::UNDEFINED, false, JsValue::UNDEFINED)
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

    let r = db.execute_batch(ins, sets(&[num(1.0), num(2.0), num(3.0)]), false).expect("batch");
    assert_eq!(figures(&r), (3.0, 3.0), "changes is the total");

    // A constraint failure in the third set undoes the first two.
    let e = db.execute_batch(ins, sets(&[num(4.0), num(5.0), num(1.0)]), false).expect_err("duplicate in set 3");
    let (code, errno, _) = error_parts(&e);
    assert_eq!((code.as_str(), errno), ("SQLITE_CONSTRAINT_UNIQUE", Some(2067.0)));
    assert_eq!(json_of(&mut db, "SELECT group_concat(x) AS xs FROM b"), r#"[{"xs":"1,2,3"}]"#);

    // A bad value in the second set: RESQ_BAD_PARAM naming the set and parameter.
    let e = db.execute_batch(ins, sets(&[num(6.0), JsValue::UNDEFINED]), false).expect_err("undefined");
    let (code, _, message) = error_parts(&e);
    assert_eq!(code, "RESQ_BAD_PARAM");
    assert!(message.contains("parameter set 2") && message.contains("parameter 1"), "{message}");
    assert_eq!(json_of(&mut db, "SELECT group_concat(x) AS xs FROM b"), r#"[{"xs":"1,2,3"}]"#);

    // Named sets, and the connection is not left inside a transaction.
    let named_sets: Array = [7.0, 8.0].iter().map(|x| named(&[("x", num(*x))])).collect();
    let r = db.execute_batch("INSERT INTO b(x) VALUES (:x)", named_sets.into(), false).expect("named batch");
    assert_eq!(figures(&r), (2.0, 5.0));
    assert_no_transaction(&mut db);
    // Not an array of sets; more than one statement.
    expect_bad_param(db.execute_batch(ins, num(1.0), false), "array");
    expect_bad_param(
        db.execute_batch("INSERT INTO b(x) VALUES (?); SELECT 1", sets(&[num(9.0)]), false),
        "one statement",
    );
    assert_eq!(json_of(&mut db, "SELECT group_concat(x) AS xs FROM b"), r#"[{"xs":"1,2,3,7,8"}]"#);
}

#[wasm_bindgen_test]
async fn execute_batch_in_parts_is_one_batch() {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, "CREATE TABLE b(id INTEGER PRIMARY KEY, x UNIQUE)", JsValue::UNDEFINED);
    let ins = "INSERT INTO b(x) VALUES (?)";
    let sets =
        |xs: &[JsValue]| -> JsValue { xs.iter().map(|x| params(std::slice::from_ref(x))).collect::<Array>().into() };
    let xs = |db: &mut Connection| json_of(db, "SELECT group_concat(x) AS xs FROM b");

    // Three parts: the figures are the whole batch's.
    db.execute_batch(ins, sets(&[num(1.0), num(2.0)]), true).expect("part 1");
    db.execute_batch(ins, sets(&[num(3.0)]), true).expect("part 2");
    let r = db.execute_batch(ins, sets(&[num(4.0), num(5.0)]), false).expect("part 3");
    assert_eq!(figures(&r), (5.0, 5.0), "changes is the total of the parts");
    assert_no_transaction(&mut db);

    // A bad value in the third part's second set is set 5 of the batch,
    // and the parts before it are undone.
    db.execute_batch(ins, sets(&[num(6.0), num(7.0)]), true).expect("part 1");
    db.execute_batch(ins, sets(&[num(8.0)]), true).expect("part 2");
    let e = db.execute_batch(ins, sets(&[num(9.0), JsValue::UNDEFINED]), false).expect_err("undefined");
    let (code, _, message) = error_parts(&e);
    assert_eq!(code, "RESQ_BAD_PARAM");
    assert!(message.starts_with("parameter set 5: parameter 1"), "{message}");
    assert_eq!(xs(&mut db), r#"[{"xs":"1,2,3,4,5"}]"#);
    assert_no_transaction(&mut db);

    // A constraint that fails in a later part undoes the earlier ones too.
    db.execute_batch(ins, sets(&[num(10.0)]), true).expect("part 1");
    let e = db.execute_batch(ins, sets(&[num(1.0)]), true).expect_err("duplicate");
    assert_eq!(error_parts(&e).0, "SQLITE_CONSTRAINT_UNIQUE");
    assert_eq!(xs(&mut db), r#"[{"xs":"1,2,3,4,5"}]"#);
    assert_no_transaction(&mut db);

    // Stopped between parts (the next part's values could not be read).
    db.execute_batch(ins, sets(&[num(11.0)]), true).expect("part 1");
    db.batch_abort();
    db.batch_abort();
    assert_eq!(xs(&mut db), r#"[{"xs":"1,2,3,4,5"}]"#);
    assert_no_transaction(&mut db);

    // The next batch is numbered from its own first set.
    let e = db.execute_batch(ins, sets(&[JsValue::UNDEFINED]), false).expect_err("undefined");
    assert!(error_parts(&e).2.starts_with("parameter set 1: "), "{e:?}");
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
