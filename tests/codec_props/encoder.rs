//! The `queryBytes` encoder: valid UTF-8 and JSON that reads back to the cells written.

use crate::config;
use crate::strict_json::{parse_json, Json};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use proptest::prelude::*;
use resq_wasm::codec::json::{encoded_key, JsonWriter};

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
