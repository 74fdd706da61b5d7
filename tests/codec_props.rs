//! Property tests of the pure core: the decoders and the JSON encoder, fed
//! inputs no table test thinks of. `cargo fuzz` needs a nightly toolchain;
//! proptest runs on stable, natively, inside `cargo test`.
//!
//! - The `queryBytes` encoder always writes valid UTF-8 and valid JSON (RFC
//!   8259, checked by the strict parser below) that reads back to the cells
//!   written: integers and reals exactly, text with each invalid UTF-8
//!   sequence as U+FFFD, BLOBs as base64 of their bytes.
//! - `params::plan`, `value::blob_range`, `name::check` and the `sql`
//!   helpers never panic, and agree with a plain restatement of their rule.
//!
//! Cases per property are set so the whole native `cargo test` stays quick;
//! `PROPTEST_CASES=100000 cargo test --test codec_props` runs more, and
//! `PROPTEST_RNG_SEED=<n>` repeats a run.
#![cfg(not(target_arch = "wasm32"))]

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use resq_wasm::codec::json::{encoded_key, JsonWriter};
use resq_wasm::codec::params::{plan, Supplied};
use resq_wasm::codec::value::blob_range;
use resq_wasm::codec::{name, sql, Error};

/// Cases for one property; `PROPTEST_CASES` overrides the default.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(cases);
    // Counterexamples found are kept as table cases in the modules' own
    // tests, not as regression files.
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}

// ------------------------------------------------------ a strict JSON parser

/// A parsed JSON value; numbers keep their text, so nothing is rounded.
#[derive(Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in order, duplicates kept (the encoder may write `{"a":1,"a":2}`).
    Object(Vec<(String, Json)>),
}

/// Parses exactly one JSON text (RFC 8259): no trailing bytes, no control
/// characters in strings, only the escapes the RFC lists, no lone surrogates.
fn parse_json(bytes: &[u8]) -> Result<Json, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut p = Parser { s: text.as_bytes(), at: 0 };
    let v = p.value(0)?;
    p.blank();
    if p.at != p.s.len() {
        return Err(format!("trailing bytes at {}", p.at));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at {}", b as char, self.at))
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Result<Json, String> {
        if self.s[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(v)
        } else {
            Err(format!("bad literal at {}", self.at))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > 64 {
            return Err("nested too deep".into());
        }
        self.blank();
        match self.peek() {
            Some(b'n') => self.literal("null", Json::Null),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'"') => self.string().map(Json::String),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.blank();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.blank();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(format!("expected , or ] at {}", self.at)),
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.blank();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    self.blank();
                    let k = self.string()?;
                    self.blank();
                    self.eat(b':')?;
                    members.push((k, self.value(depth + 1)?));
                    self.blank();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Json::Object(members));
                        }
                        _ => return Err(format!("expected , or }} at {}", self.at)),
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(format!("no value at {}", self.at)),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Result<Json, String> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(format!("bad number at {start}")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return Err(format!("no digits after . at {start}"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(format!("no exponent digits at {start}"));
            }
        }
        Ok(Json::Number(String::from_utf8(self.s[start..self.at].to_vec()).expect("ASCII")))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.at..self.at + 4).ok_or("short \\u escape")?;
        let h = std::str::from_utf8(h).map_err(|_| "bad \\u escape")?;
        let v = u32::from_str_radix(h, 16).map_err(|_| format!("bad \\u escape {h:?}"))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let b = self.peek().ok_or("unterminated string")?;
            self.at += 1;
            match b {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                0x00..=0x1f => return Err(format!("control byte {b:#04x} in a string at {}", self.at - 1)),
                b'\\' => {
                    let e = self.peek().ok_or("unterminated escape")?;
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) {
                                if !self.s[self.at..].starts_with(b"\\u") {
                                    return Err("lone high surrogate".into());
                                }
                                self.at += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err("bad low surrogate".into());
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            char::from_u32(code).ok_or("lone low surrogate")?
                        }
                        _ => return Err(format!("bad escape \\{}", e as char)),
                    };
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => out.push(b),
            }
        }
    }
}

