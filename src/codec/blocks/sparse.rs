//! A block held in memory that is zeros but for a few bytes, kept as those
//! bytes: runs, each its place in the block and its length (two bytes
//! each, little-endian) followed by its bytes, in order.

/// The runs of a sparse block: each one's place in the block and its bytes.
pub(super) struct Runs<'a>(pub &'a [u8]);

impl<'a> Iterator for Runs<'a> {
    type Item = (usize, &'a [u8]);

    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        let [a0, a1, l0, l1, rest @ ..] = self.0 else { return None };
        let (at, len) = (u16::from_le_bytes([*a0, *a1]) as usize, u16::from_le_bytes([*l0, *l1]) as usize);
        let (run, rest) = rest.split_at(len);
        self.0 = rest;
        Some((at, run))
    }
}

/// A sparse block's bytes, whole.
pub(super) fn dense(runs: &[u8], block: usize) -> Box<[u8]> {
    let mut bytes = vec![0u8; block].into_boxed_slice();
    for (at, run) in Runs(runs) {
        bytes[at..at + run.len()].copy_from_slice(run);
    }
    bytes
}

/// Where the first byte that is not zero is, read a word at a time.
fn first_nonzero(bytes: &[u8]) -> Option<usize> {
    let words = bytes.chunks_exact(8).take_while(|w| u64::from_ne_bytes((*w).try_into().expect("8 bytes")) == 0);
    let from = words.count() * 8;
    bytes[from..].iter().position(|&x| x != 0).map(|p| from + p)
}

/// Zero bytes between two runs that keep them apart: fewer cost less
/// written as they are than as another run's four bytes of place and length.
const GAP: usize = 8;

/// Appends a run to `enc` (none if it is empty).
fn put(enc: &mut Vec<u8>, at: usize, run: &[u8]) {
    if !run.is_empty() {
        enc.extend_from_slice(&(at as u16).to_le_bytes());
        enc.extend_from_slice(&(run.len() as u16).to_le_bytes());
        enc.extend_from_slice(run);
    }
}

/// The sparse block `runs` with `bytes` written at `within`, or `None` when
/// it would keep more than `max` bytes. A write of dense bytes is told
/// apart within about `max` of them, not scanned whole.
pub(super) fn sparse_write(runs: &[u8], within: usize, bytes: &[u8], max: usize) -> Option<Box<[u8]>> {
    let end = within + bytes.len();
    let mut enc = Vec::with_capacity(max);
    // In order: what lies before the write, of the runs there; the written
    // bytes' runs of non-zeros; what lies after it.
    for (at, run) in Runs(runs).filter(|&(at, _)| at < within) {
        put(&mut enc, at, &run[..run.len().min(within - at)]);
    }
    let mut i = 0;
    while let Some(start) = first_nonzero(&bytes[i..]).map(|p| i + p) {
        // The run's bytes may take what is left of `max` after its 4-byte head.
        let room = max.checked_sub(enc.len() + 4)?;
        let (mut stop, mut zeros, mut j) = (start, 0, start);
        while j < bytes.len() && zeros < GAP {
            if bytes[j] == 0 {
                zeros += 1;
            } else {
                zeros = 0;
                stop = j + 1;
                if stop - start > room {
                    return None;
                }
            }
            j += 1;
        }
        put(&mut enc, within + start, &bytes[start..stop]);
        i = stop;
    }
    for (at, run) in Runs(runs).filter(|&(at, run)| at + run.len() > end) {
        let from = end.max(at);
        put(&mut enc, from, &run[from - at..]);
    }
    (enc.len() <= max).then(|| enc.into_boxed_slice())
}
