//! Media-sized parameters: when a `Blob`/`File` is bound as its bytes, and
//! the placeholder that stands in for it when it streams.
//!
//! A value below [`STREAM_LIMIT`] is read into the worker and bound as its
//! bytes, so SQL sees exactly the file. At or above it the value streams:
//! during the statement it is a [`Placeholder`], 32 bytes that no other value
//! of the connection holds; afterwards every cell that holds the placeholder
//! (the statement's own, and copies its triggers made) is resized and filled
//! with the value, chunk by chunk.
//!
//! ```
//! use resq_wasm::codec::stream::{Placeholders, PLACEHOLDER_LEN};
//! let mut p = Placeholders::new(7);
//! let (a, b) = (p.fresh(), p.fresh());
//! assert_ne!(a, b);
//! assert_eq!(a.len(), PLACEHOLDER_LEN);
//! ```

/// Smallest `Blob`/`File` that streams; smaller ones are bound as their
/// bytes. Measured in `benches/experiments/006-file-bind-limit.md`: below
/// it, reading the whole value into wasm memory costs no more than
/// streaming it, and the memory it claims stays small.
pub const STREAM_LIMIT: u64 = 4 << 20;

/// Bytes of a placeholder.
pub const PLACEHOLDER_LEN: usize = 32;

/// A fixed prefix no media file starts with: NUL, a name, NUL.
const PREFIX: &[u8; 16] = b"\0resq-wasm:blob\0";

pub type Placeholder = [u8; PLACEHOLDER_LEN];

/// Makes placeholders unique to one connection: the prefix, a random seed
/// given at open (so two connections, or a value stored by an earlier
/// session, never match), and a counter.
#[derive(Debug)]
pub struct Placeholders {
    seed: u64,
    count: u64,
}

impl Placeholders {
    pub fn new(seed: u64) -> Placeholders {
        Placeholders { seed, count: 0 }
    }

    pub fn fresh(&mut self) -> Placeholder {
        self.count += 1;
        let mut p = [0u8; PLACEHOLDER_LEN];
        p[..16].copy_from_slice(PREFIX);
        p[16..24].copy_from_slice(&self.seed.to_le_bytes());
        p[24..].copy_from_slice(&self.count.to_le_bytes());
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_differ_by_call_and_by_connection() {
        let mut a = Placeholders::new(1);
        let mut b = Placeholders::new(2);
        let (a1, a2, b1) = (a.fresh(), a.fresh(), b.fresh());
        assert_ne!(a1, a2);
        assert_ne!(a1, b1);
        assert!(a1.starts_with(PREFIX));
    }
}