#[test]
fn the_parser_is_strict() {
    for ok in [&b"[]"[..], b"[{}]", b" [ { \"a\" : -0.5e+3 , \"a\":null } ] ", b"\"\\ud83d\\ude00\\/\"", b"1e999"] {
        assert!(parse_json(ok).is_ok(), "{}", String::from_utf8_lossy(ok));
    }
    for bad in [
        &b"[1,]"[..],
        b"[01]",
        b"[1.]",
        b"[.5]",
        b"[+1]",
        b"[1e]",
        b"\"a\x01\"",
        b"\"\\x\"",
        b"\"\\ud800\"",
        b"\"\\udc00\"",
        b"[] []",
        b"\"\xff\"",
        b"{\"a\"}",
        b"{1:2}",
        b"[NaN]",
    ] {
        assert!(parse_json(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

// ------------------------------------------------------------ the encoder

/// One cell as the engine hands it to the writer.
#[derive(Debug, Clone)]
enum Cell {
    Null,
    Integer(i64),
    /// An integer that `query()` turns into a `bigint`: digits in a string.
    IntegerAsString(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

/// Bytes that reach the tricky paths: every escape, invalid UTF-8, U+2028.
fn tricky_bytes() -> impl Strategy<Value = Vec<u8>> {
    let pieces: Vec<&'static [u8]> = vec![
        b"\"",
        b"\\",
        b"\n",
        b"\r",
        b"\t",
        b"\x08",
        b"\x0c",
        b"\x00",
        b"\x1f",
        b"\x7f",
        b"a",
        b"/",
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xf0\x9f\x98",
        b"\x80",
        "é".as_bytes(),
        "\u{2028}".as_bytes(),
        "😀".as_bytes(),
        b"\xf4\x90\x80\x80",
        b"\xc0\xaf",
    ];
    prop::collection::vec(prop::sample::select(pieces), 0..24).prop_map(|v| v.concat())
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::collection::vec(any::<u8>(), 0..48), any::<String>().prop_map(String::into_bytes), tricky_bytes(),]
}

fn cell() -> impl Strategy<Value = Cell> {
    prop_oneof![
        Just(Cell::Null),
        any::<i64>().prop_map(Cell::Integer),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just((1 << 53) + 1), any::<i64>()].prop_map(Cell::IntegerAsString),
        prop::num::f64::ANY.prop_map(Cell::Real),
        bytes().prop_map(Cell::Text),
        bytes().prop_map(Cell::Blob),
    ]
}

/// Rows of (column name, cell); names may repeat within a row.
fn rows() -> impl Strategy<Value = Vec<Vec<(Vec<u8>, Cell)>>> {
    prop::collection::vec(prop::collection::vec((bytes(), cell()), 0..6), 0..5)
}

/// Writes `rows` as `queryBytes` does, alternating the two key paths.
fn encode(w: &mut JsonWriter, rows: &[Vec<(Vec<u8>, Cell)>]) {
    w.begin_rows();
    for row in rows {
        w.begin_row();
        for (i, (k, c)) in row.iter().enumerate() {
            if i % 2 == 0 {
                w.key(k);
            } else {
                w.encoded_key(&encoded_key(k));
            }
            match c {
                Cell::Null => w.null(),
                Cell::Integer(i) => w.integer(*i),
                Cell::IntegerAsString(i) => w.integer_as_string(*i),
                Cell::Real(f) => w.real(*f),
                Cell::Text(b) => w.text(b),
                Cell::Blob(b) => w.blob(b),
            }
        }
        w.end_row();
    }
    w.end_rows();
}

/// Whether `got` is what `c` must read back as.
fn reads_back(c: &Cell, got: &Json) -> Result<(), String> {
    let ok = match (c, got) {
        (Cell::Null, Json::Null) => true,
        (Cell::Integer(i), Json::Number(s)) => s.parse::<i64>() == Ok(*i),
        (Cell::IntegerAsString(i), Json::String(s)) => s.parse::<i64>() == Ok(*i),
        (Cell::Real(f), Json::Null) => f.is_nan(),
        // `1e999` and `-1e999` read back as ±Infinity.
        (Cell::Real(f), Json::Number(s)) => s.parse::<f64>().is_ok_and(|g| g.to_bits() == f.to_bits()),
        (Cell::Text(b), Json::String(s)) => *s == String::from_utf8_lossy(b),
        (Cell::Blob(b), Json::String(s)) => STANDARD.decode(s).is_ok_and(|d| d == *b),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{c:?} came back as {got:?}"))
    }
}

proptest! {
    #![proptest_config(config(600))]

    /// Valid JSON that reads back to the rows, and the same bytes from a
    /// writer reused after another result as from a fresh one.
    #[test]
    fn json_is_valid_and_round_trips(earlier in rows(), rows in rows()) {
        let mut w = JsonWriter::default();
        encode(&mut w, &earlier);
        encode(&mut w, &rows);
        let mut fresh = JsonWriter::default();
        encode(&mut fresh, &rows);
        prop_assert_eq!(w.as_bytes(), fresh.as_bytes());
        prop_assert_eq!(w.rows(), rows.len());

        let parsed = parse_json(w.as_bytes()).map_err(|e| TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(w.as_bytes()))))?;
        let Json::Array(got) = parsed else { return Err(TestCaseError::fail("not an array")) };
        prop_assert_eq!(got.len(), rows.len());
        for (row, got) in rows.iter().zip(&got) {
            let Json::Object(members) = got else { return Err(TestCaseError::fail("a row is not an object")) };
            prop_assert_eq!(members.len(), row.len());
            for ((k, c), (gk, gv)) in row.iter().zip(members) {
                prop_assert_eq!(gk, &String::from_utf8_lossy(k));
                reads_back(c, gv).map_err(TestCaseError::fail)?;
            }
        }
    }
}

// ------------------------------------------------------ parameters, ranges

/// Parameter names as SQLite reports them, and object keys: close to each
/// other often, so matches and near-misses both happen.
fn param_name() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        "[:@$?][a-c]{0,2}".prop_map(Some),
        "[:@$]?[a-cé]{0,2}".prop_map(Some),
        any::<String>().prop_map(Some),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof!["[a-c]{0,2}", "[a-cé:@$]{0,3}", any::<String>()]
}

