//! Small facts about SQL text that need no parser: is what is left after a
//! statement empty, does a statement control the transaction or change the
//! schema, and is the text too long to take.

use super::{Error, Result};

/// Longest SQL text one call takes, in bytes of UTF-8: 1 MB. SQLite's own
/// default is 10^9, but SQL text is copied into wasm memory, which never
/// shrinks, and a statement holds it several times over (the text, SQLite's
/// copy, its program; 16 MB of SQL grew the worker's memory by 90 MB, and
/// 100 MB crashed the tab). Data belongs in parameters, as SQLite's limits
/// page says of its own million-byte example.
pub const MAX_SQL_BYTES: usize = 1 << 20;

/// Refuses SQL text over [`MAX_SQL_BYTES`] with SQLite's code for it,
/// `SQLITE_TOOBIG`.
pub fn check_length(sql: &str) -> Result<()> {
    if sql.len() <= MAX_SQL_BYTES {
        return Ok(());
    }
    Err(Error::Sqlite {
        errno: 18,
        message: format!(
            "statement too long: the SQL text is over {MAX_SQL_BYTES} bytes; pass values as parameters, or run a long script in parts"
        ),
    })
}

/// Skips whitespace, `;` and comments; returns the rest.
pub fn skip_blank(mut s: &str) -> &str {
    loop {
        let t = s.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
        if let Some(rest) = t.strip_prefix("--") {
            s = rest.find('\n').map_or("", |i| &rest[i + 1..]);
        } else if let Some(rest) = t.strip_prefix("/*") {
            s = rest.find("*/").map_or("", |i| &rest[i + 2..]);
        } else {
            return t;
        }
    }
}

/// Whether the SQL holds nothing but whitespace, `;` and comments.
pub fn is_blank(s: &str) -> bool {
    skip_blank(s).is_empty()
}

/// Whether a statement begins, ends or nests a transaction, or may refuse to
/// run inside one (`VACUUM`, `ATTACH`, some `PRAGMA`s). From such a statement
/// on, a script manages its own transactions: the engine stops wrapping it in
/// a savepoint.
pub fn controls_transaction(stmt: &str) -> bool {
    matches!(
        word(stmt).0.to_ascii_uppercase().as_str(),
        "BEGIN" | "COMMIT" | "END" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" | "VACUUM" | "ATTACH" | "DETACH" | "PRAGMA"
    )
}

/// Whether every statement of `sql` (one, or a script) may run inside a
/// savepoint the engine opens around it: none of them is one that
/// [`controls_transaction`]. Without a parser it errs towards no: the text
/// is cut at every `;`, and each piece is looked at from its start and
/// after each line break and comment end in it, so a `;` inside a string
/// or a comment can only add a false no.
pub fn runs_in_savepoint(sql: &str) -> bool {
    !sql.split(';').any(|piece| {
        let starts = std::iter::once(0)
            .chain(piece.match_indices(['\n']).map(|(i, _)| i + 1))
            .chain(piece.match_indices("*/").map(|(i, _)| i + 2));
        starts.into_iter().any(|at| controls_transaction(&piece[at..]))
    })
}

/// Whether a statement begins or ends the transaction itself: `BEGIN`,
/// `COMMIT`, `END`, or `ROLLBACK` without `TO` (which only undoes to a
/// savepoint). Inside `transaction()` that is the package's to do.
pub fn ends_transaction(stmt: &str) -> bool {
    let (first, rest) = word(stmt);
    match first.to_ascii_uppercase().as_str() {
        "BEGIN" | "COMMIT" | "END" => true,
        "ROLLBACK" => {
            let (mut next, rest) = word(rest);
            if next.eq_ignore_ascii_case("TRANSACTION") {
                next = word(rest).0;
            }
            !next.eq_ignore_ascii_case("TO")
        }
        _ => false,
    }
}

/// Whether a statement is DDL (`CREATE`, `DROP`, `ALTER`): it may change the
/// schema table, whose writes no SQLite hook reports.
pub fn changes_schema(stmt: &str) -> bool {
    matches!(word(stmt).0.to_ascii_uppercase().as_str(), "CREATE" | "DROP" | "ALTER")
}

/// The first word (ASCII letters) after blanks and comments, and the rest.
fn word(s: &str) -> (&str, &str) {
    let s = skip_blank(s);
    s.split_at(s.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(s.len()))
}

