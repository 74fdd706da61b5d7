//! Where a database lives. OPFS databases get a sync-access-handle pool of
//! their own (a directory per database name), so two databases in one page
//! run in two workers without contending for each other's handles, and a
//! second tab opening the same name finds its handles taken: `RESQ_LOCKED`.

use super::gather::{Gathered, Writing};
use super::idb::IdbVfs;
use crate::codec::placement::{self, Opfs, Storage as Place};
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use sqlite_wasm_vfs::sahpool::{self, OpfsSAHError, OpfsSAHPoolCfgBuilder, OpfsSAHPoolUtil};

thread_local! {
    /// OPFS database names open in this worker.
    static OPEN: std::cell::RefCell<std::collections::HashSet<String>> = Default::default();
}

pub enum Storage {
    Memory,
    /// The pool, and the VFS over it that connections open with (its
    /// writes gathered, `gather.rs`).
    Opfs(OpfsSAHPoolUtil, Gathered),
    /// The database's files in IndexedDB (`idb.rs`), and the VFS over it.
    Idb(IdbVfs, Gathered),
}

impl Storage {
    /// The VFS name to open the database with (`None`: SQLite's default, memory).
    pub fn vfs_name(name: &str, storage: &Storage) -> Option<String> {
        match storage {
            Storage::Memory => None,
            Storage::Opfs(..) => Some(vfs_name(name)),
            Storage::Idb(..) => Some(idb_vfs_name(name)),
        }
    }

    /// Where it is (`db.storage`).
    pub fn kind(&self) -> Place {
        match self {
            Storage::Memory => Place::Memory,
            Storage::Opfs(..) => Place::Opfs,
            Storage::Idb(..) => Place::Idb,
        }
    }

    /// `name`'s storage as `asked` (`"opfs"`, `"idb"`, or `"default"`: OPFS
    /// where it works here, else IndexedDB), by the rule of
    /// `codec::placement`: a name whose files `idb` (`IdbFiles`, idb.ts)
    /// found in IndexedDB lives there. OPFS is tried only where it could be
    /// the answer.
    pub async fn placed(name: &str, asked: &str, idb: wasm_bindgen::JsValue) -> Result<Storage> {
        let asked = match asked {
            "opfs" => Some(Place::Opfs),
            "idb" => Some(Place::Idb),
            _ => None,
        };
        let recorded = IdbVfs::holds(&idb).then_some(Place::Idb);
        let (opfs, mut pool) = if recorded.is_some() {
            (Opfs::Untried, None)
        } else if asked == Some(Place::Idb) {
            // Looked at without opening it: a new IndexedDB database only
            // where the name has no data in OPFS.
            (opfs_holds(name).await, None)
        } else {
            match Storage::opfs(name).await {
                Ok(pool) => (Opfs::Works, Some(pool)),
                Err(Error::Unsupported(why)) => (opfs_state(why), None),
                Err(e) => return Err(e),
            }
        };
        match placement::place(name, asked, recorded, &opfs) {
            Ok(Place::Opfs) => Ok(pool.take().expect("OPFS was tried and worked")),
            Ok(_) => {
                if let Some(mut pool) = pool.take() {
                    pool.release(name);
                }
                if idb.is_undefined() {
                    return Err(Error::Unsupported("IndexedDB is not available here".into()));
                }
                Storage::idb(name, idb)
            }
            Err(e) => {
                if let Some(mut pool) = pool.take() {
                    pool.release(name);
                }
                Err(e)
            }
        }
    }

    pub async fn opfs(name: &str) -> Result<Storage> {
        // The pool would hand this worker the same files again, and two
        // connections on one file lose writes: the VFS does not lock between
        // them (sahpool.rs: "Multiple connections to the same DB are unsupported").
        if OPEN.with(|open| !open.borrow_mut().insert(name.to_owned())) {
            return Err(Error::Locked(format!("{name} is already open in this worker")));
        }
        let storage = Self::install(name).await;
        if storage.is_err() {
            OPEN.with(|open| open.borrow_mut().remove(name));
        }
        storage
    }

