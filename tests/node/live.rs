//! Live queries in the engine, in Node: the tables a commit changed
//! (`take_changed`), the tables a query reads (`query_tables`), and the
//! answers of `watch_query`. Part of the `node` test (main.rs).

use super::*;

/// A JS array of strings as a `Vec`.
fn strings(a: &Array) -> Vec<String> {
    a.iter().map(|s| s.as_string().expect("a string")).collect()
}

fn taken(db: &mut Connection) -> Vec<String> {
    db.take_changed()
}

fn tables(db: &mut Connection, sql: &str) -> Vec<String> {
    db.query_tables(sql).unwrap_or_else(|e| panic!("queryTables {sql:?} failed: {}", describe(&e)))
}

/// A new in-memory database with this schema, its DDL already taken.
async fn open_with(schema: &str) -> Connection {
    let mut db = open_mem(1024.0).await;
    exec(&mut db, schema, JsValue::UNDEFINED);
    db.take_changed();
    db
}

#[wasm_bindgen_test]
async fn take_changed_names_committed_tables_once() {
    let mut db =
        open_with("CREATE TABLE t(id INTEGER PRIMARY KEY, x); CREATE TABLE Photos(id INTEGER PRIMARY KEY, x)").await;
    assert_eq!(taken(&mut db), Vec::<String>::new());
    exec(&mut db, "INSERT INTO t(x) VALUES (?)", params(&[num(1.0)]));
    assert_eq!(taken(&mut db), ["t"]);
    assert_eq!(taken(&mut db), Vec::<String>::new(), "taken once");
    exec(&mut db, "UPDATE t SET x = 2", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), ["t"]);
    exec(&mut db, "DELETE FROM t WHERE id = 1", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), ["t"]);
    // Lowercased, sorted, each once; nothing until the commit.
    exec(&mut db, "BEGIN", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO PHOTOS(x) VALUES (1)", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO t(x) VALUES (1), (2)", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO photos(x) VALUES (2)", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), Vec::<String>::new(), "not committed yet");
    exec(&mut db, "COMMIT", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), ["photos", "t"]);
    // Reads and statements that change no row name nothing.
    json_of(&mut db, "SELECT * FROM t");
    exec(&mut db, "UPDATE t SET x = 0 WHERE id = 99", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), Vec::<String>::new());
    // Batches and scripts commit like the rest.
    let sets: Array = [1.0, 2.0].iter().map(|x| params(&[num(*x)])).collect();
    db.execute_batch("INSERT INTO t(x) VALUES (?)", sets.into(), false).expect("batch");
    assert_eq!(taken(&mut db), ["t"]);
    exec(&mut db, "INSERT INTO photos(x) VALUES (3); DELETE FROM t WHERE x = 1", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), ["photos", "t"]);
}

