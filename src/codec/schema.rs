//! What a table's schema text says about its columns, for streamed values:
//! the columns its CHECK constraints read, and those a partial index's
//! `WHERE` reads.
//!
//! SQLite evaluates both while a streamed value is its placeholder (and
//! again on the zeros it is resized to), never on the bytes written
//! afterwards through blob I/O, and it says nothing about them through the
//! authorizer (they are resolved when the schema is loaded). So the schema
//! text, as `sqlite_schema.sql` keeps it (renames rewrite it), is read here
//! token by token: strings, blob literals and comments are skipped, quoted
//! identifiers unquoted. Every identifier inside the clause counts, a
//! function's name too: a column named like a function is at worst
//! refused when it need not be, never let through.
//!
//! ```
//! use resq_wasm::codec::schema::{check_columns, partial_index_columns};
//! let t = "CREATE TABLE m(id INTEGER PRIMARY KEY, name TEXT CHECK(name <> 'data'), \"Data\" BLOB, CHECK (length([data]) > 100))";
//! assert!(check_columns(t).iter().any(|c| c.eq_ignore_ascii_case("data")));
//! assert!(partial_index_columns("CREATE INDEX i ON m(id) WHERE substr(data, 1, 4) = x'89504E47'").contains(&"data".to_string()));
//! assert!(partial_index_columns("CREATE INDEX i ON m(data)").is_empty());
//! ```

#[derive(Debug, PartialEq)]
enum Token {
    /// A bare word or a quoted identifier, unquoted.
    Name(String),
    Open,
    Close,
    /// A string or blob literal, or any other punctuation.
    Other,
}

/// The tokens of `sql` that matter here; comments and blanks are dropped.
fn tokens(sql: &str) -> Vec<Token> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Text from `start` up to the closing `close` (doubled: an escaped one).
    let quoted = |start: usize, close: u8| -> (String, usize) {
        let mut s = Vec::new();
        let mut j = start;
        while j < b.len() {
            if b[j] == close {
                if close != b']' && b.get(j + 1) == Some(&close) {
                    s.push(close);
                    j += 2;
                    continue;
                }
                return (String::from_utf8_lossy(&s).into_owned(), j + 1);
            }
            s.push(b[j]);
            j += 1;
        }
        (String::from_utf8_lossy(&s).into_owned(), j)
    };
    while i < b.len() {
        let c = b[i];
        match c {
            _ if c.is_ascii_whitespace() => i += 1,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |p| i + p + 1)
            }
            b'/' if b.get(i + 1) == Some(&b'*') => i = sql[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2),
            b'\'' => {
                i = quoted(i + 1, b'\'').1;
                out.push(Token::Other);
            }
            b'x' | b'X' if b.get(i + 1) == Some(&b'\'') => {
                i = quoted(i + 2, b'\'').1;
                out.push(Token::Other);
            }
            b'"' | b'`' | b'[' => {
                let close = if c == b'[' { b']' } else { c };
                let (name, next) = quoted(i + 1, close);
                out.push(Token::Name(name));
                i = next;
            }
            b'(' => {
                out.push(Token::Open);
                i += 1;
            }
            b')' => {
                out.push(Token::Close);
                i += 1;
            }
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80) {
                    i += 1;
                }
                out.push(Token::Name(sql[start..i].to_owned()));
            }
            _ => {
                out.push(Token::Other);
                i += 1;
            }
        }
    }
    out
}

fn is_word(t: &Token, w: &str) -> bool {
    matches!(t, Token::Name(n) if n.eq_ignore_ascii_case(w))
}

/// Every name inside the `CHECK ( … )` clauses of a `CREATE TABLE`, column
/// and table constraints alike. (A quoted `"check"` is a column's name, but
/// it is never followed by a parenthesis in a `CREATE TABLE`.)
pub fn check_columns(create_table: &str) -> Vec<String> {
    let t = tokens(create_table);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < t.len() {
        if is_word(&t[i], "check") && t[i + 1] == Token::Open {
            let mut depth = 0;
            let mut j = i + 1;
            while j < t.len() {
                match &t[j] {
                    Token::Open => depth += 1,
                    Token::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Token::Name(n) => out.push(n.clone()),
                    Token::Other => {}
                }
                j += 1;
            }
            i = j;
        }
        i += 1;
    }
    out
}

/// Every name in the `WHERE` of a partial index's `CREATE INDEX` (none
/// for an index that is not partial).
pub fn partial_index_columns(create_index: &str) -> Vec<String> {
    let t = tokens(create_index);
    let mut depth = 0i32;
    for (i, tok) in t.iter().enumerate() {
        match tok {
            Token::Open => depth += 1,
            Token::Close => depth -= 1,
            _ if depth == 0 && is_word(tok, "where") => {
                return t[i + 1..]
                    .iter()
                    .filter_map(|x| match x {
                        Token::Name(n) => Some(n.clone()),
                        _ => None,
                    })
                    .collect();
            }
            _ => {}
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(v: &[String], name: &str) -> bool {
        v.iter().any(|c| c.eq_ignore_ascii_case(name))
    }

    #[test]
    fn check_clauses_name_their_columns_in_every_quoting() {
        for sql in [
            "CREATE TABLE m(data BLOB CHECK(length(data) > 100))",
            "CREATE TABLE m(data BLOB, CONSTRAINT big CHECK (length(\"DATA\") > 100))",
            "CREATE TABLE m(data BLOB, check(`data` is not null))",
            "CREATE TABLE m(data BLOB, CHECK ((substr([data], 1, 4)) = x'89504E47'))",
            "CREATE TABLE m(data BLOB, CHECK (m.data <> ''))",
        ] {
            assert!(has(&check_columns(sql), "data"), "{sql}");
        }
    }

    #[test]
    fn strings_comments_and_other_clauses_do_not_count() {
        let sql = "CREATE TABLE m(id INTEGER, data BLOB DEFAULT 'check(data)', -- CHECK(data)\n name TEXT /* CHECK (data) */ CHECK (name <> 'data' AND name <> x'64617461'), \"check\" TEXT)";
        let cols = check_columns(sql);
        assert!(!has(&cols, "data"), "{cols:?}");
        assert!(has(&cols, "name"));
        assert!(check_columns("CREATE TABLE m(id, data BLOB)").is_empty());
    }

    #[test]
    fn partial_index_where_names_its_columns() {
        assert!(has(&partial_index_columns("CREATE INDEX p ON m(id) WHERE length(data) > 100"), "data"));
        assert!(has(&partial_index_columns("create unique index p on m(id) where \"data\" is not null"), "data"));
        // A WHERE inside the key expressions' parentheses is not the index's.
        assert!(partial_index_columns("CREATE INDEX e ON m((SELECT 1 WHERE data))").is_empty());
        assert!(!has(&partial_index_columns("CREATE INDEX p ON m(data) WHERE id > 3"), "data"));
    }
}
