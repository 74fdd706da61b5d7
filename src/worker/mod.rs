//! The wasm side of the worker: one SQLite connection per worker, driven by
//! the worker bootstrap (`src/js/worker.ts`) through [`entry::Connection`].
//! Dependencies run one way, top to bottom:
//!
//! - `entry`: the wasm-bindgen surface; JS values in and out (with `convert`).
//! - `snapshots`: `blobStream`s read on readers of their own, each
//!   holding its snapshot and its place in the value.
//! - `convert`: JS parameter values into the core's [`crate::codec::Value`].
//! - `storage`: OPFS (one sync-access-handle pool per database) or memory.
//! - `gather`: the VFS over the pool that writes contiguous writes as one.
//! - `db`: the connection as the package uses it: statement cache, the
//!   execute/query/batch loops, savepoints; streamed values written after
//!   their call (`db::streamed`); export and import (`db::file`). Rust
//!   values only.
//! - `calls`: the record of following tabs' calls (exactly once across a
//!   change of leader), kept in the database beside their writes.
//! - `backup`: the database as a file: its pages read out in order
//!   (`export`), a file checked and copied over it (`importDatabase`).
//! - `source`: the read-only VFS an imported file is opened through.
//! - `tables`: the tables a live query reads (`queryTables`).
//! - `hooks`: the connection's update, pre-update, commit and rollback
//!   hooks, installed once and told to the parts below that listen.
//! - `streams`: `Blob`/`File` parameters streamed into their cells.
//! - `reads`: ranged reads of stored BLOBs, `blobStream` sessions.
//! - `seal`: the encrypted build's temp space, sealed a block at a time
//!   (ChaCha20-Poly1305) for the worker's staged values.
//! - `cipher`: opening a connection, keyed for encryption at rest
//!   (SQLite3 Multiple Ciphers' VFS over the gathering one) in the build
//!   with ciphers.
//! - `conn`: the SQLite handle: errors, prepare (with the authorizer
//!   listening, when asked), step, blob open.
//! - `handle`: owners that finalize statements and close blob handles.

mod backfill;
mod backup;
mod cache;
mod calls;
mod cipher;
mod conn;
mod convert;
mod db;
mod entry;
mod gather;
mod handle;
mod hooks;
mod idb;
mod journal;
mod reads;
mod rows;
mod seal;
mod snapshots;
mod source;
mod storage;
mod streams;
mod tables;

pub use entry::{sql_limit, stream_limit, transaction_end, Connection};
pub use seal::Sealer;
