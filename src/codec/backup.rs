//! What a database file must look like before `importDatabase` lets it
//! replace a database: the checks that need only its size and its first 100
//! bytes (SQLite's file header), made before SQLite opens it. SQLite's own
//! `PRAGMA quick_check` then looks at every page.
//!
//! | the file | refused with |
//! |---|---|
//! | empty, shorter than a header, not starting with `SQLite format 3\0`, an impossible page size or payload fractions, a format version above 2 | `SQLITE_NOTADB` |
//! | not a whole number of pages, or not the number of pages its header gives | `SQLITE_CORRUPT` |
//!
//! A WAL-mode file (format versions 2) is taken as it stands at its last
//! checkpoint, as a rollback-journal file: [`as_rollback_journal`] shows its
//! version bytes as 1 to SQLite, so the database it replaces keeps its
//! journal mode.
//!
//! ```
//! use resq_wasm::codec::backup::check_header;
//! let mut head = [0u8; 100];
//! head[..16].copy_from_slice(b"SQLite format 3\0");
//! head[16..18].copy_from_slice(&4096u16.to_be_bytes());
//! head[18..24].copy_from_slice(&[1, 1, 0, 64, 32, 32]);
//! assert_eq!(check_header(&head, 8192).unwrap().page_size, 4096);
//! assert_eq!(check_header(&head, 6000).unwrap_err().code(), "SQLITE_CORRUPT");
//! assert_eq!(check_header(b"PK\x03\x04", 4).unwrap_err().code(), "SQLITE_NOTADB");
//! ```

use super::{Error, Result};

/// Bytes of SQLite's file header.
pub const HEADER_LEN: usize = 100;

const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// SQLite's codes for the two ways a file is refused.
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_NOTADB: i32 = 26;

/// What the header says, once checked.
#[derive(Debug, PartialEq)]
pub struct Header {
    pub page_size: u64,
    pub pages: u64,
}

fn not_a_database(why: &str) -> Error {
    Error::Sqlite { errno: SQLITE_NOTADB, message: format!("the file is not an SQLite database: {why}") }
}

fn damaged(why: String) -> Error {
    Error::Sqlite { errno: SQLITE_CORRUPT, message: format!("the database file is damaged: {why}") }
}

/// Checks a file of `size` bytes whose first bytes are `head` (at least
/// [`HEADER_LEN`] of them when the file has that many).
pub fn check_header(head: &[u8], size: u64) -> Result<Header> {
    if size == 0 {
        return Err(not_a_database("it is empty"));
    }
    if size < HEADER_LEN as u64 || head.len() < HEADER_LEN {
        return Err(not_a_database(&format!("{size} bytes is shorter than an SQLite header")));
    }
    if &head[..16] != MAGIC {
        return Err(not_a_database("it does not start with \"SQLite format 3\""));
    }
    let page_size = layout(head)?;
    if !size.is_multiple_of(page_size) {
        return Err(damaged(format!("{size} bytes is not a whole number of {page_size}-byte pages (truncated?)")));
    }
    let pages = size / page_size;
    // The page count in the header counts only while the "version valid
    // for" number matches the change counter (a file an older SQLite
    // wrote may not keep it up to date); then it must be the file's.
    let word = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]) as u64;
    let (said, counter, valid_for) = (word(28), word(24), word(92));
    if said != 0 && counter == valid_for && said != pages {
        return Err(damaged(format!(
            "its header gives {said} pages of {page_size} bytes, but the file holds {pages} (truncated or cut short?)"
        )));
    }
    Ok(Header { page_size, pages })
}

/// Bytes 16 to 23 of the header (in the clear in an encrypted file too):
/// the page size, the format versions, the reserved bytes per page and the
/// payload fractions. Returns the page size.
pub fn layout(head: &[u8]) -> Result<u64> {
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536,
        n if n >= 512 && n.is_power_of_two() => n as u64,
        n => return Err(not_a_database(&format!("its page size ({n}) is not one SQLite uses"))),
    };
    // Versions 1 (rollback journal) and 2 (WAL), the same for reading and
    // writing; above 2 SQLite refuses to read (or to write) the file.
    if !matches!((head[18], head[19]), (1, 1) | (2, 2)) {
        return Err(not_a_database(&format!(
            "its file format versions ({}, {}) are not ones SQLite 3 reads and writes",
            head[18], head[19]
        )));
    }
    if head[21..24] != [64, 32, 32] {
        return Err(not_a_database("its payload fractions are not SQLite's"));
    }
    Ok(page_size)
}

/// Whether a file whose first bytes are `head` is an encrypted database, as
/// SQLite3 Multiple Ciphers writes one: its first 16 bytes are not SQLite's
/// (they are the key's salt), and bytes 16 to 23 are SQLite's header in the
/// clear, with bytes reserved on each page (for the cipher's nonce and tag).
///
/// ```
/// use resq_wasm::codec::backup::looks_encrypted;
/// let mut head = [0xa7u8; 24];
/// head[16..24].copy_from_slice(&[0x20, 0x00, 1, 1, 32, 64, 32, 32]);
/// assert!(looks_encrypted(&head));
/// head[20] = 0;
/// assert!(!looks_encrypted(&head), "no bytes reserved for a cipher");
/// assert!(!looks_encrypted(b"hello, this is a text file"));
/// ```
pub fn looks_encrypted(head: &[u8]) -> bool {
    head.len() >= 24 && &head[..16] != MAGIC && head[20] > 0 && layout(head).is_ok()
}

