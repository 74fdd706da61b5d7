//! The JSON encoder behind `queryBytes`: rows become `[{"col":value,…},…]`,
//! with the byte-for-byte rules of API.md.
//!
//! - INTEGER: all its digits.
//! - REAL: the shortest text that reads back to the same double; ±Infinity as
//!   `1e999`/`-1e999` (NaN cannot be stored by SQLite; it would be `null`).
//! - TEXT: a JSON string; invalid UTF-8 becomes U+FFFD, one per maximal
//!   invalid sequence (as `TextDecoder` does), so the output is always valid.
//! - BLOB: standard base64 with padding (RFC 4648), as a JSON string.
//!
//! One writer lives per connection and keeps its buffer between calls.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// A buffer keeps at most this much capacity between calls.
pub const KEEP_BYTES: usize = 4 << 20;

#[derive(Debug, Default)]
pub struct JsonWriter {
    buf: Vec<u8>,
    rows: usize,
    first_key: bool,
}

impl JsonWriter {
    /// Starts a new result, forgetting the last one (keeping bounded capacity).
    pub fn begin_rows(&mut self) {
        if self.buf.capacity() > KEEP_BYTES {
            self.buf = Vec::new();
        }
        self.buf.clear();
        self.rows = 0;
        self.buf.push(b'[');
    }

    pub fn begin_row(&mut self) {
        if self.rows > 0 {
            self.buf.push(b',');
        }
        self.rows += 1;
        self.buf.push(b'{');
        self.first_key = true;
    }

    /// Writes a key, escaping it. For many rows, prefer [`encoded_key`] once
    /// per column and [`Self::encoded_key`] per row.
    pub fn key(&mut self, name: &[u8]) {
        self.encoded_key(&encoded_key(name));
    }

    /// Writes a key made by [`encoded_key`].
    pub fn encoded_key(&mut self, key: &[u8]) {
        if !self.first_key {
            self.buf.push(b',');
        }
        self.first_key = false;
        self.buf.extend_from_slice(key);
    }

    pub fn end_row(&mut self) {
        self.buf.push(b'}');
    }

    pub fn end_rows(&mut self) {
        self.buf.push(b']');
    }

    pub fn null(&mut self) {
        self.buf.extend_from_slice(b"null");
    }

    pub fn integer(&mut self, i: i64) {
        write_integer(&mut self.buf, i);
    }

    /// An integer as a JSON string of its digits: `query()` turns it into a
    /// `bigint` on the page, where a JSON number would lose digits.
    pub fn integer_as_string(&mut self, i: i64) {
        self.buf.push(b'"');
        write_integer(&mut self.buf, i);
        self.buf.push(b'"');
    }

    pub fn real(&mut self, f: f64) {
        write_real(&mut self.buf, f);
    }

    pub fn text(&mut self, bytes: &[u8]) {
        write_string(&mut self.buf, bytes);
    }