#[wasm_bindgen_test]
async fn take_changed_leaves_out_what_rolled_back() {
    let mut db = open_with("CREATE TABLE t(id INTEGER PRIMARY KEY, x UNIQUE); CREATE TABLE u(x); CREATE TABLE z(x); INSERT INTO t VALUES (1, 1)").await;
    // Nothing is named before a commit anyway: the next commit, of `z`
    // only, shows whether anything undone was left pending.
    let next_commit = |db: &mut Connection, what: &str| {
        assert_eq!(taken(db), Vec::<String>::new(), "{what}");
        exec(db, "INSERT INTO z VALUES (1)", JsValue::UNDEFINED);
        assert_eq!(taken(db), ["z"], "{what}: then a commit of z");
    };
    exec(&mut db, "BEGIN; INSERT INTO t(x) VALUES (2); INSERT INTO u VALUES (1); ROLLBACK", JsValue::UNDEFINED);
    next_commit(&mut db, "ROLLBACK");
    exec(&mut db, "BEGIN", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO u VALUES (1)", JsValue::UNDEFINED);
    exec(&mut db, "ROLLBACK", JsValue::UNDEFINED);
    next_commit(&mut db, "ROLLBACK as a call of its own");
    // In autocommit mode, a statement that fails after changing a row: the
    // row (3) went in before the duplicate (1) failed.
    assert!(db.execute("INSERT INTO t(x) VALUES (3), (1)", JsValue::UNDEFINED).is_err());
    next_commit(&mut db, "failed statement");
    // A batch and a script that fail are undone, in autocommit mode and in
    // a transaction that then commits.
    let sets: Array = [4.0, 1.0].iter().map(|x| params(&[num(*x)])).collect();
    assert!(db.execute_batch("INSERT INTO t(x) VALUES (?)", sets.clone().into(), false).is_err());
    next_commit(&mut db, "failed batch");
    let part: Array = [7.0].iter().map(|x| params(&[num(*x)])).collect();
    db.execute_batch("INSERT INTO t(x) VALUES (?)", part.clone().into(), true).expect("part 1");
    assert!(db.execute_batch("INSERT INTO t(x) VALUES (?)", sets.clone().into(), false).is_err());
    next_commit(&mut db, "failed batch in parts");
    db.execute_batch("INSERT INTO t(x) VALUES (?)", part.into(), true).expect("part 1");
    db.batch_abort();
    next_commit(&mut db, "batch stopped between parts");
    assert!(db.execute("INSERT INTO u VALUES (1); INSERT INTO t(x) VALUES (1)", JsValue::UNDEFINED).is_err());
    next_commit(&mut db, "failed script");
    exec(&mut db, "BEGIN", JsValue::UNDEFINED);
    assert!(db.execute_batch("INSERT INTO t(x) VALUES (?)", sets.into(), false).is_err());
    assert!(db.execute("INSERT INTO u VALUES (1); INSERT INTO t(x) VALUES (1)", JsValue::UNDEFINED).is_err());
    exec(&mut db, "COMMIT", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), Vec::<String>::new(), "failed batch and script in a committed transaction");
    // What did commit is still named: INSERT OR FAIL keeps the rows before
    // the failing one.
    assert!(db.execute("INSERT OR FAIL INTO t(x) VALUES (5), (1)", JsValue::UNDEFINED).is_err());
    assert_eq!(taken(&mut db), ["t"]);
}