/// Whether a file whose first bytes are `head` starts as a plain SQLite
/// database does.
pub fn looks_plain(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Shows a WAL-mode header as a rollback-journal one: `bytes` were read from
/// offset `at` of the file; the format version bytes (18 and 19), if they
/// are among them and both 2, become 1.
pub fn as_rollback_journal(bytes: &mut [u8], at: u64) {
    let (start, end) = (at, at + bytes.len() as u64);
    if start <= 18 && end >= 20 {
        let i = (18 - start) as usize;
        if bytes[i] == 2 && bytes[i + 1] == 2 {
            bytes[i] = 1;
            bytes[i + 1] = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid header: 4096-byte pages, `pages` of them in the header.
    fn header(pages: u32) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN];
        h[..16].copy_from_slice(MAGIC);
        h[16..18].copy_from_slice(&4096u16.to_be_bytes());
        h[18..24].copy_from_slice(&[1, 1, 0, 64, 32, 32]);
        h[24..28].copy_from_slice(&7u32.to_be_bytes());
        h[28..32].copy_from_slice(&pages.to_be_bytes());
        h[92..96].copy_from_slice(&7u32.to_be_bytes());
        h
    }

    fn with(mut h: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
        h[at..at + bytes.len()].copy_from_slice(bytes);
        h
    }

    #[test]
    fn headers() {
        let check = |head: Vec<u8>, size: u64, expected: Result<(u64, u64), (&str, &str)>| {
            let got = check_header(&head, size).map(|h| (h.page_size, h.pages)).map_err(|e| (e.code(), e.to_string()));
            match (got, expected) {
                (Ok(g), Ok(e)) => assert_eq!(g, e),
                (Err((code, message)), Err((want_code, want_text))) => {
                    assert_eq!(code, want_code, "{message}");
                    assert!(message.contains(want_text), "{message} lacks {want_text}");
                }
                (got, expected) => panic!("{got:?} where {expected:?} was expected"),
            }
        };
        check(header(2), 8192, Ok((4096, 2)));
        // A header page count that is not kept up to date is not held against the file.
        check(with(header(5), 92, &[0, 0, 0, 6]), 8192, Ok((4096, 2)));
        check(with(header(0), 0, &[]), 8192, Ok((4096, 2)));
        check(with(header(1), 16, &[0, 1]), 65536, Ok((65536, 1)));
        check(with(header(1), 18, &[2, 2]), 4096, Ok((4096, 1)));
        check(Vec::new(), 0, Err(("SQLITE_NOTADB", "empty")));
        check(header(1)[..50].to_vec(), 50, Err(("SQLITE_NOTADB", "shorter than")));
        check(with(header(1), 0, b"SQLite format 4"), 4096, Err(("SQLITE_NOTADB", "does not start")));
        check(with(header(1), 16, &[0x03, 0xe8]), 4096, Err(("SQLITE_NOTADB", "page size (1000)")));
        check(with(header(1), 16, &[0, 0]), 4096, Err(("SQLITE_NOTADB", "page size (0)")));
        check(with(header(1), 18, &[1, 3]), 4096, Err(("SQLITE_NOTADB", "versions (1, 3)")));
        check(with(header(1), 18, &[3, 1]), 4096, Err(("SQLITE_NOTADB", "versions (3, 1)")));
        check(with(header(1), 18, &[1, 2]), 4096, Err(("SQLITE_NOTADB", "versions (1, 2)")));
        check(with(header(1), 21, &[65]), 4096, Err(("SQLITE_NOTADB", "payload fractions")));
        check(header(3), 3 * 4096 - 100, Err(("SQLITE_CORRUPT", "not a whole number")));
        check(header(3), 2 * 4096, Err(("SQLITE_CORRUPT", "gives 3 pages")));
        check(header(3), 4 * 4096, Err(("SQLITE_CORRUPT", "holds 4")));
    }

    #[test]
    fn wal_version_bytes_read_as_rollback_journal_ones() {
        let wal = with(header(1), 18, &[2, 2]);
        let mut whole = wal.clone();
        as_rollback_journal(&mut whole, 0);
        assert_eq!(&whole[18..20], &[1, 1]);
        assert_eq!(whole[..18], wal[..18]);
        assert_eq!(whole[20..], wal[20..]);
        // Reads that miss the two bytes, or hold only one of them, are left as they are.
        let mut part = wal[20..40].to_vec();
        as_rollback_journal(&mut part, 20);
        assert_eq!(part, wal[20..40]);
        let mut one = wal[10..19].to_vec();
        as_rollback_journal(&mut one, 10);
        assert_eq!(one, wal[10..19]);
        // From an offset into the header, as a short read of it.
        let mut tail = wal[16..24].to_vec();
        as_rollback_journal(&mut tail, 16);
        assert_eq!(&tail[2..4], &[1, 1]);
        // Bytes that are not both 2 stay as they are.
        let mut rollback = header(1);
        as_rollback_journal(&mut rollback, 0);
        assert_eq!(rollback, header(1));
    }
}
