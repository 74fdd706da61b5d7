//! Small facts about SQL text that need no parser: is what is left after a
//! statement empty, and does a statement control the transaction.

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
    let s = skip_blank(stmt);
    let word: String = s.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    matches!(
        word.to_ascii_uppercase().as_str(),
        "BEGIN" | "COMMIT" | "END" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" | "VACUUM" | "ATTACH" | "DETACH" | "PRAGMA"
    )
}

/// Whether a statement rolls back (`ROLLBACK`, `ROLLBACK TO x`): values
/// read before it may no longer be the stored ones.
pub fn is_rollback(stmt: &str) -> bool {
    let s = skip_blank(stmt).as_bytes();
    s.len() >= 8 && s[..8].eq_ignore_ascii_case(b"ROLLBACK") && !s.get(8).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
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
    fn transaction_control() {
        for s in ["BEGIN", "begin immediate", " -- c\n COMMIT", "END", "rollback to x", "SAVEPOINT a", "vacuum", "PRAGMA synchronous=FULL"] {
            assert!(controls_transaction(s), "{s:?}");
        }
        for s in ["SELECT 1", "INSERT INTO begin VALUES(1)", "CREATE TABLE t(x)", ""] {
            assert!(!controls_transaction(s), "{s:?}");
        }
    }
}