    pub fn blob(&mut self, bytes: &[u8]) {
        let start = self.buf.len();
        let len = bytes.len().div_ceil(3) * 4;
        self.buf.resize(start + len + 2, b'"');
        // The slice is exactly the encoded length, so this cannot fail.
        let written = STANDARD.encode_slice(bytes, &mut self.buf[start + 1..start + 1 + len]);
        debug_assert_eq!(written, Ok(len));
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// `"name":`, escaped once, for [`JsonWriter::encoded_key`].
pub fn encoded_key(name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(name.len() + 3);
    write_string(&mut k, name);
    k.push(b':');
    k
}

fn write_integer(buf: &mut Vec<u8>, i: i64) {
    let mut digits = [0u8; 20];
    let mut n = i.unsigned_abs();
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        buf.push(b'-');
    }
    buf.extend_from_slice(&digits[at..]);
}

fn write_real(buf: &mut Vec<u8>, f: f64) {
    use std::io::Write as _;
    if f.is_nan() {
        buf.extend_from_slice(b"null");
    } else if f.is_infinite() {
        buf.extend_from_slice(if f > 0.0 { b"1e999" } else { b"-1e999" });
    } else if f == 0.0 || (1e-7..1e21).contains(&f.abs()) {
        // Rust's `Display` prints the shortest digits that round-trip.
        let _ = write!(buf, "{f}");
    } else {
        let _ = write!(buf, "{f:e}");
    }
}

fn write_string(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.reserve(bytes.len() + 2);
    buf.push(b'"');
    for chunk in bytes.utf8_chunks() {
        write_escaped(buf, chunk.valid().as_bytes());
        if !chunk.invalid().is_empty() {
            buf.extend_from_slice("\u{FFFD}".as_bytes());
        }
    }
    buf.push(b'"');
}

/// Copies valid UTF-8, escaping `"`, `\` and control characters.
fn write_escaped(buf: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut run = 0;
    for (i, &b) in s.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => &[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]],
            _ => continue,
        };
        buf.extend_from_slice(&s[run..i]);
        buf.extend_from_slice(esc);
        run = i + 1;
    }
    buf.extend_from_slice(&s[run..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(f: impl FnOnce(&mut JsonWriter)) -> String {
        let mut w = JsonWriter::default();
        w.begin_rows();
        w.begin_row();
        w.key(b"v");
        f(&mut w);
        w.end_row();
        w.end_rows();
        let s = String::from_utf8(w.as_bytes().to_vec()).expect("always UTF-8");
        s.strip_prefix("[{\"v\":").and_then(|s| s.strip_suffix("}]")).expect("framing").to_string()
    }

    #[test]
    fn integers() {
        let check = |i: i64, want: &str| assert_eq!(one(|w| w.integer(i)), want);
        check(0, "0");
        check(-1, "-1");
        check(42, "42");
        check(i64::MAX, "9223372036854775807");
        check(i64::MIN, "-9223372036854775808");
        check((1 << 53) - 1, "9007199254740991");
        check(1 << 53, "9007199254740992");
        check((1 << 53) + 1, "9007199254740993");
        check(-(1 << 53) - 1, "-9007199254740993");
        assert_eq!(one(|w| w.integer_as_string(i64::MIN)), "\"-9223372036854775808\"");
    }

    #[test]
    fn reals() {
        let check = |f: f64, want: &str| {
            let got = one(|w| w.real(f));
            assert_eq!(got, want, "{f:e}");
            if f.is_finite() {
                let back: f64 = got.parse().expect("a number");
                assert_eq!(back.to_bits(), f.to_bits(), "{got} round-trips");
            }
        };
        check(0.0, "0");
        check(-0.0, "-0");
        check(1.5, "1.5");
        check(-2.25, "-2.25");
        check(0.1, "0.1");
        check(1.0 / 3.0, "0.3333333333333333");
        check(1e308, "1e308");
        check(f64::MAX, "1.7976931348623157e308");
        check(f64::MIN_POSITIVE, "2.2250738585072014e-308");
        check(5e-324, "5e-324");
        check(2.5e-320, "2.5e-320");
        check(1e-7, "0.0000001");
        check(1.5e-8, "1.5e-8");
        check(1e21, "1e21");
        check(123456789012345680000.0, "123456789012345680000");
        check(9007199254740993.0, "9007199254740992");
        check(f64::INFINITY, "1e999");
        check(f64::NEG_INFINITY, "-1e999");
        assert_eq!(one(|w| w.real(f64::NAN)), "null");
    }

    #[test]
    fn texts() {
        let check = |b: &[u8], want: &str| assert_eq!(one(|w| w.text(b)), want, "{b:?}");
        check(b"", r#""""#);
        check(b"cat.jpg", r#""cat.jpg""#);
        check(b"say \"hi\"", r#""say \"hi\"""#);
        check(b"a\\b", r#""a\\b""#);
        check(b"\n\r\t\x08\x0c", r#""\n\r\t\b\f""#);
        check(b"\x00\x01\x1f\x7f", "\"\\u0000\\u0001\\u001f\x7f\"");
        check("é ü 中 😀".as_bytes(), "\"é ü 中 😀\"");
        check("\u{2028}".as_bytes(), "\"\u{2028}\"");
        // Invalid UTF-8: one U+FFFD per maximal invalid sequence.
        check(b"a\xffb", "\"a\u{FFFD}b\"");
        check(b"\xc3", "\"\u{FFFD}\"");
        check(b"\xe2\x82", "\"\u{FFFD}\"");
        check(b"\xed\xa0\x80", "\"\u{FFFD}\u{FFFD}\u{FFFD}\"");
        check(b"\xf0\x9f\x98", "\"\u{FFFD}\"");
        check(b"\x80\x80", "\"\u{FFFD}\u{FFFD}\"");
        let huge = "x\"".repeat(1 << 20);
        assert_eq!(one(|w| w.text(huge.as_bytes())).len(), huge.len() + (1 << 20) + 2);
    }

    #[test]
    fn blobs() {
        let check = |b: &[u8], want: &str| assert_eq!(one(|w| w.blob(b)), want, "{b:?}");
        check(b"", r#""""#);
        check(b"f", r#""Zg==""#);
        check(b"fo", r#""Zm8=""#);
        check(b"foo", r#""Zm9v""#);
        check(b"foob", r#""Zm9vYg==""#);
        check(b"fooba", r#""Zm9vYmE=""#);
        check(b"foobar", r#""Zm9vYmFy""#);
        check(&[0xff, 0xfe, 0x00], r#""//4A""#);
        check(&[0xfb, 0xff], r#""+/8=""#);
    }

    #[test]
    fn rows_and_keys() {
        let mut w = JsonWriter::default();
        w.begin_rows();
        w.end_rows();
        assert_eq!(w.as_bytes(), b"[]");
        let k1 = encoded_key(b"id");
        let k2 = encoded_key(b"we\"ird\xff");
        w.begin_rows();
        for i in 0..2 {
            w.begin_row();
            w.encoded_key(&k1);
            w.integer(i);
            w.encoded_key(&k2);
            w.null();
            w.end_row();
        }
        w.end_rows();
        assert_eq!(
            std::str::from_utf8(w.as_bytes()).unwrap(),
            "[{\"id\":0,\"we\\\"ird\u{FFFD}\":null},{\"id\":1,\"we\\\"ird\u{FFFD}\":null}]"
        );
        assert_eq!(w.rows(), 2);
    }

    #[test]
    fn buffer_capacity_is_bounded_between_calls() {
        let mut w = JsonWriter::default();
        w.begin_rows();
        w.text(&vec![b'a'; KEEP_BYTES + 1]);
        w.begin_rows();
        assert!(w.buf.capacity() <= KEEP_BYTES);
    }
}
