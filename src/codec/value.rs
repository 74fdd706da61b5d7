//! SQLite's five storage classes, and the rules that map JS numbers onto them.
//!
//! Parameter bytes (TEXT and BLOB) live in one [`Arena`] per connection that is
//! cleared, not freed, between calls: a call with small parameters allocates
//! nothing (seed 001: per-call scratch allocations are measurable).

use super::Error;

/// Largest integer a JS `number` holds exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The longest TEXT or BLOB, and the longest row, in bytes: 2 GiB − 1,
/// SQLite's hard limit (it counts lengths in a signed 32-bit integer; the
/// wasm is compiled with `SQLITE_MAX_LENGTH` at it, above the default 10^9).
/// A row's length includes its record header, a few bytes per column, so
/// the largest value a row can hold is that much less: 2,147,483,640 bytes
/// beside an `INTEGER PRIMARY KEY`.
pub const MAX_LENGTH: u64 = (1 << 31) - 1;

/// Refuses parameter `label`'s value of `len` bytes over [`MAX_LENGTH`]
/// before any of it is read, with SQLite's code for it, `SQLITE_TOOBIG`.
///
/// ```
/// use resq_wasm::codec::value::{check_length, MAX_LENGTH};
/// assert!(check_length(MAX_LENGTH, || "parameter 1".into()).is_ok());
/// let e = check_length(MAX_LENGTH + 1, || "parameter 1".into()).unwrap_err();
/// assert_eq!(e.errno(), Some(18));
/// assert!(e.to_string().starts_with("parameter 1: "));
/// ```
pub fn check_length(len: u64, label: impl FnOnce() -> String) -> Result<(), Error> {
    if len <= MAX_LENGTH {
        return Ok(());
    }
    Err(Error::Sqlite {
        errno: 18,
        message: format!(
            "{}: the value is {len} bytes, over the limit of {MAX_LENGTH} bytes (2 GiB − 1) for a TEXT or BLOB",
            label()
        ),
    })
}

/// SQLite's own message for a value or row over the limit, with the limit
/// named (SQLite's says only "string or blob too big").
pub fn too_big(message: &str) -> String {
    format!("{message}: a TEXT, BLOB or row may hold at most {MAX_LENGTH} bytes (2 GiB − 1), a row's including a few bytes per column")
}

/// An arena keeps at most this much capacity between calls. `WebAssembly.Memory`
/// never shrinks, but memory handed back to the allocator is reused by SQLite.
pub const ARENA_KEEP_BYTES: usize = 1 << 20;

/// Bytes of a TEXT or BLOB parameter inside an [`Arena`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub len: usize,
}

/// A parameter value, as bound to SQLite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    /// UTF-8 text in the arena.
    Text(Span),
    /// Bytes in the arena.
    Blob(Span),
    /// A `Blob`/`File` of this many bytes that streams: bound as a
    /// placeholder, written after the statement (see [`super::stream`]).
    Streamed(u64),
}

impl Value {
    /// A JS `number` as API.md maps it: integer-valued and safe (and not `-0`)
    /// is INTEGER, any other finite number is REAL, NaN and ±Infinity are
    /// refused (`None`).
    pub fn from_number(n: f64) -> Option<Value> {
        if !n.is_finite() {
            return None;
        }
        let integral = n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER as f64;
        if integral && !(n == 0.0 && n.is_sign_negative()) {
            Some(Value::Integer(n as i64))
        } else {
            Some(Value::Real(n))
        }
    }

    /// [`Value::from_number`], with the refusal of NaN and ±Infinity
    /// naming parameter `label`.
    pub fn number(n: f64, label: impl FnOnce() -> String) -> Result<Value, Error> {
        Value::from_number(n).ok_or_else(|| Error::BadParam(format!("{}: {n} is not a finite number", label())))
    }
}

/// Whether an INTEGER result fits a JS `number` exactly; outside, `query`
/// returns a `bigint`.
pub fn is_safe_integer(i: i64) -> bool {
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i)
}

/// Checks a `{ offset, length }` range against a value of `size` bytes and
/// returns `(offset, length)`; defaults read from 0 to the end. Outside the
/// value (or negative) is `RESQ_RANGE`; not a whole number is `RESQ_BAD_PARAM`.
///
/// Compared as integers, not doubles: above 2^53 a `u64` size rounds when
/// made a double, and a range checked that way could end past the value
/// (tests/codec_props.rs found one, and an underflow panic).
pub fn blob_range(size: u64, offset: Option<f64>, length: Option<f64>) -> Result<(u64, u64), Error> {
    let whole = |name: &str, v: f64| {
        if v.fract() != 0.0 || !v.is_finite() {
            Err(Error::BadParam(format!("{name} must be a whole number of bytes, not {v}")))
        } else {
            Ok(v)
        }
    };
    let offset = whole("offset", offset.unwrap_or(0.0))?;
    let Some(offset) = to_u64(offset).filter(|&o| o <= size) else {
        return Err(Error::Range(format!("offset {offset} is outside the value ({size} bytes)")));
    };
    let length = match length {
        None => size - offset,
        Some(l) => {
            let l = whole("length", l)?;
            match to_u64(l).filter(|&l| offset.checked_add(l).is_some_and(|end| end <= size)) {
                Some(l) => l,
                None => {
                    return Err(Error::Range(format!(
                        "{l} bytes from offset {offset} run past the end of the value ({size} bytes)"
                    )))
                }
            }
        }
    };
    Ok((offset, length))
}