#[derive(Debug, Clone)]
enum Shape {
    None,
    Positional(usize),
    Named(Vec<String>),
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::None),
        (0usize..12).prop_map(Shape::Positional),
        prop::collection::vec(key(), 0..6).prop_map(Shape::Named)
    ]
}

proptest! {
    #![proptest_config(config(3000))]

    /// `plan` never panics; it fails only with RESQ_BAD_PARAM; a plan it
    /// returns gives every SQL parameter a value that exists, the right one.
    #[test]
    fn params_plan_is_total_and_right(names in prop::collection::vec(param_name(), 0..8), shape in shape()) {
        let supplied = match &shape {
            Shape::None => Supplied::None,
            Shape::Positional(n) => Supplied::Positional(*n),
            Shape::Named(keys) => Supplied::Named(keys),
        };
        match plan(&names, supplied) {
            Err(e) => prop_assert!(matches!(e, Error::BadParam(_)), "{:?}", e),
            Ok(slots) => {
                prop_assert_eq!(slots.len(), names.len());
                match &shape {
                    Shape::None => prop_assert!(names.is_empty()),
                    Shape::Positional(n) => {
                        prop_assert_eq!(*n, names.len());
                        for (i, s) in slots.iter().enumerate() {
                            prop_assert_eq!(s.value, i);
                        }
                    }
                    Shape::Named(keys) => {
                        for (name, s) in names.iter().zip(&slots) {
                            let name = name.as_deref().unwrap_or("");
                            prop_assert!(name.starts_with([':', '@', '$']));
                            prop_assert_eq!(&keys[s.value], &name[1..]);
                            prop_assert!(s.label.describe(keys).ends_with(&keys[s.value]));
                        }
                        for k in 0..keys.len() {
                            prop_assert!(slots.iter().any(|s| s.value == k), "key {} unused", k);
                        }
                    }
                }
            }
        }
    }
}

/// `blob_range`'s rule, stated with exact integers: offset, then length,
/// each a whole number (else RESQ_BAD_PARAM) within the value (else
/// RESQ_RANGE); the length defaults to the rest of the value.
fn range_rule(size: u64, offset: Option<f64>, length: Option<f64>) -> Result<(u64, u64), &'static str> {
    const TWO_64: f64 = 18446744073709551616.0;
    let whole = |v: f64| v.is_finite() && v.fract() == 0.0;
    let o = offset.unwrap_or(0.0);
    if !whole(o) {
        return Err("RESQ_BAD_PARAM");
    }
    if !(0.0..TWO_64).contains(&o) || o as u64 > size {
        return Err("RESQ_RANGE");
    }
    let o = o as u64;
    let l = match length {
        None => size - o,
        Some(l) if !whole(l) => return Err("RESQ_BAD_PARAM"),
        Some(l) if !(0.0..TWO_64).contains(&l) => return Err("RESQ_RANGE"),
        Some(l) => l as u64,
    };
    match o.checked_add(l) {
        Some(end) if end <= size => Ok((o, l)),
        _ => Err("RESQ_RANGE"),
    }
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..64, 0u64..=(i32::MAX as u64), (1u64 << 53) - 4..(1u64 << 53) + 16, any::<u64>(), Just(u64::MAX)]
}

