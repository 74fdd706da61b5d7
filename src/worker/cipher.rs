//! Encryption at rest, in the build with SQLite3 Multiple Ciphers (the
//! `cipher` feature; the worker loads that wasm only for `open(name,
//! { key })`).
//!
//! SQLite3MC encrypts in a VFS of its own, made over the one a connection
//! names (`multipleciphers-<vfs>`): every page of the database and of its
//! journal is encrypted before it reaches the gathering VFS and the pool,
//! which see nothing else. The cipher is ChaCha20-Poly1305 (authenticated:
//! a page changed on disk fails to read), its key derived from a
//! passphrase with PBKDF2-HMAC-SHA256 (SQLite3MC's default iterations), or
//! 32 raw bytes used as they are.

use super::conn::Conn;
use crate::codec::backup::{looks_encrypted, looks_plain};
use crate::codec::{Error, Result};

/// A key as `open` takes it. Its bytes are zeroed when it is dropped.
pub enum Key {
    Passphrase(String),
    Raw([u8; 32]),
}

impl Key {
    /// What SQLite3MC takes: the passphrase's UTF-8, or `raw:` and the 32
    /// bytes (its marker for a key not to derive).
    #[cfg_attr(not(feature = "cipher"), allow(dead_code))]
    fn material(&self) -> Vec<u8> {
        match self {
            Key::Passphrase(p) => p.as_bytes().to_vec(),
            Key::Raw(k) => [b"raw:".as_slice(), k].concat(),
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        match self {
            // SAFETY: zero bytes are valid UTF-8.
            Key::Passphrase(p) => unsafe { p.as_bytes_mut().fill(0) },
            Key::Raw(k) => k.fill(0),
        }
    }
}

/// The VFS that encrypts over `inner` (SQLite3MC makes it at the first
/// open that names it).
fn vfs_over(inner: &str) -> String {
    format!("multipleciphers-{inner}")
}

/// Unregisters the VFS made over `inner`, if any: called once its
/// connections are closed, before `inner` goes.
pub fn release(inner: &str) {
    #[cfg(feature = "cipher")]
    if let Ok(name) = std::ffi::CString::new(vfs_over(inner)) {
        // SAFETY: SQLite3MC destroys only its own VFS, and only when no file
        // is open on it.
        unsafe { sqlite_wasm_rs::sqlite3mc_vfs_destroy(name.as_ptr()) };
    }
    #[cfg(not(feature = "cipher"))]
    let _ = inner;
}

/// Keys `conn` (opened on [`vfs_over`]) with `key`, then reads the schema:
/// a key that does not open the file (a wrong one, or one for a plain
/// file) is `RESQ_BAD_KEY`. A new, empty file is encrypted from its first
/// page on.
fn apply(conn: &Conn, key: &Key, name: &str) -> Result<()> {
    #[cfg(feature = "cipher")]
    {
        use sqlite_wasm_rs as ffi;
        let mut material = key.material();
        let cipher = c"cipher";
        // SAFETY: the connection is open; SQLite3MC copies what it keeps.
        let rc = unsafe {
            let chacha = ffi::sqlite3mc_cipher_index(c"chacha20".as_ptr());
            if ffi::sqlite3mc_config(conn.raw(), cipher.as_ptr(), chacha) != chacha {
                material.fill(0);
                return Err(Error::Unsupported("SQLite3 Multiple Ciphers has no chacha20 cipher in this build".into()));
            }
            ffi::sqlite3_key_v2(conn.raw(), c"main".as_ptr(), material.as_ptr().cast(), material.len() as i32)
        };
        material.fill(0);
        if rc != ffi::SQLITE_OK {
            return Err(conn.error(rc));
        }
        // Through another key the file reads as not a database, or, with a
        // hot journal SQLite cannot decrypt to roll back, as damaged; the
        // journal stays for the right key (benches/experiments/019-rekey.md).
        match conn.figure("SELECT count(*) FROM sqlite_schema").map(|_| ()) {
            Err(e) if e.errno().is_some_and(|n| n & 0xff == NOTADB || n & 0xff == CORRUPT) => Err(Error::BadKey(format!(
                "the key does not open {name}: it is another key, or {name} is not encrypted (an existing plain database is never encrypted by open), or it is damaged ({e})"
            ))),
            other => other,
        }
    }
    #[cfg(not(feature = "cipher"))]
    {
        let _ = (conn, key);
        Err(Error::Unsupported(format!("this wasm has no ciphers: {name} cannot be opened with a key")))
    }
}

/// The salt in the clear at the head of an encrypted database's file (its
/// first 16 bytes): what a passphrase's key is derived with. `None` for a
/// plain or empty file.
pub fn salt(conn: &Conn) -> Option<[u8; 16]> {
    let head = head(conn).filter(|h| conn.encrypted() && looks_encrypted(h))?;
    head[..16].try_into().ok()
}

/// `rekey`: re-encrypts the database of `conn` (opened with a key) under
/// `key`, 32 raw bytes, keeping the file's `salt`, every page rewritten in
/// one journaled transaction (SQLite3MC's `sqlite3_rekey_v2`). The journal
/// is written under the old key, and the salt stays, so a crash midway
/// leaves the old key working: SQLite3MC's own rekey of a passphrase
/// writes a new salt into page 1, and a crash then left neither key
/// working (benches/experiments/019-rekey.md).
pub fn rekey(conn: &Conn, key: &[u8; 32], salt: &[u8; 16]) -> Result<()> {
    if conn.in_transaction() {
        return Err(Error::BadParam("rekey() rewrites every page in a transaction of its own: end the open transaction (COMMIT or ROLLBACK) first".into()));
    }
    #[cfg(feature = "cipher")]
    {
        if self::salt(conn).as_ref() != Some(salt) {
            return Err(Error::BadParam("rekey(): the salt given is not the file's".into()));
        }
        // SQLite3MC's form for a raw key and its salt: used as they are.
        let mut material = [b"raw:".as_slice(), key, salt].concat();
        // SAFETY: the connection is open; SQLite3MC copies what it keeps.
        let rc = unsafe { sqlite_wasm_rs::sqlite3_rekey_v2(conn.raw(), c"main".as_ptr(), material.as_ptr().cast(), material.len() as i32) };
        material.fill(0);
        if rc != sqlite_wasm_rs::SQLITE_OK {
            return Err(conn.error(rc));
        }
        Ok(())
    }
    #[cfg(not(feature = "cipher"))]
    {
        let _ = (key, salt);
        Err(Error::Unsupported("rekey() needs the database opened with a key in this version (this wasm has no ciphers)".into()))
    }
}

/// SQLite's "file is not a database": what a file reads as through the
/// wrong key, or without one when it is encrypted.
#[cfg_attr(not(feature = "cipher"), allow(dead_code))]
const NOTADB: i32 = 26;
#[cfg_attr(not(feature = "cipher"), allow(dead_code))]
const CORRUPT: i32 = 11;

/// Opens `name` on `vfs` (`None`: memory), keyed with `key` if given (on
/// the encrypting VFS over `vfs`; a memory database takes none).
///
/// Before SQLite reads anything, the file's first bytes say whether it is
/// encrypted: a key for a plain file, or none for an encrypted one, is
/// refused then. After a crash the file has a hot journal, and SQLite rolls
/// it back at its first read: through the wrong layer (no key for an
/// encrypted file) the journal's checksums fail and it would be dropped
/// unplayed, the database left half-written for good.
pub fn open(name: &str, vfs: Option<&str>, key: Option<&Key>) -> Result<Conn> {
    match (vfs, key) {
        (Some(vfs), Some(key)) => {
            let mut conn = Conn::open(name, Some(&vfs_over(vfs)))?;
            conn.set_encrypted();
            if head(&conn).is_some_and(|h| looks_plain(&h)) {
                return Err(Error::BadKey(format!("{name} is not encrypted: open it without a key (an existing plain database is never encrypted by open)")));
            }
            apply(&conn, key, name)?;
            Ok(conn)
        }
        (None, Some(_)) => Err(Error::BadParam("a memory database is never on disk: it takes no key".into())),
        (Some(vfs), None) => {
            let conn = Conn::open(name, Some(vfs))?;
            if head(&conn).is_some_and(|h| looks_encrypted(&h)) {
                return Err(Error::BadKey(format!("{name} is encrypted: open it with its key")));
            }
            Ok(conn)
        }
        (None, None) => Conn::open(name, None),
    }
}

/// Opens the file `name` on `vfs` read-only and untrusted (an imported
/// file: see [`Conn::open_untrusted`]), keyed with `key` if given. A key
/// that does not open it is `RESQ_BAD_KEY`.
pub fn open_untrusted(name: &str, vfs: &str, key: Option<&Key>) -> Result<Conn> {
    let Some(key) = key else { return Conn::open_untrusted(name, vfs) };
    let mut conn = Conn::open_untrusted(name, &vfs_over(vfs))?;
    conn.set_encrypted();
    apply(&conn, key, "the imported file")?;
    Ok(conn)
}

/// Whether the database of `conn` is encrypted now: opened with a key,
/// and not made plain by `rekey(null)` since.
pub fn keyed(conn: &Conn) -> bool {
    conn.encrypted() && !head(conn).is_some_and(|h| looks_plain(&h))
}

/// The first 24 bytes of the database file as on disk, if it has them.
fn head(conn: &Conn) -> Option<[u8; 24]> {
    let file = conn.main_file()?;
    let mut head = [0u8; 24];
    // SAFETY: the connection's file is open; `head` is live for the call.
    let rc = unsafe { ((*(*file).pMethods).xRead.expect("files read"))(file, head.as_mut_ptr().cast(), head.len() as i32, 0) };
    (rc == sqlite_wasm_rs::SQLITE_OK).then_some(head)
}