/// Whether a statement rolls back (`ROLLBACK`, `ROLLBACK TO x`): values
/// read before it may no longer be the stored ones.
pub fn is_rollback(stmt: &str) -> bool {
    let s = skip_blank(stmt).as_bytes();
    s.len() >= 8
        && s[..8].eq_ignore_ascii_case(b"ROLLBACK")
        && !s.get(8).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// An identifier (table, column, schema name) quoted for SQL: `"a""b"`.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert_eq!(quote_ident("photos"), r#""photos""#);
        assert_eq!(quote_ident(r#"we"ird"#), r#""we""ird""#);
        assert_eq!(quote_ident(""), r#""""#);
    }

    #[test]
    fn blank() {
        for s in ["", "  ", ";", " ; ;\n", "-- hi", "-- hi\n;", "/* x */", "/* x */ -- y\n"] {
            assert!(is_blank(s), "{s:?}");
        }
        for s in ["x", "; SELECT 1", "-- c\nSELECT", "/* a */ b", "/* unterminated"] {
            assert_eq!(is_blank(s), s == "/* unterminated", "{s:?}");
        }
    }

    #[test]
    fn rollbacks() {
        for s in ["ROLLBACK", "rollback to x", " -- c\n Rollback;", "ROLLBACK TRANSACTION"] {
            assert!(is_rollback(s), "{s:?}");
        }
        for s in ["SELECT 1", "ROLLBACKS", "RELEASE x", "", "rollback_log"] {
            assert!(!is_rollback(s), "{s:?}");
        }
    }

    #[test]
    fn transaction_ends() {
        for s in [
            "BEGIN",
            "begin immediate",
            "COMMIT",
            "end transaction",
            " /* c */ Rollback",
            "ROLLBACK;",
            "rollback transaction",
            "ROLLBACK -- to\n",
        ] {
            assert!(ends_transaction(s), "{s:?}");
        }
        for s in [
            "ROLLBACK TO x",
            "rollback transaction to savepoint x",
            "ROLLBACK /* c */ to x",
            "SAVEPOINT a",
            "RELEASE a",
            "SELECT 1",
            "BEGINS",
            "",
        ] {
            assert!(!ends_transaction(s), "{s:?}");
        }
    }

    #[test]
    fn length() {
        assert!(check_length(&"x".repeat(MAX_SQL_BYTES)).is_ok());
        let e = check_length(&"x".repeat(MAX_SQL_BYTES + 1)).unwrap_err();
        assert_eq!((e.code(), e.errno()), ("SQLITE_TOOBIG", Some(18)));
        // Bytes of UTF-8, not characters.
        assert!(check_length(&"é".repeat(MAX_SQL_BYTES / 2 + 1)).is_err());
    }

    #[test]
    fn schema_changes() {
        for s in [
            "CREATE TABLE t(x)",
            "create index i on t(x)",
            " -- c\n DROP TABLE t",
            "/* c */ alter table t add y",
            "DROP VIEW v;",
        ] {
            assert!(changes_schema(s), "{s:?}");
        }
        for s in [
            "SELECT 1",
            "INSERT INTO create_log VALUES (1)",
            "EXPLAIN DROP TABLE t",
            "CREATED",
            "DROPS",
            "",
            "PRAGMA foreign_keys = ON",
        ] {
            assert!(!changes_schema(s), "{s:?}");
        }
    }

    #[test]
    fn savepoint_scripts() {
        for s in [
            "INSERT INTO t VALUES (1)",
            "CREATE TABLE t(x); INSERT INTO t VALUES ('begin')",
            "UPDATE t SET x = 1 -- c",
            "",
        ] {
            assert!(runs_in_savepoint(s), "{s:?}");
        }
        for s in [
            "BEGIN",
            "INSERT INTO t VALUES (1); COMMIT",
            "CREATE TABLE t(x);\nVACUUM",
            "/* a; */ BEGIN",
            "-- x;\nPRAGMA foreign_keys = ON",
            "SELECT 1; ATTACH 'x' AS y",
        ] {
            assert!(!runs_in_savepoint(s), "{s:?}");
        }
    }

    #[test]
    fn transaction_control() {
        for s in [
            "BEGIN",
            "begin immediate",
            " -- c\n COMMIT",
            "END",
            "rollback to x",
            "SAVEPOINT a",
            "vacuum",
            "PRAGMA synchronous=FULL",
        ] {
            assert!(controls_transaction(s), "{s:?}");
        }
        for s in ["SELECT 1", "INSERT INTO begin VALUES(1)", "CREATE TABLE t(x)", ""] {
            assert!(!controls_transaction(s), "{s:?}");
        }
    }
}
