//! resq-wasm: SQLite for offline web apps, in a dedicated Web Worker.
//!
//! The crate has two trees, and the compiler keeps them apart:
//!
//! - [`codec`] is pure Rust: the value model, parameter checks, the JSON
//!   encoder behind `queryBytes`, error codes. It knows nothing of JS, the
//!   browser or SQLite's C API, and `cargo test` runs it natively.
//! - `worker` (wasm32 only) is the glue: wasm-bindgen, the SQLite connection,
//!   storage (OPFS or memory). Its dependencies exist only for
//!   `target_arch = "wasm32"`, so the core cannot reach them by accident.
//!
//! The page-side client (`src/js/`) talks to `worker` through `postMessage`;
//! the page never loads the wasm.

pub mod codec;

#[cfg(target_arch = "wasm32")]
pub mod worker;
