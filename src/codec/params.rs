//! Which supplied value goes to which SQL parameter, and the errors when the
//! two do not match. The glue asks SQLite for the statement's parameter names
//! and hands them here with the shape of what the caller passed.
//!
//! ```
//! use resq_wasm::codec::params::{plan, Supplied, Slot};
//! let sql = [Some(":id".to_string()), Some("$name".to_string())];
//! let keys = ["name".to_string(), "id".to_string()];
//! let p = plan(&sql, Supplied::Named(&keys)).unwrap();
//! assert_eq!(p.iter().map(|s| s.value).collect::<Vec<_>>(), vec![1, 0]);
//! assert_eq!(p[1].label.describe(&keys), ":name");
//! ```

use super::error::{Error, Result};

/// What the caller passed, before looking at the values themselves.
#[derive(Debug, Clone, Copy)]
pub enum Supplied<'a> {
    /// No parameters (`undefined`).
    None,
    /// An array of this length.
    Positional(usize),
    /// A plain object with these own keys, without prefixes.
    Named(&'a [String]),
}

/// For one SQL parameter (in SQLite's 1-based order): where its value is in
/// what the caller supplied, and how to name it in an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Index into the array, or into the object's key list.
    pub value: usize,
    pub label: Label,
}

/// How an error names a parameter, spelled out only when one is needed (a
/// batch binds thousands of values; none of them should cost a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// `parameter N`, 1-based, from this 0-based index.
    Positional(usize),
    /// `:key`, whatever prefix the SQL uses (as API.md spells it); the index
    /// is into the object's key list.
    Named(usize),
}

impl Label {
    pub fn describe(&self, keys: &[String]) -> String {
        match *self {
            Label::Positional(i) => positional_label(i),
            Label::Named(k) => format!(":{}", keys[k]),
        }
    }
}

/// The positional label, 1-based as API.md spells it.
pub fn positional_label(index: usize) -> String {
    format!("parameter {}", index + 1)
}

/// Matches the statement's parameters (`sql_params[i]` is parameter `i + 1`'s
/// name, `None` for a bare `?`) against what was supplied. A missing or extra
/// value is `RESQ_BAD_PARAM`, before anything runs.
pub fn plan(sql_params: &[Option<String>], supplied: Supplied<'_>) -> Result<Vec<Slot>> {
    let n = sql_params.len();
    match supplied {
        Supplied::None if n == 0 => Ok(Vec::new()),
        Supplied::None => {
            Err(Error::BadParam(format!("the statement has {n} parameter{}, but no values were given", plural(n))))
        }
        Supplied::Positional(len) if len < n => Err(Error::BadParam(format!(
            "{} is missing: the statement has {n} parameter{}, but {len} value{} given",
            positional_label(len),
            plural(n),
            were(len)
        ))),
        Supplied::Positional(len) if len > n => Err(Error::BadParam(format!(
            "{} is extra: the statement has {n} parameter{}, but {len} value{} given",
            positional_label(n),
            plural(n),
            were(len)
        ))),
        Supplied::Positional(_) => Ok((0..n).map(|i| Slot { value: i, label: Label::Positional(i) }).collect()),
        Supplied::Named(keys) => {
            let mut used = vec![false; keys.len()];
            let mut slots = Vec::with_capacity(n);
            for (i, name) in sql_params.iter().enumerate() {
                let name = match name.as_deref() {
                    Some(s) if s.starts_with([':', '@', '$']) => s,
                    _ => {
                        return Err(Error::BadParam(format!(
                            "{} is positional (`?`); pass an array, not an object",
                            positional_label(i)
                        )))
                    }
                };
                let Some(k) = keys.iter().position(|k| k == &name[1..]) else {
                    return Err(Error::BadParam(format!("{name} is missing from the parameters object")));
                };
                used[k] = true;
                slots.push(Slot { value: k, label: Label::Named(k) });
            }
            if let Some(k) = used.iter().position(|u| !u) {
                return Err(Error::BadParam(format!(
                    "the parameters object has `{}`, which the statement does not use",
                    keys[k]
                )));
            }
            Ok(slots)
        }
    }
}

fn were(n: usize) -> &'static str {
    if n == 1 {
        " was"
    } else {
        "s were"
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|s| if s.is_empty() { None } else { Some(s.to_string()) }).collect()
    }

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// One table of cases: SQL parameter names, what was supplied, and the
    /// value indexes or the error message expected.
    #[test]
    fn table() {
        let check = |sql: &[&str], supplied: Supplied<'_>, want: std::result::Result<Vec<usize>, &str>| {
            let got = plan(&names(sql), supplied).map(|p| p.into_iter().map(|s| s.value).collect::<Vec<_>>());
            match want {
                Ok(v) => assert_eq!(got, Ok(v), "{sql:?}"),
                Err(msg) => match got {
                    Err(Error::BadParam(m)) => assert_eq!(m, msg, "{sql:?}"),
                    other => panic!("{sql:?}: expected BadParam({msg}), got {other:?}"),
                },
            }
        };
        let k_ab = keys(&["a", "b"]);
        let k_ba = keys(&["b", "a"]);
        let k_a = keys(&["a"]);
        let k_abc = keys(&["a", "b", "c"]);
        check(&[], Supplied::None, Ok(vec![]));
        check(&[], Supplied::Positional(0), Ok(vec![]));
        check(&["", ""], Supplied::Positional(2), Ok(vec![0, 1]));
        check(&["?1", "?2"], Supplied::Positional(2), Ok(vec![0, 1]));
        check(
            &["", ""],
            Supplied::Positional(1),
            Err("parameter 2 is missing: the statement has 2 parameters, but 1 value was given"),
        );
        check(
            &[""],
            Supplied::Positional(3),
            Err("parameter 2 is extra: the statement has 1 parameter, but 3 values were given"),
        );
        check(&[""], Supplied::None, Err("the statement has 1 parameter, but no values were given"));
        check(
            &[],
            Supplied::Positional(1),
            Err("parameter 1 is extra: the statement has 0 parameters, but 1 value was given"),
        );
        check(&[":a", "@b"], Supplied::Named(&k_ba), Ok(vec![1, 0]));
        check(&["$a", ":b"], Supplied::Named(&k_ab), Ok(vec![0, 1]));
        check(&[":a", "$a"], Supplied::Named(&k_a), Ok(vec![0, 0]));
        check(&[":a", ":b"], Supplied::Named(&k_a), Err(":b is missing from the parameters object"));
        check(
            &[":a", ":b"],
            Supplied::Named(&k_abc),
            Err("the parameters object has `c`, which the statement does not use"),
        );
        check(&[":a", ""], Supplied::Named(&k_a), Err("parameter 2 is positional (`?`); pass an array, not an object"));
        // Named parameters can also be bound by position, as SQLite numbers them.
        check(&[":a", ":b"], Supplied::Positional(2), Ok(vec![0, 1]));
    }

    #[test]
    fn labels() {
        let p = plan(&names(&["", ""]), Supplied::Positional(2)).unwrap();
        assert_eq!(p[1].label.describe(&[]), "parameter 2");
        let k = keys(&["x"]);
        assert_eq!(plan(&names(&["@x"]), Supplied::Named(&k)).unwrap()[0].label.describe(&k), ":x");
    }
}
