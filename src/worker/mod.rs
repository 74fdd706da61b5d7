//! The wasm side of the worker: one SQLite connection per worker, driven by
//! the worker bootstrap (`src/js/worker.ts`) through [`entry::Connection`].
//!
//! - `entry`: the wasm-bindgen surface, JS values in and out.
//! - `db`: the connection, its statement cache, execute/query loops.
//! - `blobs`: `Blob`/`File` parameters streamed into rows, ranged reads.
//! - `convert`: JS parameter values into the core's [`crate::codec::Value`].
//! - `storage`: OPFS (one sync-access-handle pool per database) or memory.

mod blobs;
mod convert;
mod db;
mod entry;
mod storage;

pub use entry::{wasm_memory_bytes, Connection};
