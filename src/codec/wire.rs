//! The shape of a `query()` result as it crosses from the worker to the page.
//! Mirrored in `src/js/protocol.ts`; change both together.
//!
//! `queryBytes()` sends its JSON as it is. `query()` sends the same JSON with
//! the cells JSON cannot carry well swapped for placeholders, and a flat list
//! of fix-ups the page applies after one `JSON.parse`:
//!
//! | kind | placeholder in the JSON | `a`, `b` | page sets the cell to |
//! |---|---|---|---|
//! | [`FIX_BLOB_INLINE`] | `null` | offset, length in the `side` buffer | a copy of those bytes |
//! | [`FIX_BLOB_OWN`] | `null` | index in `buffers` | that transferred buffer, whole |
//! | [`FIX_BIGINT`] | `"digits"` | unused | `BigInt(digits)` |
//!
//! Each fix-up is five numbers: row, column, kind, a, b. BLOBs at or above
//! the connection's transfer threshold get a buffer of their own (moved, not
//! copied, to the page); smaller ones share the `side` buffer.

pub const FIX_BLOB_INLINE: f64 = 0.0;
pub const FIX_BLOB_OWN: f64 = 1.0;
pub const FIX_BIGINT: f64 = 2.0;

/// Fix-ups for one result, reused between calls.
#[derive(Debug, Default)]
pub struct Fixups {
    pub cells: Vec<f64>,
    /// Small BLOB bytes, back to back.
    pub side: Vec<u8>,
}

impl Fixups {
    pub fn clear(&mut self) {
        self.cells.clear();
        self.side.clear();
        if self.side.capacity() > super::json::KEEP_BYTES {
            self.side = Vec::new();
        }
    }

    pub fn push(&mut self, row: usize, col: usize, kind: f64, a: usize, b: usize) {
        self.cells.extend_from_slice(&[row as f64, col as f64, kind, a as f64, b as f64]);
    }

    /// Keeps a small BLOB in `side` and records where it is.
    pub fn inline_blob(&mut self, row: usize, col: usize, bytes: &[u8]) {
        let at = self.side.len();
        self.side.extend_from_slice(bytes);
        self.push(row, col, FIX_BLOB_INLINE, at, bytes.len());
    }
}

/// For each column, whether it is the last one with its name. Only those
/// reach the page's row objects (the last duplicate wins, as in `JSON.parse`),
/// so only those need fix-ups.
pub fn last_of_name<T: PartialEq>(names: &[T]) -> Vec<bool> {
    (0..names.len()).map(|i| !names[i + 1..].contains(&names[i])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates() {
        assert_eq!(last_of_name(&["a", "b", "a", "c"]), vec![false, true, true, true]);
        assert_eq!(last_of_name::<&str>(&[]), Vec::<bool>::new());
    }

    #[test]
    fn fixups() {
        let mut f = Fixups::default();
        f.inline_blob(0, 3, b"abc");
        f.inline_blob(1, 3, b"de");
        f.push(1, 0, FIX_BIGINT, 0, 0);
        assert_eq!(f.side, b"abcde");
        assert_eq!(f.cells, vec![0.0, 3.0, 0.0, 0.0, 3.0, 1.0, 3.0, 0.0, 3.0, 2.0, 1.0, 0.0, 2.0, 0.0, 0.0]);
        f.clear();
        assert!(f.cells.is_empty() && f.side.is_empty());
    }
}
