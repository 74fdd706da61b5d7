//! `resq-source`: a read-only VFS of one file, the database being imported
//! (`importDatabase`), whose bytes the worker reads through a callback as
//! SQLite asks for them. The imported file waits where staged bytes wait
//! (`stage.ts`: memory, then a temporary OPFS file); this VFS lets SQLite
//! open it there, so checking it (`PRAGMA quick_check`) and copying it over
//! the database (the backup API) read it a page at a time, never whole.
//!
//! ```ignore
//! let src = source::open(size, Box::new(|at, buf| read_staged(at, buf)), None)?;
//! src.conn().texts("PRAGMA quick_check", |_| {})?;
//! ```
//!
//! One source at a time: [`open`] sets it, and dropping the returned
//! [`SourceDb`] closes its connection and forgets it. The file is
//! immutable (no locks, no journal, no WAL: SQLite reads an immutable
//! WAL-mode file as it stood at its last checkpoint), and a plain file's
//! WAL-mode header reads as a rollback-journal one
//! (`codec::backup::as_rollback_journal`), so the copy does not carry it
//! into a memory database. An encrypted file's page 1 is authenticated
//! whole, so its header is left as it is: it only ever goes into a
//! database on OPFS, which is in WAL mode itself.

use super::cipher::{self, Key};
use super::conn::Conn;
use crate::codec::ahead::ReadAhead;
use crate::codec::backup::as_rollback_journal;
use crate::codec::Result;
use sqlite_wasm_rs::vfs::{
    register_vfs, AccessMode, DeviceCharacteristics, FileKind, LockLevel, OpenAccess, OpenOptions, OpenRequest,
    OpenedFile, SQLiteIoMethods, SQLiteVfs, SyncOptions, VfsError, VfsErrorCode, VfsFile, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

const VFS: &str = "resq-source";
/// The one file name the VFS opens.
const FILE: &str = "import.db";

/// Fills the buffer with the file's bytes from the offset (always within
/// the file), or says why it could not.
pub type ReadAt = Box<dyn FnMut(u64, &mut [u8]) -> std::result::Result<(), String>>;

struct Bytes {
    size: u64,
    read: ReadAt,
    /// Not encrypted: its header is shown as a rollback-journal one.
    plain: bool,
    /// The copy into the database reads every page in order, each a call
    /// into JS; the file never changes, so nothing drops what is read ahead.
    ahead: ReadAhead,
}

type Current = Rc<RefCell<Option<Bytes>>>;

thread_local! {
    static CURRENT: Current = Rc::default();
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// A connection, opened untrusted (see [`Conn::open_untrusted`]), on the
/// current source; the source is forgotten when it drops.
pub struct SourceDb {
    conn: Conn,
}

impl SourceDb {
    pub fn conn(&self) -> &Conn {
        &self.conn
    }
}

impl Drop for SourceDb {
    fn drop(&mut self) {
        let _ = self.conn.close();
        CURRENT.with(|c| c.borrow_mut().take());
    }
}

/// Opens the file of `size` bytes that `read` reads, with `key` if it is
/// encrypted.
pub fn open(size: u64, read: ReadAt, key: Option<&Key>) -> Result<SourceDb> {
    if !REGISTERED.get() {
        let data = AppData { current: CURRENT.with(Rc::clone) };
        // SAFETY: the types below agree on the file layout; the
        // registration lives as long as the worker (into_raw).
        unsafe { register_vfs::<SourceIo, SourceVfs>(VFS, data, false) }
            .map_err(|e| crate::codec::Error::Unsupported(format!("could not register the import VFS: {e}")))?
            .into_raw();
        REGISTERED.set(true);
    }
    let plain = key.is_none();
    CURRENT.with(|c| c.borrow_mut().replace(Bytes { size, read, plain, ahead: ReadAhead::default() }));
    // Checking and copying read each page once or twice: a small cache will do.
    let opened = cipher::open_untrusted(FILE, VFS, key)
        .and_then(|conn| conn.row("PRAGMA cache_size = -2048", |_| {}).map(|_| conn));
    match opened {
        Ok(conn) => Ok(SourceDb { conn }),
        Err(e) => {
            CURRENT.with(|c| c.borrow_mut().take());
            Err(e)
        }
    }
}

struct AppData {
    current: Current,
}

struct SourceFile {
    current: Current,
}

fn read_only() -> VfsError {
    VfsError::new(VfsErrorCode::ReadOnly, "the imported file is read-only".into())
}

impl VfsFile for SourceFile {
    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        let mut current = self.current.borrow_mut();
        let Some(bytes) = current.as_mut() else {
            return Err(VfsError::new(VfsErrorCode::IoRead, "the imported file is gone".into()));
        };
        let n = bytes.size.saturating_sub(offset).min(buf.len() as u64) as usize;
        if n > 0 {
            let Bytes { size, read, ahead, plain } = bytes;
            ahead
                .read(&mut buf[..n], offset, |from| size.saturating_sub(from), read)
                .map_err(|m| VfsError::new(VfsErrorCode::IoRead, m.into()))?;
            if *plain {
                as_rollback_journal(&mut buf[..n], offset);
            }
        }
        Ok(n)
    }

    fn write(&mut self, _: &[u8], _: u64) -> VfsResult<()> {
        Err(read_only())
    }

    fn truncate(&mut self, _: u64) -> VfsResult<()> {
        Err(read_only())
    }

    fn sync(&mut self, _: SyncOptions) -> VfsResult<()> {
        Ok(())
    }

    fn size(&self) -> VfsResult<u64> {
        Ok(self.current.borrow().as_ref().map_or(0, |b| b.size))
    }

    // Immutable: nobody else writes it, so no locks and no journal to look for.
    fn device_characteristics(&self) -> DeviceCharacteristics {
        DeviceCharacteristics::IMMUTABLE
    }

    fn lock(&mut self, _: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn unlock(&mut self, _: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn check_reserved_lock(&self) -> VfsResult<bool> {
        Ok(false)
    }
}

struct SourceStore;

impl VfsStore for SourceStore {
    type File = SourceFile;
    type AppData = AppData;

    fn open_file(data: &AppData, request: OpenRequest<'_>) -> VfsResult<OpenedFile<SourceFile>> {
        let options: OpenOptions = request.options;
        let ours = request.filename.is_some_and(|f| f.path() == FILE) && options.kind() == Some(FileKind::MainDb);
        if !ours || options.access() != OpenAccess::ReadOnly {
            return Err(VfsError::new(
                VfsErrorCode::CantOpen,
                "the import VFS opens only the imported file, read-only".into(),
            ));
        }
        Ok(OpenedFile { file: SourceFile { current: Rc::clone(&data.current) }, access: OpenAccess::ReadOnly })
    }

    fn close_file(_: &AppData, _: Option<&str>, _: SourceFile, _: OpenOptions) -> VfsResult<()> {
        Ok(())
    }

    /// No journal, WAL or other file beside it exists.
    fn access(_: &AppData, _: &str, _: AccessMode) -> VfsResult<bool> {
        Ok(false)
    }

    fn full_pathname(_: &AppData, name: &str) -> VfsResult<String> {
        Ok(name.into())
    }

    fn delete_file(_: &AppData, _: &str, _: bool) -> VfsResult<()> {
        Err(read_only())
    }
}

struct SourceIo;

impl SQLiteIoMethods for SourceIo {
    type Store = SourceStore;
}

struct SourceVfs;

impl SQLiteVfs<SourceIo> for SourceVfs {
    type Os = WasmOsCallback;

    fn os(_: &AppData) -> &WasmOsCallback {
        &WasmOsCallback
    }
}
