//! An `executeBatch`'s parameter sets as one buffer, made by the page
//! (`src/js/batch.ts`) and read here in one pass.
//!
//! Handing Rust 10,000 sets of JS values costs a crossing of the JS–wasm
//! boundary for each question asked of each value (is it null, a number, a
//! string; its bytes): most of a 10,000-row batch's time
//! (benches/experiments/016-batch-encoding.md). The page writes the sets it
//! can into one buffer instead, which moves to the worker without a clone
//! and into wasm memory in one copy. A batch holding anything else (a
//! `Blob`, a staged value, `undefined`, a bigint outside 64 bits, a string
//! with a lone surrogate) goes the old way, where that value's error is.
//!
//! Little-endian. The buffer is `u32 sets`, then each set: `u8 shape`
//! (0 none, 1 array, 2 object), `u32 n`, and `n` values, each preceded in
//! an object by its key (`u32 length`, UTF-8). A value is `u8 tag` and
//! what the tag says: 0 null, 1 false, 2 true, 3 `f64` (a JS number), 4
//! `i64` (a bigint), 5 text and 6 bytes (each `u32 length` and the bytes).
//!
//! The values keep the rules of any parameter: [`plan`] matches them to the
//! statement's, and a number becomes INTEGER or REAL as [`Value::number`]
//! says.
//!
//! ```
//! use resq_wasm::codec::batch::Batch;
//! use resq_wasm::codec::value::{Arena, Value};
//! // One set: [7, null].
//! let mut b = vec![1, 0, 0, 0, 1, 2, 0, 0, 0, 3];
//! b.extend(7f64.to_le_bytes());
//! b.push(0);
//! let mut batch = Batch::new(&b).unwrap();
//! assert_eq!(batch.len(), 1);
//! let mut arena = Arena::default();
//! batch.bind_next(&[None, None], &mut arena).unwrap();
//! assert_eq!(arena.values(), &[Value::Integer(7), Value::Null]);
//! ```

use super::error::{Error, Result};
use super::params::{plan, Supplied};
use super::value::{check_length, Arena, Value};

/// The sets of one batch, read in order by [`Batch::bind_next`].
pub struct Batch<'a> {
    bytes: &'a [u8],
    at: usize,
    sets: usize,
    /// One set's values and keys, reused from set to set.
    values: Vec<Item<'a>>,
    keys: Vec<String>,
}

#[derive(Clone, Copy)]
enum Item<'a> {
    Null,
    Bool(bool),
    Number(f64),
    BigInt(i64),
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// The page wrote something this reader does not know: a bug, not the
/// caller's mistake, but still a refusal and not a panic.
fn malformed() -> Error {
    Error::BadParam("executeBatch: the encoded parameter sets are malformed".into())
}