    /// `name`'s files in IndexedDB, as `idb` (an `IdbFiles`, `idb.ts`) loaded them.
    pub fn idb(name: &str, idb: wasm_bindgen::JsValue) -> Result<Storage> {
        if OPEN.with(|open| !open.borrow_mut().insert(name.to_owned())) {
            return Err(Error::Locked(format!("{name} is already open in this worker")));
        }
        let inner = format!("resq-idb-blocks:{name}");
        let installed = match IdbVfs::install(&inner, idb) {
            Ok(vfs) => Gathered::register(&inner, &idb_vfs_name(name), Writing::PassedOn)
                .map(|gathered| Storage::Idb(vfs, gathered)),
            Err(e) => Err(e),
        };
        if installed.is_err() {
            OPEN.with(|open| open.borrow_mut().remove(name));
        }
        installed
    }

    async fn install(name: &str) -> Result<Storage> {
        let pool_name = format!("resq-pool:{name}");
        let cfg = OpfsSAHPoolCfgBuilder::new()
            .vfs_name(&pool_name)
            .directory(&format!(".resq-wasm/{}", escape(name)))
            .build();
        let pool = sahpool::install::<ffi::WasmOsCallback>(&cfg, false).await.map_err(|e| opfs_error(name, e))?;
        match Gathered::register(&pool_name, &vfs_name(name), Writing::Gathered) {
            Ok(gathered) => Ok(Storage::Opfs(pool, gathered)),
            Err(e) => {
                // SAFETY: no connection was opened on the pool.
                let _ = unsafe { pool.uninstall() };
                Err(e)
            }
        }
    }

    /// Releases the pool's OPFS handles, so another worker can open the
    /// file. Called once, after the only connection on this pool is closed.
    pub fn release(&mut self, name: &str) {
        match std::mem::replace(self, Storage::Memory) {
            Storage::Memory => return,
            Storage::Opfs(pool, gathered) => {
                super::cipher::release(&vfs_name(name));
                drop(gathered);
                // SAFETY: the only connection on this pool is closed.
                let _ = unsafe { pool.uninstall() };
            }
            Storage::Idb(vfs, gathered) => {
                super::cipher::release(&idb_vfs_name(name));
                // The VFS over it first; the blocks' VFS unregisters as it drops.
                drop(gathered);
                drop(vfs);
            }
        }
        OPEN.with(|open| open.borrow_mut().remove(name));
    }
}

/// A worker's storage of one database, shared by its connections (the
/// writer and its readers): released when the last of them lets go, so no
/// connection outlives the VFS it reads through.
pub struct Shared {
    storage: Storage,
    name: String,
}

impl Shared {
    pub fn new(storage: Storage, name: &str) -> std::rc::Rc<Shared> {
        std::rc::Rc::new(Shared { storage, name: name.to_owned() })
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.storage.release(&self.name);
    }
}

fn vfs_name(name: &str) -> String {
    format!("resq-opfs:{name}")
}

fn idb_vfs_name(name: &str) -> String {
    format!("resq-idb:{name}")
}