/// A whole, finite double as a `u64` when it is one exactly (0 ≤ v < 2^64).
fn to_u64(v: f64) -> Option<u64> {
    (0.0..18446744073709551616.0).contains(&v).then_some(v as u64)
}

/// Per-connection storage for one call's parameters.
#[derive(Debug, Default)]
pub struct Arena {
    bytes: Vec<u8>,
    values: Vec<Value>,
}

impl Arena {
    /// Forgets the previous call's values, keeping a bounded capacity.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.values.clear();
        if self.bytes.capacity() > ARENA_KEEP_BYTES {
            self.bytes = Vec::new();
        }
    }

    pub fn push(&mut self, v: Value) {
        self.values.push(v);
    }

    pub fn push_text(&mut self, s: &str) {
        let span = self.put(s.as_bytes());
        self.values.push(Value::Text(span));
    }

    /// Reserves `len` bytes for a BLOB and lets `fill` write them in place,
    /// so bytes coming from JS are copied into wasm memory exactly once.
    pub fn push_blob_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) {
        let start = self.bytes.len();
        self.bytes.resize(start + len, 0);
        fill(&mut self.bytes[start..]);
        self.values.push(Value::Blob(Span { start, len }));
    }

    fn put(&mut self, b: &[u8]) -> Span {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        Span { start, len: b.len() }
    }

    pub fn values(&self) -> &[Value] {
        &self.values
    }

    pub fn bytes(&self, span: Span) -> &[u8] {
        &self.bytes[span.start..span.start + span.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let check = |n: f64, want: Option<Value>| {
            let got = Value::from_number(n);
            match (got, want) {
                (Some(Value::Real(a)), Some(Value::Real(b))) => {
                    assert_eq!(a.to_bits(), b.to_bits(), "{n}")
                }
                (got, want) => assert_eq!(got, want, "{n}"),
            }
        };
        check(0.0, Some(Value::Integer(0)));
        check(-0.0, Some(Value::Real(-0.0)));
        check(1.0, Some(Value::Integer(1)));
        check(-42.0, Some(Value::Integer(-42)));
        check(1.5, Some(Value::Real(1.5)));
        check(9007199254740991.0, Some(Value::Integer(MAX_SAFE_INTEGER)));
        check(-9007199254740991.0, Some(Value::Integer(-MAX_SAFE_INTEGER)));
        check(9007199254740992.0, Some(Value::Real(9007199254740992.0)));
        check(1e308, Some(Value::Real(1e308)));
        check(5e-324, Some(Value::Real(5e-324)));
        check(f64::NAN, None);
        check(f64::INFINITY, None);
        check(f64::NEG_INFINITY, None);
    }

    #[test]
    fn ranges() {
        let check = |size: u64, off: Option<f64>, len: Option<f64>, want: Result<(u64, u64), &str>| {
            let got = blob_range(size, off, len).map_err(|e| e.code());
            assert_eq!(got, want, "{size} {off:?} {len:?}");
        };
        check(10, None, None, Ok((0, 10)));
        check(10, Some(4.0), None, Ok((4, 6)));
        check(10, Some(4.0), Some(6.0), Ok((4, 6)));
        check(10, Some(10.0), None, Ok((10, 0)));
        check(0, None, None, Ok((0, 0)));
        check(10, Some(4.0), Some(7.0), Err("RESQ_RANGE"));
        check(10, Some(11.0), None, Err("RESQ_RANGE"));
        check(10, Some(-1.0), None, Err("RESQ_RANGE"));
        check(10, None, Some(-1.0), Err("RESQ_RANGE"));
        check(10, Some(1.5), None, Err("RESQ_BAD_PARAM"));
        check(10, None, Some(f64::NAN), Err("RESQ_BAD_PARAM"));
        check(10, Some(-0.0), None, Ok((0, 10)));
        check(10, Some(f64::INFINITY), None, Err("RESQ_BAD_PARAM"));
        check(10, Some(-1.0), Some(0.5), Err("RESQ_RANGE"));
        // Sizes past 2^53 round as doubles (found by tests/codec_props.rs):
        // an offset one past the end was taken, and `size - offset` underflowed.
        check(9063353503920011, Some(9063353503920012.0), None, Err("RESQ_RANGE"));
        check((1 << 53) + 1, None, None, Ok((0, (1 << 53) + 1)));
        check(u64::MAX, Some(18446744073709551616.0), None, Err("RESQ_RANGE"));
        check(u64::MAX, Some(0.0), Some(18446744073709551616.0), Err("RESQ_RANGE"));
    }

    #[test]
    fn safe_integers() {
        assert!(is_safe_integer(MAX_SAFE_INTEGER));
        assert!(is_safe_integer(-MAX_SAFE_INTEGER));
        assert!(!is_safe_integer(MAX_SAFE_INTEGER + 1));
        assert!(!is_safe_integer(i64::MIN));
    }

    #[test]
    fn arena_reuses_and_bounds_capacity() {
        let mut a = Arena::default();
        a.push_text("héllo");
        a.push_blob_with(3, |d| d.copy_from_slice(&[1, 2, 3]));
        let vals = a.values().to_vec();
        assert_eq!(
            a.bytes(match vals[0] {
                Value::Text(s) => s,
                _ => panic!(),
            }),
            "héllo".as_bytes()
        );
        assert_eq!(
            a.bytes(match vals[1] {
                Value::Blob(s) => s,
                _ => panic!(),
            }),
            &[1, 2, 3]
        );
        a.clear();
        assert!(a.values().is_empty());
        a.push_blob_with(ARENA_KEEP_BYTES + 1, |_| {});
        a.clear();
        assert_eq!(a.bytes.capacity(), 0);
    }
}