impl<'a> Batch<'a> {
    pub fn new(bytes: &'a [u8]) -> Result<Batch<'a>> {
        let mut b = Batch { bytes, at: 0, sets: 0, values: Vec::new(), keys: Vec::new() };
        b.sets = b.u32()? as usize;
        Ok(b)
    }

    /// The sets from byte `at` of a batch's buffer on, as [`Batch::offset`]
    /// gave it after the sets before: a batch run in steps, each a call of
    /// its own, reads its buffer once. `len` is then 0.
    pub fn resume(bytes: &'a [u8], at: usize) -> Batch<'a> {
        Batch { bytes, at, sets: 0, values: Vec::new(), keys: Vec::new() }
    }

    /// Where the next set begins.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// How many sets the batch holds.
    pub fn len(&self) -> usize {
        self.sets
    }

    pub fn is_empty(&self) -> bool {
        self.sets == 0
    }

    /// Checks the next set against the statement's parameter `names` (as
    /// [`plan`] takes them) and stores its values in `arena`.
    pub fn bind_next(&mut self, names: &[Option<String>], arena: &mut Arena) -> Result<()> {
        let shape = self.take(1)?[0];
        let n = self.u32()? as usize;
        self.values.clear();
        self.keys.clear();
        for _ in 0..n {
            if shape == 2 {
                let key = self.text()?;
                self.keys.push(key.to_string());
            }
            let item = self.item()?;
            self.values.push(item);
        }
        let supplied = match shape {
            0 if n == 0 => Supplied::None,
            1 => Supplied::Positional(n),
            2 => Supplied::Named(&self.keys),
            _ => return Err(malformed()),
        };
        for slot in plan(names, supplied)? {
            let label = || slot.label.describe(&self.keys);
            match self.values[slot.value] {
                Item::Null => arena.push(Value::Null),
                Item::Bool(b) => arena.push(Value::Integer(b as i64)),
                Item::Number(x) => arena.push(Value::number(x, label)?),
                Item::BigInt(i) => arena.push(Value::Integer(i)),
                Item::Text(s) => arena.push_text(s),
                Item::Bytes(b) => {
                    check_length(b.len() as u64, label)?;
                    arena.push_blob_with(b.len(), |dst| dst.copy_from_slice(b));
                }
            }
        }
        Ok(())
    }

    fn item(&mut self) -> Result<Item<'a>> {
        Ok(match self.take(1)?[0] {
            0 => Item::Null,
            1 => Item::Bool(false),
            2 => Item::Bool(true),
            3 => Item::Number(f64::from_le_bytes(self.eight()?)),
            4 => Item::BigInt(i64::from_le_bytes(self.eight()?)),
            5 => Item::Text(self.text()?),
            6 => {
                let len = self.u32()? as usize;
                Item::Bytes(self.take(len)?)
            }
            _ => return Err(malformed()),
        })
    }

    fn text(&mut self) -> Result<&'a str> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).map_err(|_| malformed())
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    fn eight(&mut self) -> Result<[u8; 8]> {
        Ok(self.take(8)?.try_into().unwrap())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let bytes: &'a [u8] = self.bytes;
        let end = self.at.checked_add(len).filter(|&e| e <= bytes.len()).ok_or_else(malformed)?;
        let got = &bytes[self.at..end];
        self.at = end;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder's format, written out for the tests.
    #[derive(Default)]
    struct Writer(Vec<u8>);
    impl Writer {
        fn u32(&mut self, n: u32) -> &mut Self {
            self.0.extend(n.to_le_bytes());
            self
        }
        fn tag(&mut self, t: u8) -> &mut Self {
            self.0.push(t);
            self
        }
        fn number(&mut self, x: f64) -> &mut Self {
            self.tag(3).0.extend(x.to_le_bytes());
            self
        }
        fn bytes(&mut self, tag: u8, b: &[u8]) -> &mut Self {
            self.tag(tag).u32(b.len() as u32).0.extend(b);
            self
        }
        fn key(&mut self, k: &str) -> &mut Self {
            self.u32(k.len() as u32).0.extend(k.as_bytes());
            self
        }
    }

    fn bound(buf: &[u8], names: &[Option<String>]) -> Result<Vec<Vec<Value>>> {
        let mut batch = Batch::new(buf)?;
        let mut arena = Arena::default();
        let mut out = Vec::new();
        for _ in 0..batch.len() {
            arena.clear();
            batch.bind_next(names, &mut arena)?;
            out.push(arena.values().to_vec());
        }
        Ok(out)
    }

    #[test]
    fn every_value_type_in_an_array_set() {
        let mut w = Writer::default();
        w.u32(1).tag(1).u32(7).tag(0).tag(2).number(1.5).number(3.0);
        w.tag(4).0.extend((-1i64 << 60).to_le_bytes());
        w.bytes(5, "héllo".as_bytes()).bytes(6, &[1, 2, 3]);
        let mut batch = Batch::new(&w.0).unwrap();
        let mut arena = Arena::default();
        batch.bind_next(&vec![None; 7], &mut arena).unwrap();
        let v = arena.values();
        assert_eq!(
            &v[..5],
            &[Value::Null, Value::Integer(1), Value::Real(1.5), Value::Integer(3), Value::Integer(-1 << 60)]
        );
        let (Value::Text(t), Value::Blob(b)) = (v[5], v[6]) else { panic!("{v:?}") };
        assert_eq!((arena.bytes(t), arena.bytes(b)), ("héllo".as_bytes(), &[1u8, 2, 3][..]));
    }

    #[test]
    fn object_sets_match_by_name() {
        let mut w = Writer::default();
        w.u32(2);
        w.tag(2).u32(2).key("b").number(2.0).key("a").number(1.0);
        w.tag(2).u32(2).key("a").number(3.0).key("b").number(4.0);
        let names = [Some(":a".to_string()), Some("$b".to_string())];
        let got = bound(&w.0, &names).unwrap();
        assert_eq!(got, vec![vec![Value::Integer(1), Value::Integer(2)], vec![Value::Integer(3), Value::Integer(4)]]);
    }

    #[test]
    fn a_batch_read_in_steps_reads_each_set_once_in_order() {
        let mut w = Writer::default();
        w.u32(3);
        for x in [1.0, 2.0, 3.0] {
            w.tag(1).u32(1).number(x);
        }
        let mut arena = Arena::default();
        let mut first = Batch::new(&w.0).unwrap();
        assert_eq!(first.len(), 3);
        first.bind_next(&[None], &mut arena).unwrap();
        let mut rest = Batch::resume(&w.0, first.offset());
        for _ in 0..2 {
            rest.bind_next(&[None], &mut arena).unwrap();
        }
        assert_eq!(arena.values(), &[Value::Integer(1), Value::Integer(2), Value::Integer(3)]);
        assert_eq!(rest.offset(), w.0.len());
        assert!(rest.bind_next(&[None], &mut arena).is_err());
    }

    #[test]
    fn the_rules_of_any_parameter_hold() {
        let mut w = Writer::default();
        w.u32(1).tag(1).u32(2).number(1.0).number(f64::NAN);
        let e = bound(&w.0, &[None, None]).unwrap_err();
        assert_eq!(e.to_string(), "parameter 2: NaN is not a finite number");
        let mut w = Writer::default();
        w.u32(1).tag(1).u32(1).number(1.0);
        assert_eq!(bound(&w.0, &[None, None]).unwrap_err().code(), "RESQ_BAD_PARAM");
        let mut w = Writer::default();
        w.u32(1).tag(0).u32(0);
        assert_eq!(bound(&w.0, &[]).unwrap(), vec![Vec::<Value>::new()]);
    }

    #[test]
    fn a_malformed_buffer_is_refused_not_read_past() {
        let mut w = Writer::default();
        w.u32(1).tag(1).u32(1).bytes(6, &[1, 2, 3]);
        let whole = w.0.clone();
        for cut in 0..whole.len() {
            assert!(bound(&whole[..cut], &[None]).is_err(), "cut at {cut}");
        }
        let mut bad = whole.clone();
        bad[4] = 9;
        assert!(bound(&bad, &[None]).is_err());
        let mut w = Writer::default();
        w.u32(1).tag(1).u32(1).bytes(5, &[0xff]);
        assert!(bound(&w.0, &[None]).is_err());
    }
}
