//! SQL text and names: the `sql` helpers and `name::check` never panic and agree with a plain restatement of their rule.

use crate::config;
use proptest::prelude::*;
use resq_wasm::codec::{name, sql};

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
    fn database_names_are_checked_without_panics(name in db_name(), storage in prop_oneof![prop::sample::select(vec!["opfs", "idb", "memory", "default"]).prop_map(String::from), "[a-z]{0,7}"]) {
        let got = name::check(&name, &storage);
        if let Err(e) = &got {
            prop_assert_eq!(e.code(), "RESQ_BAD_PARAM");
        }
        let uri = name.len() >= 5 && name.as_bytes()[..5].eq_ignore_ascii_case(b"file:");
        let want = !name.is_empty()
            && !name.contains('\0')
            && !uri
            && match storage.as_str() {
                "memory" => true,
                "opfs" | "idb" | "default" => name != ":memory:",
                _ => false,
            };
        prop_assert_eq!(got.is_ok(), want, "{:?} {:?}: {:?}", name, storage, got);
    }
}