/// Offsets and lengths: near the size, small, and every kind of double.
fn bound(size: u64) -> impl Strategy<Value = Option<f64>> {
    let s = size as f64;
    prop_oneof![
        Just(None),
        (-3i64..4).prop_map(move |d| Some(s + d as f64)),
        (-2i64..6).prop_map(|n| Some(n as f64)),
        Just(Some(-0.0)),
        Just(Some(1.5)),
        Just(Some(f64::NAN)),
        Just(Some(f64::INFINITY)),
        Just(Some(18446744073709551616.0)),
        prop::num::f64::ANY.prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(config(4000))]

    /// `blob_range` never panics, agrees with the exact rule, and what it
    /// returns lies within the value.
    #[test]
    fn blob_range_stays_within_the_value((size, offset, length) in size().prop_flat_map(|n| (Just(n), bound(n), bound(n)))) {
        let got = blob_range(size, offset, length);
        if let Ok((o, l)) = got {
            prop_assert!(o.checked_add(l).is_some_and(|end| end <= size), "({}, {}) of {}", o, l, size);
        }
        prop_assert_eq!(got.map_err(|e| e.code()), range_rule(size, offset, length));
    }
}

// ---------------------------------------------------------- SQL text, names

/// SQL-ish text: comments, blanks, transaction words, multibyte characters
/// next to the places the helpers slice.
fn sql_text() -> impl Strategy<Value = String> {
    let pieces = vec![
        "--",
        "/*",
        "*/",
        "\n",
        "\r",
        ";",
        " ",
        "\t",
        "\u{a0}",
        "\u{2028}",
        "\u{3000}",
        "ROLLBACK",
        "rollback",
        "RollBack",
        "BEGIN",
        "COMMIT",
        "END",
        "SAVEPOINT",
        "PRAGMA",
        "TO",
        "to",
        "TRANSACTION",
        "_",
        "x",
        "1",
        "é",
        "ß",
        "İ",
        "\u{212a}",
        "😀",
        "\0",
        "'",
        "\"",
    ];
    prop_oneof![prop::collection::vec(prop::sample::select(pieces), 0..12).prop_map(|v| v.concat()), any::<String>(),]
}

fn db_name() -> impl Strategy<Value = String> {
    let pieces = vec!["file:", "FiLe:", "file", ":memory:", ":", "é", "ф", "😀", "\0", "a", ".db", "?mode=memory", " "];
    prop_oneof![prop::collection::vec(prop::sample::select(pieces), 0..5).prop_map(|v| v.concat()), any::<String>(),]
}

proptest! {
    #![proptest_config(config(4000))]

    /// The SQL helpers never panic and agree with each other: `skip_blank`
    /// returns a suffix that is a fixed point, `is_blank` is its emptiness,
    /// and a rollback, or a statement that ends the transaction, is a
    /// transaction-control statement.
    #[test]
    fn sql_helpers_are_total_and_consistent(s in sql_text()) {
        let rest = sql::skip_blank(&s);
        prop_assert!(s.ends_with(rest));
        prop_assert_eq!(sql::skip_blank(rest), rest);
        prop_assert_eq!(sql::is_blank(&s), rest.is_empty());
        prop_assert_eq!(sql::controls_transaction(&s), sql::controls_transaction(rest));
        prop_assert_eq!(sql::is_rollback(&s), sql::is_rollback(rest));
        if sql::is_rollback(&s) {
            prop_assert!(sql::controls_transaction(&s));
        }
        prop_assert_eq!(sql::ends_transaction(&s), sql::ends_transaction(rest));
        if sql::ends_transaction(&s) {
            prop_assert!(sql::controls_transaction(&s));
        }
        prop_assert_eq!(sql::check_length(&s).is_ok(), s.len() <= sql::MAX_SQL_BYTES);
        let quoted = sql::quote_ident(&s);
        prop_assert_eq!(quoted[1..quoted.len() - 1].replace("\"\"", "\""), s);
    }

    /// `name::check` never panics, fails only with RESQ_BAD_PARAM, and
    /// takes exactly the names API.md says it takes.
    #[test]
    fn database_names_are_checked_without_panics(name in db_name(), storage in prop_oneof![Just("opfs".to_string()), Just("memory".to_string()), "[a-z]{0,6}"]) {
        let got = name::check(&name, &storage);
        if let Err(e) = &got {
            prop_assert_eq!(e.code(), "RESQ_BAD_PARAM");
        }
        let uri = name.len() >= 5 && name.as_bytes()[..5].eq_ignore_ascii_case(b"file:");
        let want = !name.is_empty()
            && !name.contains('\0')
            && !uri
            && (storage == "memory" || (storage == "opfs" && name != ":memory:"));
        prop_assert_eq!(got.is_ok(), want, "{:?} {:?}: {:?}", name, storage, got);
    }
}
