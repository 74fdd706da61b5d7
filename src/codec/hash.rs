//! The hash `watchQuery` keeps of a result, so an unchanged result is
//! answered with `null` and never copied out of wasm memory.
//!
//! It is 64 bits of SipHash-1-3 with fixed keys (`DefaultHasher::new()`):
//! deterministic within one build of the package, which is as long as a page
//! keeps a hash, and already in `std`. A result is fed in parts (the JSON,
//! the fix-ups, the side buffer, and the hash of its own buffers, which is
//! taken as they pass), each preceded by its length, so two results that
//! split the same bytes differently hash differently.
//!
//! ```
//! use resq_wasm::codec::hash::ResultHash;
//! let mut h = ResultHash::new(1);
//! h.part(br#"[{"id":1}]"#);
//! assert_eq!(h.hex().len(), 16);
//! ```

use std::hash::{DefaultHasher, Hasher};

#[derive(Clone, Debug)]
pub struct ResultHash(DefaultHasher);

impl ResultHash {
    /// Starts a hash of a result of kind `form` (`queryBytes` and `query`
    /// results of the same rows must not share a hash).
    pub fn new(form: u8) -> ResultHash {
        let mut h = DefaultHasher::new();
        h.write_u8(form);
        ResultHash(h)
    }

    /// Adds one part: its length, then its bytes.
    pub fn part(&mut self, bytes: &[u8]) {
        self.0.write_u64(bytes.len() as u64);
        self.0.write(bytes);
    }

    /// Adds a part made of numbers (the fix-ups), bit for bit.
    pub fn numbers(&mut self, numbers: &[f64]) {
        self.0.write_u64(numbers.len() as u64);
        for n in numbers {
            self.0.write_u64(n.to_bits());
        }
    }

    /// Adds one number: a count, or the [`ResultHash::finish`] of a list of
    /// parts whose length was known only at its end.
    pub fn word(&mut self, n: u64) {
        self.0.write_u64(n);
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0.finish()
    }

    /// The hash so far, as 16 lowercase hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(form: u8, parts: &[&[u8]]) -> String {
        let mut h = ResultHash::new(form);
        parts.iter().for_each(|p| h.part(p));
        h.hex()
    }

    #[test]
    fn deterministic_and_hex() {
        let a = hash(0, &[b"[]"]);
        assert_eq!(a, hash(0, &[b"[]"]));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{a}");
    }

    #[test]
    fn distinguishes() {
        let all = [
            hash(0, &[]),
            hash(1, &[]),
            hash(0, &[b""]),
            hash(0, &[b"", b""]),
            hash(0, &[b"ab"]),
            hash(0, &[b"a", b"b"]),
            hash(0, &[b"ab", b""]),
            hash(0, &[b"ba"]),
            hash(1, &[b"ab"]),
        ];
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                assert_ne!(x, y);
            }
        }
        let numbers = |n: &[f64]| {
            let mut h = ResultHash::new(0);
            h.numbers(n);
            h.hex()
        };
        assert_ne!(numbers(&[0.0]), numbers(&[-0.0]));
        assert_ne!(numbers(&[]), numbers(&[0.0]));
        assert_ne!(numbers(&[1.0, 2.0]), numbers(&[2.0, 1.0]));
        assert_eq!(numbers(&[1.0, 2.0]), numbers(&[1.0, 2.0]));
    }
}