/// A directory component for any database name: `[A-Za-z0-9._-]` kept,
/// everything else as `%XX` of its UTF-8 bytes (and a leading `.` escaped,
/// so no name becomes `.` or `..`).
fn escape(name: &str) -> String {
    let mut out = String::new();
    for (i, b) in name.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether `name` has data in OPFS, found by reading its pool directory
/// (`.resq-wasm/<escaped name>`, and the pool's files in it) without
/// opening a sync access handle, which another tab may hold. A pool file
/// longer than its header holds a file of the database; a free one is cut
/// back to its header.
async fn opfs_holds(name: &str) -> Opfs {
    match opfs_has_data(name).await {
        Ok(true) => Opfs::HasData,
        Ok(false) => Opfs::Works,
        Err(why) => opfs_state(why),
    }
}

async fn opfs_has_data(name: &str) -> std::result::Result<bool, String> {
    use js_sys::Reflect;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    use web_sys::{File, FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemHandle, FileSystemHandleKind};
    // The pool's header: its files' bytes start after it (sahpool.rs).
    const HEADER: f64 = 4096.0;
    let text = |e: JsValue| {
        let field = |k: &str| Reflect::get(&e, &k.into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
        format!("{}: {}", field("name"), field("message"))
    };
    let storage = js_sys::global().unchecked_into::<web_sys::WorkerGlobalScope>().navigator().storage();
    if !Reflect::has(&storage, &"getDirectory".into()).unwrap_or(false) {
        return Err("OPFS is not available here".into());
    }
    let root: FileSystemDirectoryHandle = JsFuture::from(storage.get_directory()).await.map_err(text)?.unchecked_into();
    let mut dir = root;
    for part in [".resq-wasm".to_owned(), escape(name)] {
        match JsFuture::from(dir.get_directory_handle(&part)).await {
            Ok(d) => dir = d.unchecked_into(),
            Err(e) if text(e.clone()).starts_with("NotFoundError") => return Ok(false),
            Err(e) => return Err(text(e)),
        }
    }
    // The directory and the pool's `.opaque` folder in it.
    let mut dirs = vec![dir];
    while let Some(dir) = dirs.pop() {
        let entries = dir.values();
        loop {
            let step = JsFuture::from(entries.next().map_err(text)?).await.map_err(text)?;
            if Reflect::get(&step, &"done".into()).map_err(text)?.is_truthy() {
                break;
            }
            let handle: FileSystemHandle = Reflect::get(&step, &"value".into()).map_err(text)?.unchecked_into();
            if handle.kind() == FileSystemHandleKind::Directory {
                dirs.push(handle.unchecked_into());
                continue;
            }
            let file: File = JsFuture::from(handle.unchecked_into::<FileSystemFileHandle>().get_file())
                .await
                .map_err(text)?
                .unchecked_into();
            if file.size() > HEADER {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// What OPFS's refusal says of it here: a browser without sync access
/// handles (none at all, a private window's `SecurityError`, WebKitGTK's
/// `NotSupportedError`), or one whose OPFS failed this time (anything else,
/// such as Safari's `UnknownError`).
fn opfs_state(why: String) -> Opfs {
    let absent = ["NotSupportedError", "SecurityError", "OPFS is not available here"];
    if absent.iter().any(|a| why.contains(a)) {
        Opfs::Absent(why)
    } else {
        Opfs::Failed(why)
    }
}

/// SQLite's code for a damaged database file.
const SQLITE_CORRUPT: i32 = 11;

fn opfs_error(name: &str, e: OpfsSAHError) -> Error {
    let text = e.to_string();
    match e {
        OpfsSAHError::NotSupported => Error::Unsupported(format!(
            "OPFS is not available here ({text}); use open(name, {{ storage: 'memory' }}) for a non-persistent database"
        )),
        OpfsSAHError::DirectoryInUse(_) => Error::Locked(format!("{name} is already open in this worker")),
        // The pool's own bookkeeping on disk is damaged (a file's header
        // overwritten, two files claiming one name): the database's storage
        // is corrupt, which is not the browser lacking anything.
        OpfsSAHError::InvalidHeader { .. } | OpfsSAHError::DuplicateFilename(_) => Error::Sqlite {
            errno: SQLITE_CORRUPT,
            message: format!("the OPFS storage of {name} is damaged ({text}); delete .resq-wasm/{} to start afresh", escape(name)),
        },
        _ if text.contains("NoModificationAllowedError") || text.contains("InvalidStateError") => {
            Error::Locked(format!("{name} is held by another tab or worker ({text})"))
        }
        _ if text.contains("QuotaExceededError") => Error::Quota(format!("no storage quota left to open {name} ({text})")),
        _ => Error::Unsupported(format!(
            "could not open OPFS storage for {name}: {text}; open(name, {{ storage: 'memory' }}) gives a database that does not need it"
        )),
    }
}
