//! The pure core: everything that can be decided without JS or SQLite.
//!
//! ```
//! use resq_wasm::codec::json::JsonWriter;
//! let mut w = JsonWriter::default();
//! w.begin_rows();
//! w.begin_row();
//! w.key(b"id");
//! w.integer(1);
//! w.key(b"data");
//! w.blob(b"hi");
//! w.end_row();
//! w.end_rows();
//! assert_eq!(w.as_bytes(), br#"[{"id":1,"data":"aGk="}]"#);
//! ```

pub mod ahead;
pub mod backup;
pub mod batch;
pub mod blocks;
pub mod changes;
pub mod error;
pub mod frames;
pub mod hash;
pub mod json;
pub mod locks;
pub mod name;
pub mod params;
pub mod placement;
pub mod schema;
pub mod sql;
pub mod stream;
pub mod value;
pub mod wire;
pub mod writes;

pub use error::{Error, Result};
pub use value::Value;