#[wasm_bindgen_test]
async fn take_changed_sees_every_kind_of_row_change() {
    let mut db = open_with(concat!(
        "PRAGMA foreign_keys = ON;",
        "CREATE TABLE kv(k TEXT PRIMARY KEY, v) WITHOUT ROWID;",
        "CREATE TABLE t(id INTEGER PRIMARY KEY, x UNIQUE);",
        "CREATE TABLE log(what);",
        "CREATE TRIGGER t_log AFTER INSERT ON t BEGIN INSERT INTO log VALUES ('insert'); END;",
        "CREATE TABLE parent(id INTEGER PRIMARY KEY);",
        "CREATE TABLE child(id INTEGER PRIMARY KEY, parent REFERENCES parent(id) ON DELETE CASCADE);",
        "INSERT INTO parent VALUES (1); INSERT INTO child VALUES (1, 1);",
    ))
    .await;
    // Each statement in turn, and the tables it must name; every case runs,
    // and the wrong ones are listed together.
    let cases: &[(&str, &[&str])] = &[
        ("INSERT INTO kv VALUES ('a', 1), ('b', 2)", &["kv"]),
        ("UPDATE kv SET v = 3 WHERE k = 'a'", &["kv"]),
        // DELETE without WHERE, which SQLite would otherwise do by erasing
        // the table's pages, unseen.
        ("DELETE FROM kv", &["kv"]),
        // A trigger's writes.
        ("INSERT INTO t(x) VALUES (1), (2)", &["log", "t"]),
        ("DELETE FROM log", &["log"]),
        ("DELETE FROM t", &["t"]),
        // UPSERT, inserting and then updating.
        ("INSERT INTO kv VALUES ('a', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1", &["kv"]),
        ("INSERT INTO kv VALUES ('a', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1", &["kv"]),
        // REPLACE deleting the row in its way (checked below).
        ("INSERT INTO t VALUES (1, 1), (2, 2)", &["log", "t"]),
        ("REPLACE INTO t VALUES (3, 1)", &["log", "t"]),
        // A foreign key's ON DELETE CASCADE (checked below).
        ("DELETE FROM parent WHERE id = 1", &["child", "parent"]),
        // Tables outside `main` are not named.
        ("CREATE TEMP TABLE scratch(x); INSERT INTO scratch VALUES (1)", &["sqlite_schema"]),
        ("INSERT INTO scratch VALUES (2)", &[]),
    ];
    let mut wrong = Vec::new();
    for (sql, want) in cases {
        exec(&mut db, sql, JsValue::UNDEFINED);
        let got = taken(&mut db);
        if got != *want {
            wrong.push(format!("{sql}: {got:?}, not {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(json_of(&mut db, "SELECT id FROM t ORDER BY id"), r#"[{"id":2},{"id":3}]"#, "REPLACE deleted row 1");
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM child"), "0", "the cascade deleted the child");
}

#[wasm_bindgen_test]
async fn take_changed_through_savepoints() {
    let mut db = open_with("CREATE TABLE t(x); CREATE TABLE u(x)").await;
    // A savepoint outside a transaction is one: its RELEASE commits.
    exec(&mut db, "SAVEPOINT a", JsValue::UNDEFINED);
    exec(&mut db, "INSERT INTO t VALUES (1)", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), Vec::<String>::new());
    exec(&mut db, "RELEASE a", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), ["t"]);
    // Released inside a transaction: named when the transaction commits.
    exec(&mut db, "BEGIN; SAVEPOINT a; INSERT INTO t VALUES (2); RELEASE a", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), Vec::<String>::new());
    exec(&mut db, "COMMIT", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), ["t"]);
    // A savepoint rolled back, then the transaction rolled back: nothing,
    // then or at the next commit.
    exec(
        &mut db,
        "BEGIN; SAVEPOINT a; INSERT INTO u VALUES (1); ROLLBACK TO a; RELEASE a; ROLLBACK",
        JsValue::UNDEFINED,
    );
    exec(&mut db, "INSERT INTO t VALUES (0)", JsValue::UNDEFINED);
    assert_eq!(taken(&mut db), ["t"]);
    // ROLLBACK TO a savepoint of the caller's own fires no hook: its table
    // stays pending and is named though no row of it changed in the end (a
    // spurious name, documented; the watcher's hash comparison absorbs it).
    exec(
        &mut db,
        "BEGIN; INSERT INTO t VALUES (3); SAVEPOINT a; INSERT INTO u VALUES (1); ROLLBACK TO a; COMMIT",
        JsValue::UNDEFINED,
    );
    assert_eq!(taken(&mut db), ["t", "u"]);
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM u"), "0");
}

