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
#[derive(Clone)]
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

/// SQLite3MC's `CHACHA20_KDF_ITER_DEFAULT`: the PBKDF2 iterations of a
/// passphrase's key.
#[cfg(feature = "cipher")]
const KDF_ITERATIONS: u32 = 64007;

impl Key {
    /// The 32-byte key this is with the file's `salt`: a passphrase derived
    /// as SQLite3MC derives it (PBKDF2-HMAC-SHA256), raw bytes as they are.
    #[cfg(feature = "cipher")]
    fn derived(&self, salt: &[u8; 16]) -> [u8; 32] {
        match self {
            Key::Passphrase(p) => pbkdf2::pbkdf2_hmac_array::<sha2::Sha256, 32>(p.as_bytes(), salt, KDF_ITERATIONS),
            Key::Raw(k) => *k,
        }
    }

    /// What SQLite3MC takes for this key with `salt` given, not read from
    /// the file: `raw:`, the derived key and the salt.
    #[cfg(feature = "cipher")]
    fn material_with(&self, salt: &[u8; 16]) -> Vec<u8> {
        let mut key = self.derived(salt);
        let material = [b"raw:".as_slice(), &key, salt].concat();
        key.fill(0);
        material
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
    return apply_material(conn, key.material(), name);
    #[cfg(not(feature = "cipher"))]
    {
        let _ = (conn, key);
        Err(Error::Unsupported(format!("this wasm has no ciphers: {name} cannot be opened with a key")))
    }
}

/// [`apply`] with SQLite3MC's key material (zeroed here after use).
#[cfg(feature = "cipher")]
fn apply_material(conn: &Conn, mut material: Vec<u8>, name: &str) -> Result<()> {
    {
        use sqlite_wasm_rs as ffi;
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
}

/// The salt in the clear at the head of an encrypted database's file (its
/// first 16 bytes): what a passphrase's key is derived with. `None` for a
/// plain or empty file.
#[cfg(feature = "cipher")]
fn salt(conn: &Conn) -> Option<[u8; 16]> {
    let head = head(conn).filter(|h| conn.encrypted() && looks_encrypted(h))?;
    head[..16].try_into().ok()
}

/// `rekey`: re-encrypts the database of `conn` (opened with a key) under
/// `key`, or decrypts it (`None`), every page rewritten in one journaled
/// transaction (SQLite3MC's `sqlite3_rekey_v2`; decrypting, a VACUUM, as
/// the pages lose the bytes reserved for the cipher). The journal is
/// written under the old key, so a crash midway leaves the old key
/// working:
///
/// - a new key keeps the file's salt (derived here with it, and given to
///   SQLite3MC as a raw key and that salt): SQLite3MC's own rekey of a
///   passphrase writes a new salt into page 1, and a crash then left
///   neither key working (benches/experiments/019-rekey.md);
/// - decrypting writes page 1 plain, salt gone, before the rest: [`open`]
///   then finds the salt in the journal's copy of page 1.
///
/// A plain database is left plain by `None`, and encrypted by `Some` (on
/// the encrypting VFS, as every connection of the build with ciphers is;
/// the journal then is plain, and after a crash midway it opens without a key).
pub fn rekey(conn: &Conn, key: Option<&Key>) -> Result<()> {
    if conn.in_transaction() {
        return Err(Error::BadParam("rekey() rewrites every page in a transaction of its own: end the open transaction (COMMIT or ROLLBACK) first".into()));
    }
    #[cfg(feature = "cipher")]
    {
        let salt = self::salt(conn);
        let mut material = match (key, salt) {
            (None, None) => return Ok(()),
            (None, Some(_)) => Vec::new(),
            (Some(key), Some(salt)) => key.material_with(&salt),
            // Plain, on the encrypting VFS: SQLite3MC makes the salt (a
            // VACUUM, as the pages gain the bytes the cipher reserves).
            (Some(key), None) if conn.encrypted() => {
                encryptable(conn, "the database")?;
                key.material()
            }
            (Some(_), None) => {
                return Err(Error::Unsupported("rekey(key): this connection is not on the encrypting VFS".into()))
            }
        };
        let (ptr, len) =
            if material.is_empty() { (std::ptr::null(), 0) } else { (material.as_ptr().cast(), material.len() as i32) };
        // On the rollback journal: see `journal.rs`.
        let rekeyed = super::journal::off_wal(conn, || {
            // SAFETY: the connection is open; SQLite3MC copies what it keeps.
            match unsafe { sqlite_wasm_rs::sqlite3_rekey_v2(conn.raw(), c"main".as_ptr(), ptr, len) } {
                sqlite_wasm_rs::SQLITE_OK => Ok(()),
                rc => Err(conn.error(rc)),
            }
        });
        material.fill(0);
        rekeyed
    }
    #[cfg(not(feature = "cipher"))]
    match key {
        None => Ok(()),
        // The worker moves the database to the wasm with ciphers first.
        Some(_) => Err(Error::Unsupported("rekey(key) of a plain database needs the wasm with ciphers".into())),
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
/// unplayed, the database left half-written for good. A `rekey` cut off
/// midway leaves a file whose head is already of the new kind and whose
/// journal is of the old: the journal's copy of page 1 says so, and the
/// old way of opening it (the only one that rolls it back) is let through.
///
/// In the build with ciphers, a connection without a key is on the
/// encrypting VFS too, doing nothing there until `rekey(key)` encrypts it.
pub fn open(name: &str, vfs: Option<&str>, key: Option<&Key>) -> Result<Conn> {
    match (vfs, key) {
        (Some(vfs), Some(key)) => {
            let conn = encrypting(name, vfs)?;
            with_key(&conn, vfs, key, name)?;
            Ok(conn)
        }
        (None, Some(_)) => Err(Error::BadParam("a memory database is never on disk: it takes no key".into())),
        (Some(vfs), None) => {
            #[cfg(feature = "cipher")]
            let conn = encrypting(name, vfs)?;
            #[cfg(not(feature = "cipher"))]
            let conn = Conn::open(name, Some(vfs))?;
            match needs_key(&conn, vfs, name) {
                Some(refusal) => Err(refusal),
                None => Ok(conn),
            }
        }
        (None, None) => Conn::open(name, None),
    }
}

/// Opens `name` on `vfs` to encrypt it under `key`: the end of a
/// `rekey(key)` of a plain database, which the wasm without ciphers let go
/// of for this. A file that opens without a key (plain, or cut off while
/// being encrypted: opening it rolls that back) is opened so and encrypted
/// ([`rekey`]); one that [`needs_key`] (the worker that began this
/// encrypted it, then went before its tab heard) is opened with `key`.
pub fn open_to_encrypt(name: &str, vfs: &str, key: &Key) -> Result<Conn> {
    let conn = encrypting(name, vfs)?;
    match needs_key(&conn, vfs, name) {
        Some(_) => with_key(&conn, vfs, key, name)?,
        None => rekey(&conn, Some(key))?,
    }
    Ok(conn)
}

/// A connection to `name` on the encrypting VFS over `vfs`, keyed with
/// nothing yet.
fn encrypting(name: &str, vfs: &str) -> Result<Conn> {
    let mut conn = Conn::open(name, Some(&vfs_over(vfs)))?;
    conn.set_encrypted();
    Ok(conn)
}

/// Keys `conn` (on the encrypting VFS, nothing read yet) with `key`, if
/// the file as it is now opens with a key: see [`open`].
fn with_key(conn: &Conn, vfs: &str, key: &Key, name: &str) -> Result<()> {
    if head(conn).is_some_and(|h| looks_plain(&h)) {
        // Plain, or decrypted by a rekey(null) that a crash cut off:
        // its journal's page 1 is encrypted, with the salt.
        #[cfg(feature = "cipher")]
        if let Some(page1) = journal_page1(conn, vfs).filter(|p| looks_encrypted(p)) {
            let salt: [u8; 16] = page1[..16].try_into().expect("16 bytes");
            return apply_material(conn, key.material_with(&salt), name);
        }
        return Err(Error::BadKey(format!(
            "{name} is not encrypted: open it without a key (an existing plain database is never encrypted by open)"
        )));
    }
    if journal_page1(conn, vfs).is_some_and(|p| looks_plain(&p)) {
        return Err(Error::BadKey(format!(
            "{name} was being encrypted (rekey(key)) when it was cut off: open it without a key, which rolls that back"
        )));
    }
    apply(conn, key, name)?;
    large_pages(conn, name)
}

/// Why the file of `conn` (nothing read yet) cannot be opened without its
/// key, if it cannot: it is encrypted (unless a `rekey(key)` was cut off
/// while encrypting it: its journal's page 1 is plain, and opening it
/// without a key rolls that back), or a `rekey(null)` was cut off while
/// decrypting it. The refusal says which.
fn needs_key(conn: &Conn, vfs: &str, name: &str) -> Option<Error> {
    let journal = journal_page1(conn, vfs);
    if head(conn).is_some_and(|h| looks_encrypted(&h)) && !journal.is_some_and(|p| looks_plain(&p)) {
        return Some(Error::BadKey(format!("{name} is encrypted: open it with its key")));
    }
    // Plain SQLite would play an encrypted journal back as it is:
    // its checksums would fail, and it would be dropped unplayed.
    if journal.is_some_and(|p| looks_encrypted(&p)) {
        return Some(Error::BadKey(format!("{name} was being decrypted (rekey(null)) when it was cut off: open it with its old key, which rolls that back")));
    }
    None
}

/// The smallest page an encrypted database may have: more than the 4096
/// bytes the pool gives as its sector size. SQLite writes a journal
/// header in pieces of min(page, sector) bytes, and SQLite3MC 2.6.1 takes
/// a journal write of a page's length, after a record, for a page: it
/// encrypts the header, and after a crash SQLite cannot read it, so the
/// journal is not played back and the database is left damaged (seen in
/// the power-loss simulation at 4096-byte pages: 874 of 10,000 images).
pub const MIN_PAGE: i64 = 8192;

/// Gives a new encrypted database its first page now, at the default size
/// (8192), so a later `PRAGMA page_size` does not make it smaller, and
/// refuses one whose pages are smaller than [`MIN_PAGE`].
fn large_pages(conn: &Conn, name: &str) -> Result<()> {
    if conn.figure("PRAGMA main.page_count")? == 0 {
        conn.row("PRAGMA main.user_version = 0", |_| {})?;
    }
    encryptable(conn, name)
}

/// Whether the database of `conn` has pages large enough to be encrypted
/// ([`MIN_PAGE`]); `RESQ_UNSUPPORTED` saying how to make them so if not.
pub fn encryptable(conn: &Conn, name: &str) -> Result<()> {
    large_enough(conn.figure("PRAGMA main.page_size")?, name)
}

/// Whether pages of `size` bytes, of database `name`, may be encrypted
/// ([`MIN_PAGE`]); `RESQ_UNSUPPORTED` saying how to make them so if not.
pub fn large_enough(size: i64, name: &str) -> Result<()> {
    if size < MIN_PAGE {
        return Err(Error::Unsupported(format!(
            "{name} has {size}-byte pages: an encrypted database needs pages of {MIN_PAGE} bytes or more here (with smaller ones, SQLite3 Multiple Ciphers encrypts the journal's header, and a crash could leave the database damaged); make them larger first, unencrypted: PRAGMA page_size = {MIN_PAGE}; VACUUM"
        )));
    }
    Ok(())
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

/// The first 24 bytes of page 1 as the hot journal of `conn`'s database
/// holds them, read through `vfs` (under any cipher's layer), if the
/// journal is hot and holds page 1 among the pages it would put back.
fn journal_page1(conn: &Conn, vfs: &str) -> Option<[u8; 24]> {
    use sqlite_wasm_rs as ffi;
    const MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
    let vfs = std::ffi::CString::new(vfs).ok()?;
    // SAFETY: the VFS is registered and the database open; the journal is
    // opened read-only, on memory of the size the VFS asks, and closed
    // before this returns.
    unsafe {
        let v = ffi::sqlite3_vfs_find(vfs.as_ptr());
        let db = ffi::sqlite3_db_filename(conn.raw(), c"main".as_ptr());
        if v.is_null() || db.is_null() {
            return None;
        }
        let path = std::ffi::CString::new([std::ffi::CStr::from_ptr(db).to_bytes(), b"-journal"].concat()).ok()?;
        let mut exists = 0;
        if ((*v).xAccess?)(v, path.as_ptr(), ffi::SQLITE_ACCESS_EXISTS, &mut exists) != ffi::SQLITE_OK || exists == 0 {
            return None;
        }
        let mut space = vec![0u64; ((*v).szOsFile as usize).div_ceil(8)];
        let file = space.as_mut_ptr().cast::<ffi::sqlite3_file>();
        let mut out = 0;
        if ((*v).xOpen?)(v, path.as_ptr(), file, ffi::SQLITE_OPEN_READONLY | ffi::SQLITE_OPEN_MAIN_JOURNAL, &mut out)
            != ffi::SQLITE_OK
        {
            return None;
        }
        let methods = &*(*file).pMethods;
        let read = |buf: &mut [u8], at: u64| {
            (methods.xRead.expect("files read"))(file, buf.as_mut_ptr().cast(), buf.len() as i32, at as i64)
                == ffi::SQLITE_OK
        };
        let mut size = 0i64;
        let mut header = [0u8; 28];
        let found = (|| {
            if (methods.xFileSize?)(file, &mut size) != ffi::SQLITE_OK || !read(&mut header, 0) || header[..8] != MAGIC
            {
                return None;
            }
            let be = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes")) as u64;
            let (records, sector, page) = (be(8), be(20), be(24));
            let record = page + 8;
            let stored = (size as u64).saturating_sub(sector) / record.max(1);
            let records = if records == u32::MAX as u64 { stored } else { records.min(stored) };
            (0..records).find_map(|i| {
                let at = sector + i * record;
                let mut pgno = [0u8; 4];
                let mut page1 = [0u8; 24];
                (read(&mut pgno, at) && u32::from_be_bytes(pgno) == 1 && read(&mut page1, at + 4)).then_some(page1)
            })
        })();
        (methods.xClose.expect("files close"))(file);
        found
    }
}

/// The first 24 bytes of the database file as on disk, if it has them.
fn head(conn: &Conn) -> Option<[u8; 24]> {
    let file = conn.main_file()?;
    let mut head = [0u8; 24];
    // SAFETY: the connection's file is open; `head` is live for the call.
    let rc = unsafe {
        ((*(*file).pMethods).xRead.expect("files read"))(file, head.as_mut_ptr().cast(), head.len() as i32, 0)
    };
    (rc == sqlite_wasm_rs::SQLITE_OK).then_some(head)
}
