//! Which database names `open()` takes. A name that SQLite would turn into a
//! memory database (`:memory:`, a `file:` URI with `mode=memory`, …) is
//! refused when persistent storage was asked for: it must never become a
//! memory database silently.

use super::{Error, Result};

/// Checks `name` for `storage` (`"opfs"`, `"idb"`, `"memory"`, or `"default"`
/// for a file name: see `worker::storage`).
pub fn check(name: &str, storage: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::BadParam("a database name cannot be empty (SQLite would make a temporary database)".into()));
    }
    if name.contains('\0') {
        return Err(Error::BadParam("a database name cannot contain a NUL character".into()));
    }
    // This SQLite reads `file:` names as URIs (SQLITE_USE_URI), whose
    // parameters can pick a memory database or another VFS.
    // Bytes, not `&name[..5]`: that slice panics (a worker death) when a
    // character such as the `т` of "фото.db" straddles byte 5.
    if name.len() >= 5 && name.as_bytes()[..5].eq_ignore_ascii_case(b"file:") {
        return Err(Error::BadParam(format!(
            "{name:?} is a URI; open() takes a plain file name (such as \"media.db\") and the storage option"
        )));
    }
    match storage {
        "opfs" | "idb" | "default" if name == ":memory:" => Err(Error::BadParam(
            "':memory:' cannot be persistent: use open(':memory:') for a memory database, or a file name for OPFS"
                .into(),
        )),
        "opfs" | "idb" | "memory" | "default" => Ok(()),
        other => Err(Error::BadParam(format!("unknown storage {other:?}; use 'opfs', 'idb' or 'memory'"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let check = |name: &str, storage: &str, ok: bool| {
            let got = check(name, storage);
            assert_eq!(got.is_ok(), ok, "{name:?} {storage}: {got:?}");
            if let Err(e) = got {
                assert_eq!(e.code(), "RESQ_BAD_PARAM");
            }
        };
        check("media.db", "opfs", true);
        check("media.db", "memory", true);
        check(":memory:", "memory", true);
        check(":memory:", "opfs", false);
        check("file:x?mode=memory", "opfs", false);
        check("FILE:x.db", "opfs", false);
        check("file:x.db", "memory", false);
        check("", "memory", false);
        check("a\0b", "opfs", false);
        check("x.db", "indexeddb", false);
        check("x.db", "idb", true);
        check(":memory:", "idb", false);
        check("profile:file.db", "opfs", true);
        // Multibyte characters across byte 5 (found by tests/codec_props.rs).
        check("фото.db", "opfs", true);
        check("é😀", "memory", true);
    }
}