#[wasm_bindgen_test]
async fn take_changed_names_sqlite_schema_for_ddl() {
    let mut db = open_with("CREATE TABLE t(x); INSERT INTO t VALUES (1)").await;
    let check = |db: &mut Connection, sql: &str, want: &[&str]| {
        exec(db, sql, JsValue::UNDEFINED);
        assert_eq!(taken(db), want, "{sql}");
    };
    check(&mut db, "CREATE TABLE d(x)", &["sqlite_schema"]);
    check(&mut db, "ALTER TABLE t ADD COLUMN y", &["sqlite_schema"]);
    check(&mut db, "CREATE INDEX ti ON t(x)", &["sqlite_schema"]);
    // DROP TABLE erases the table's pages: no row hook fires.
    check(&mut db, "DROP TABLE t", &["sqlite_schema"]);
    // Through query() too, and with rows: both named.
    db.query("CREATE TABLE q AS SELECT 1 AS x", JsValue::UNDEFINED).expect("query runs DDL");
    assert_eq!(taken(&mut db), ["sqlite_schema"]);
    check(&mut db, "BEGIN; CREATE TABLE r(x); INSERT INTO d VALUES (1); COMMIT", &["d", "sqlite_schema"]);
    // Undone DDL is not named, then or at the next commit.
    check(&mut db, "BEGIN; DROP TABLE d; ROLLBACK", &[]);
    check(&mut db, "INSERT INTO d VALUES (2)", &["d"]);
    assert!(db.execute("DROP TABLE q; DROP TABLE nope", JsValue::UNDEFINED).is_err());
    check(&mut db, "INSERT INTO d VALUES (3)", &["d"]);
    assert_eq!(json_of(&mut db, "SELECT name FROM sqlite_schema WHERE name = 'q'"), r#"[{"name":"q"}]"#);
}

/// A `Blob` of `size` zero bytes, for the streaming `execute`.
fn zero_blob(size: usize) -> web_sys::Blob {
    let parts: Array = [Uint8Array::new_with_length(size as u32)].iter().collect();
    web_sys::Blob::new_with_u8_array_sequence(&parts).expect("a Blob")
}

#[wasm_bindgen_test]
async fn take_changed_names_a_streamed_write_once_it_commits() {
    const SIZE: usize = resq_wasm::codec::stream::STREAM_LIMIT as usize;
    let mut db = open_with("CREATE TABLE media(id INTEGER PRIMARY KEY, data BLOB)").await;
    let chunk: Vec<u8> = (0..SIZE / 4).map(|i| (i % 251) as u8).collect();
    let write = |db: &mut Connection, ok: bool| {
        let r = exec(db, "INSERT INTO media(data) VALUES (?)", params(&[zero_blob(SIZE).into()]));
        assert_eq!(get(&r, "streams").dyn_into::<Array>().expect("the value streams").length(), 1);
        assert_eq!(taken(db), Vec::<String>::new(), "its savepoint is open");
        for k in 0..4 {
            db.stream_write(0, (k * chunk.len()) as f64, &chunk).expect("streamWrite");
        }
        db.stream_end(ok).expect("streamEnd");
    };
    write(&mut db, true);
    assert_eq!(taken(&mut db), ["media"]);
    assert_eq!(scalar(&mut db, "SELECT length(data) AS n FROM media"), SIZE.to_string());
    write(&mut db, false);
    assert_eq!(taken(&mut db), Vec::<String>::new(), "a streamed write that did not end well is undone");
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM media"), "1");
}

#[wasm_bindgen_test]
async fn blob_stream_expires_on_delete_without_where() {
    // `DELETE FROM t` without WHERE deletes row by row while a pre-update
    // hook is registered, so the update hook sees the stream's row go.
    let mut db = open_with("CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)").await;
    exec(&mut db, "INSERT INTO t VALUES (1, ?)", params(&[bytes(&[1; 64])]));
    let s = db.blob_stream_open("tab", "t", "data", num(1.0), None, None, false).expect("blobStreamOpen");
    assert_eq!(db.blob_stream_read("tab", s[0] as u32, 0.0, 32.0, false).expect("first half").to_vec(), [1; 32]);
    exec(&mut db, "DELETE FROM t", JsValue::UNDEFINED);
    let e = db.blob_stream_read("tab", s[0] as u32, 32.0, 32.0, false).expect_err("the value it began on is gone");
    let (code, errno, _) = error_parts(&e);
    assert_eq!((code.as_str(), errno), ("SQLITE_ABORT", Some(4.0)));
}

#[wasm_bindgen_test]
async fn blob_stream_expires_when_a_failed_statement_rolls_back() {
    // No ROLLBACK statement: INSERT OR ROLLBACK ends the transaction itself,
    // and only the rollback hook tells the session, whose value goes back
    // from 2s to 1s under it.
    let mut db = open_with("CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB)").await;
    exec(&mut db, "INSERT INTO t VALUES (1, ?)", params(&[bytes(&[1; 64])]));
    exec(&mut db, "BEGIN", JsValue::UNDEFINED);
    exec(&mut db, "UPDATE t SET data = ? WHERE id = 1", params(&[bytes(&[2; 64])]));
    let s = db.blob_stream_open("tab", "t", "data", num(1.0), None, None, false).expect("blobStreamOpen");
    assert_eq!(db.blob_stream_read("tab", s[0] as u32, 0.0, 32.0, false).expect("first half").to_vec(), [2; 32]);
    assert!(db.execute("INSERT OR ROLLBACK INTO t VALUES (1, NULL)", JsValue::UNDEFINED).is_err());
    let e =
        db.blob_stream_read("tab", s[0] as u32, 32.0, 32.0, false).expect_err("the value it began on was rolled back");
    assert_eq!(error_parts(&e).0, "SQLITE_ABORT");
    // (Checked last: its ROLLBACK would tell the session too.)
    assert_no_transaction(&mut db);
}

#[wasm_bindgen_test]
async fn query_tables_names_what_a_query_reads() {
    let mut db = open_with(concat!(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, x); CREATE TABLE Photos(id INTEGER PRIMARY KEY, t_id);",
        "CREATE TABLE kv(k PRIMARY KEY, v) WITHOUT ROWID;",
        "CREATE VIEW v AS SELECT t.x, p.id FROM t JOIN photos AS p ON p.t_id = t.id;",
        "CREATE VIEW vv AS SELECT * FROM v JOIN kv ON kv.k = v.x;",
        "CREATE VIRTUAL TABLE ft USING fts5(body);",
        "CREATE TEMP TABLE scratch(x);",
    ))
    .await;
    let none: &[&str] = &[];
    let shadows = ["ft", "ft_config", "ft_content", "ft_data", "ft_docsize", "ft_idx"];
    // Every case runs; the wrong ones are listed together.
    let mut wrong = Vec::new();
    for (sql, want) in [
        ("SELECT * FROM t", &["t"][..]),
        ("select x from T where id = ?", &["t"]),
        ("SELECT count(*) FROM t", &["t"]),
        ("SELECT t.x FROM t JOIN photos p ON p.t_id = t.id", &["photos", "t"]),
        ("SELECT 1 FROM t WHERE id IN (SELECT t_id FROM photos)", &["photos", "t"]),
        ("SELECT (SELECT count(*) FROM kv) AS n", &["kv"]),
        ("WITH c AS (SELECT x FROM t) SELECT * FROM c", &["t"]),
        ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT i FROM n", none),
        ("SELECT * FROM v", &["photos", "t"]),
        ("SELECT count(*) FROM v", &["photos", "t"]),
        ("SELECT * FROM vv", &["kv", "photos", "t"]),
        ("SELECT 1", none),
        ("SELECT * FROM scratch", none),
        ("SELECT * FROM scratch, t", &["t"]),
        ("SELECT name FROM sqlite_schema", &["sqlite_schema"]),
        ("SELECT name FROM sqlite_master", &["sqlite_schema"]),
        ("SELECT * FROM pragma_table_info('t')", none),
        ("SELECT body FROM ft WHERE ft MATCH 'hello'", &shadows),
        ("PRAGMA user_version", none),
    ] {
        let got = tables(&mut db, sql);
        if got != want {
            wrong.push(format!("{sql}: {got:?}, not {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // A statement already in the cache is prepared afresh: the authorizer
    // only speaks while a statement is prepared.
    let sql = "SELECT x FROM t ORDER BY id";
    json_of(&mut db, sql);
    assert_eq!(runs(&mut db, sql), Some(1));
    assert_eq!(tables(&mut db, sql), ["t"]);
    assert_eq!(runs(&mut db, sql), Some(1), "queryTables ran nothing, and left the cached statement alone");
    assert_eq!(runs(&mut db, "SELECT * FROM vv"), None, "nor does it cache its own");
}

#[wasm_bindgen_test]
async fn query_tables_takes_one_read_only_query() {
    let mut db = open_with("CREATE TABLE t(x)").await;
    for sql in [
        "INSERT INTO t VALUES (1)",
        "DELETE FROM t",
        "CREATE TABLE u(x)",
        "WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c",
        "INSERT INTO t VALUES (1) RETURNING x",
        "DELETE FROM t RETURNING *",
        "SELECT 1; SELECT 2",
        "SELECT * FROM t; DELETE FROM t",
        "BEGIN",
        "PRAGMA user_version = 3",
        "",
        " -- nothing\n",
    ] {
        expect_bad_param(db.query_tables(sql), "one query");
    }
    // Nothing ran.
    assert_eq!(
        json_of(&mut db, "SELECT count(*) AS n, (SELECT count(*) FROM sqlite_schema) AS s FROM t"),
        r#"[{"n":0,"s":1}]"#
    );
    assert_no_transaction(&mut db);
    // SQLite's own errors, as other calls give them.
    let e = db.query_tables("SELEC 1").expect_err("syntax error");
    let (code, errno, message) = error_parts(&e);
    assert_eq!((code.as_str(), errno), ("SQLITE_ERROR", Some(1.0)));
    assert!(message.contains("syntax error") && message.contains("SELEC 1"), "{message}");
    let e = db.query_tables("SELECT * FROM missing").expect_err("no such table");
    assert!(error_parts(&e).2.contains("no such table: missing"));
    // The authorizer is gone: later statements are not refused or watched.
    exec(&mut db, "INSERT INTO t VALUES (1)", JsValue::UNDEFINED);
    assert_eq!(scalar(&mut db, "SELECT count(*) AS n FROM t"), "1");
}

/// `watchQuery`: `(hash, value)`, or `None` for `null`.
fn watch(db: &mut Connection, sql: &str, p: JsValue, bytes: bool, previous: &str) -> Option<(String, JsValue)> {
    let r = db
        .watch_query(sql, p, bytes, previous)
        .unwrap_or_else(|e| panic!("watchQuery {sql:?} failed: {}", describe(&e)));
    if r.is_null() {
        return None;
    }
    let hash = get(&r, "hash").as_string().expect("hash is a string");
    assert_eq!(hash.len(), 16, "{hash}");
    assert!(hash.bytes().all(|c| c.is_ascii_hexdigit()), "{hash}");
    Some((hash, get(&r, "value")))
}

/// A `query` result as comparable Rust values: json, then columns, fixups,
/// side and buffers where present.
type RowsParts = (String, Option<Vec<String>>, Option<Vec<f64>>, Option<Vec<u8>>, Option<Vec<Vec<u8>>>);

fn rows_parts(r: &JsValue) -> RowsParts {
    let u8s = |v: JsValue| v.dyn_into::<Uint8Array>().expect("a Uint8Array").to_vec();
    let json = String::from_utf8(u8s(get(r, "json"))).unwrap();
    let columns = has(r, "columns").then(|| strings(&get(r, "columns").dyn_into::<Array>().unwrap()));
    let fixups = has(r, "fixups").then(|| get(r, "fixups").dyn_into::<Float64Array>().unwrap().to_vec());
    let side = has(r, "side").then(|| u8s(get(r, "side")));
    let buffers = has(r, "buffers").then(|| get(r, "buffers").dyn_into::<Array>().unwrap().iter().map(u8s).collect());
    (json, columns, fixups, side, buffers)
}

#[wasm_bindgen_test]
async fn watch_query_bytes_answers_null_while_unchanged() {
    let mut db = open_with("CREATE TABLE t(id INTEGER PRIMARY KEY, x); INSERT INTO t VALUES (1, 'a')").await;
    let sql = "SELECT id, x FROM t WHERE id >= ? ORDER BY id";
    let p = || params(&[num(1.0)]);
    let (h1, value) = watch(&mut db, sql, p(), true, "").expect("a first result");
    let value = value.dyn_into::<Uint8Array>().expect("queryBytes' Uint8Array").to_vec();
    assert_eq!(String::from_utf8(value).unwrap(), json(&mut db, sql, p()));
    assert_eq!(watch(&mut db, sql, p(), true, "").expect("again").0, h1, "the hash is stable");
    assert!(watch(&mut db, sql, p(), true, &h1).is_none(), "unchanged: null");
    // A write that leaves the rows as they were: still null.
    exec(&mut db, "UPDATE t SET x = 'a'", JsValue::UNDEFINED);
    assert!(watch(&mut db, sql, p(), true, &h1).is_none());
    exec(&mut db, "INSERT INTO t VALUES (2, 'b')", JsValue::UNDEFINED);
    let (h2, value) = watch(&mut db, sql, p(), true, &h1).expect("changed");
    assert_ne!(h2, h1);
    assert_eq!(
        String::from_utf8(value.dyn_into::<Uint8Array>().unwrap().to_vec()).unwrap(),
        r#"[{"id":1,"x":"a"},{"id":2,"x":"b"}]"#
    );
    assert!(watch(&mut db, sql, p(), true, &h2).is_none());
    // Other parameters, other rows.
    assert_ne!(watch(&mut db, sql, params(&[num(2.0)]), true, &h2).expect("other rows").0, h2);
    // Errors are the query's.
    expect_bad_param(db.watch_query(sql, params(&[]), true, ""), "1 parameter");
    let e = db.watch_query("SELEC 1", JsValue::UNDEFINED, true, "").expect_err("syntax error");
    assert_eq!(error_parts(&e).0, "SQLITE_ERROR");
}

#[wasm_bindgen_test]
async fn watch_query_rows_hashes_every_part() {
    const THRESHOLD: usize = 8;
    let mut db = open_mem(THRESHOLD as f64).await;
    exec(&mut db, "CREATE TABLE f(id INTEGER PRIMARY KEY, small, big, n)", JsValue::UNDEFINED);
    exec(
        &mut db,
        "INSERT INTO f VALUES (1, ?, ?, ?)",
        params(&[bytes(&[1, 2, 3]), bytes(&[7; 3 * THRESHOLD]), big(i64::MAX)]),
    );
    let sql = "SELECT small, big, n FROM f";
    let (h1, value) = watch(&mut db, sql, JsValue::UNDEFINED, false, "").expect("a first result");
    let want = rows_parts(&db.query(sql, JsValue::UNDEFINED).expect("query"));
    assert_eq!(rows_parts(&value), want, "exactly what query returns");
    assert_eq!(want.4.as_ref().map(Vec::len), Some(1), "with an own buffer");
    assert!(watch(&mut db, sql, JsValue::UNDEFINED, false, &h1).is_none(), "unchanged: null");
    // The form is part of the hash.
    let (hb, _) = watch(&mut db, sql, JsValue::UNDEFINED, true, "").expect("bytes form");
    assert_ne!(hb, h1);
    assert!(watch(&mut db, sql, JsValue::UNDEFINED, true, &h1).is_some());
    // A change in any one part changes the hash: the own buffer's bytes,
    // the side buffer's bytes, the JSON, the own buffers' number, the
    // fix-ups (a small BLOB moved to the next column: the rest the same).
    let mut last = h1;
    for change in [
        "UPDATE f SET big = zeroblob(24)",
        "UPDATE f SET small = x'010204'",
        "UPDATE f SET n = n - 1",
        "UPDATE f SET big = NULL",
        "UPDATE f SET big = small, small = NULL",
    ] {
        exec(&mut db, change, JsValue::UNDEFINED);
        let (h, value) =
            watch(&mut db, sql, JsValue::UNDEFINED, false, &last).unwrap_or_else(|| panic!("{change}: a new result"));
        assert_ne!(h, last, "{change}");
        assert_eq!(rows_parts(&value), rows_parts(&db.query(sql, JsValue::UNDEFINED).unwrap()), "{change}");
        assert!(watch(&mut db, sql, JsValue::UNDEFINED, false, &h).is_none(), "{change}: then null");
        last = h;
    }
    // Without fix-ups: just the JSON, the same bytes as queryBytes', but
    // not the same hash.
    let (h, value) = watch(&mut db, "SELECT id FROM f", JsValue::UNDEFINED, false, "").expect("plain");
    assert_eq!(rows_parts(&value), (r#"[{"id":1}]"#.to_string(), None, None, None, None));
    assert!(watch(&mut db, "SELECT id FROM f", JsValue::UNDEFINED, false, &h).is_none());
    assert_ne!(watch(&mut db, "SELECT id FROM f", JsValue::UNDEFINED, true, "").expect("bytes form").0, h);
}
