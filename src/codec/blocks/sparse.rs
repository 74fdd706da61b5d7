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

/// The sparse block `runs` with `bytes` written at `within`, or `None` when
/// it would keep more than `max` bytes.
pub(super) fn sparse_write(runs: &[u8], within: usize, bytes: &[u8], max: usize) -> Option<Box<[u8]>> {
    let end = within + bytes.len();
    let mut out: Vec<(usize, &[u8])> = Vec::new();
    // What lies before and after the write, of the runs it overlaps.
    for (at, run) in Runs(runs) {
        let run_end = at + run.len();
        if at < within {
            out.push((at, &run[..run.len().min(within - at)]));
        }
        if run_end > end {
            let from = end.max(at);
            out.push((from, &run[from - at..]));
        }
    }
    // The written bytes' runs of non-zeros.
    let mut kept: usize = out.iter().map(|(_, r)| 4 + r.len()).sum();
    let mut i = 0;
    while i < bytes.len() {
        let Some(start) = first_nonzero(&bytes[i..]).map(|p| i + p) else { break };
        let mut stop = start;
        let mut zeros = 0;
        let mut j = start;
        while j < bytes.len() && zeros < GAP {
            if bytes[j] == 0 {
                zeros += 1;
            } else {
                zeros = 0;
                stop = j + 1;
            }
            j += 1;
        }
        kept += 4 + stop - start;
        if kept > max {
            return None;
        }
        out.push((within + start, &bytes[start..stop]));
        i = stop;
    }
    if kept > max {
        return None;
    }
    out.sort_unstable_by_key(|&(at, _)| at);
    let mut enc = Vec::with_capacity(kept);
    for (at, run) in out.into_iter().filter(|(_, r)| !r.is_empty()) {
        enc.extend_from_slice(&(at as u16).to_le_bytes());
        enc.extend_from_slice(&(run.len() as u16).to_le_bytes());
        enc.extend_from_slice(run);
    }
    Some(enc.into_boxed_slice())
}
