//! Property tests of the pure core: the decoders and the JSON encoder, fed
//! inputs no table test thinks of. `cargo fuzz` needs a nightly toolchain;
//! proptest runs on stable, natively, inside `cargo test`.
//!
//! - The `queryBytes` encoder always writes valid UTF-8 and valid JSON (RFC
//!   8259, checked by the strict parser below) that reads back to the cells
//!   written: integers and reals exactly, text with each invalid UTF-8
//!   sequence as U+FFFD, BLOBs as base64 of their bytes.
//! - `params::plan`, `value::blob_range`, `name::check` and the `sql`
//!   helpers never panic, and agree with a plain restatement of their rule.
//!
//! Cases per property are set so the whole native `cargo test` stays quick;
//! `PROPTEST_CASES=100000 cargo test --test codec_props` runs more, and
//! `PROPTEST_RNG_SEED=<n>` repeats a run.
#![cfg(not(target_arch = "wasm32"))]

mod encoder;
mod params;
mod sql;
mod strict_json;

use proptest::prelude::ProptestConfig;
use proptest::test_runner::FileFailurePersistence;

/// Cases for one property; `PROPTEST_CASES` overrides the default.
pub(crate) fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(cases);
    // Counterexamples found are kept as table cases in the modules' own
    // tests, not as regression files.
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}
