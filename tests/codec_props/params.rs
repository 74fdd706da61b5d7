//! Parameters and blob ranges: `params::plan` and `value::blob_range` never panic and agree with a plain restatement of their rule.

use crate::config;
use proptest::prelude::*;
use resq_wasm::codec::params::{plan, Supplied};
use resq_wasm::codec::value::blob_range;
use resq_wasm::codec::Error;

/// Parameter names as SQLite reports them, and object keys: close to each
/// other often, so matches and near-misses both happen.
fn param_name() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        "[:@$?][a-c]{0,2}".prop_map(Some),
        "[:@$]?[a-cé]{0,2}".prop_map(Some),
        any::<String>().prop_map(Some),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof!["[a-c]{0,2}", "[a-cé:@$]{0,3}", any::<String>()]
}

#[derive(Debug, Clone)]
enum Shape {
    None,
    Positional(usize),
    Named(Vec<String>),
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::None),
        (0usize..12).prop_map(Shape::Positional),
        prop::collection::vec(key(), 0..6).prop_map(Shape::Named)
    ]
}

proptest! {
    #![proptest_config(config(3000))]

    /// `plan` never panics; it fails only with RESQ_BAD_PARAM; a plan it
    /// returns gives every SQL parameter a value that exists, the right one.
    #[test]
    fn params_plan_is_total_and_right(names in prop::collection::vec(param_name(), 0..8), shape in shape()) {
        let supplied = match &shape {
            Shape::None => Supplied::None,
            Shape::Positional(n) => Supplied::Positional(*n),
            Shape::Named(keys) => Supplied::Named(keys),
        };
        match plan(&names, supplied) {
            Err(e) => prop_assert!(matches!(e, Error::BadParam(_)), "{:?}", e),
            Ok(slots) => {
                prop_assert_eq!(slots.len(), names.len());
                match &shape {
                    Shape::None => prop_assert!(names.is_empty()),
                    Shape::Positional(n) => {
                        prop_assert_eq!(*n, names.len());
                        for (i, s) in slots.iter().enumerate() {
                            prop_assert_eq!(s.value, i);
                        }
                    }
                    Shape::Named(keys) => {
                        for (name, s) in names.iter().zip(&slots) {
                            let name = name.as_deref().unwrap_or("");
                            prop_assert!(name.starts_with([':', '@', '$']));
                            prop_assert_eq!(&keys[s.value], &name[1..]);
                            prop_assert!(s.label.describe(keys).ends_with(&keys[s.value]));
                        }
                        for k in 0..keys.len() {
                            prop_assert!(slots.iter().any(|s| s.value == k), "key {} unused", k);
                        }
                    }
                }
            }
        }
    }
}

/// `blob_range`'s rule, stated with exact integers: offset, then length,
/// each a whole number (else RESQ_BAD_PARAM) within the value (else
/// RESQ_RANGE); the length defaults to the rest of the value.
fn range_rule(size: u64, offset: Option<f64>, length: Option<f64>) -> Result<(u64, u64), &'static str> {
    const TWO_64: f64 = 18446744073709551616.0;
    let whole = |v: f64| v.is_finite() && v.fract() == 0.0;
    let o = offset.unwrap_or(0.0);
    if !whole(o) {
        return Err("RESQ_BAD_PARAM");
    }
    if !(0.0..TWO_64).contains(&o) || o as u64 > size {
        return Err("RESQ_RANGE");
    }
    let o = o as u64;
    let l = match length {
        None => size - o,
        Some(l) if !whole(l) => return Err("RESQ_BAD_PARAM"),
        Some(l) if !(0.0..TWO_64).contains(&l) => return Err("RESQ_RANGE"),
        Some(l) => l as u64,
    };
    match o.checked_add(l) {
        Some(end) if end <= size => Ok((o, l)),
        _ => Err("RESQ_RANGE"),
    }
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..64, 0u64..=(i32::MAX as u64), (1u64 << 53) - 4..(1u64 << 53) + 16, any::<u64>(), Just(u64::MAX)]
}

/// Offsets and lengths: near the size, small, and every kind of double.
fn bound(size: u64) -> impl Strategy<Value = Option<f64>> {
    let s = size as f64;
    prop_oneof![
        Just(None),
        (-3i64..4).prop_map(move |d| Some(s + d as f64)),
        (-2i64..6).prop_map(|n| Some(n as f64)),
        Just(Some(-0.0)),
        Just(Some(1.5)),
        Just(Some(f64::NAN)),
        Just(Some(f64::INFINITY)),
        Just(Some(18446744073709551616.0)),
        prop::num::f64::ANY.prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(config(4000))]

    /// `blob_range` never panics, agrees with the exact rule, and what it
    /// returns lies within the value.
    #[test]
    fn blob_range_stays_within_the_value((size, offset, length) in size().prop_flat_map(|n| (Just(n), bound(n), bound(n)))) {
        let got = blob_range(size, offset, length);
        if let Ok((o, l)) = got {
            prop_assert!(o.checked_add(l).is_some_and(|end| end <= size), "({}, {}) of {}", o, l, size);
        }
        prop_assert_eq!(got.map_err(|e| e.code()), range_rule(size, offset, length));
    }
}
