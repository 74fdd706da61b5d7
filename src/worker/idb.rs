//! `resq-idb`: a database's files kept in IndexedDB (issue 30), for
//! browsers whose workers have no OPFS sync access handles.
//!
//! SQLite's VFS is synchronous and IndexedDB is not, so each file is kept
//! as `codec::blocks` lays it out: fixed-size blocks packed in immutable
//! segments, each one `Blob`; a WAL's frames in groups (`codec::frames`). A read is synchronous all the same:
//! `FileReaderSync` reads the bytes of a segment's `Blob` in a dedicated
//! worker, in every engine. Writes are held in memory until the file is
//! synced, or packed into a segment of their own (a `Blob`, outside wasm
//! memory) once [`SPILL`] bytes are held, so a large value never sits in
//! wasm memory whole. A sync packs the rest and hands it to the worker's
//! IndexedDB side (`src/js/worker/idb.ts`, `IdbFiles.store`), which starts
//! the one transaction that stores it; the call that synced is answered
//! once that transaction is complete.
//!
//! Once a segment is stored, that side swaps its `Blob` for the one
//! IndexedDB gives back, which the browser reads from its own files: a
//! segment made in the worker is held in the browser's memory only until
//! then, so what a database holds in memory does not grow with its size.
//!
//! The files are loaded by that side when the database opens: each file's
//! map and its segments' `Blob`s, never their bytes. One worker owns a database (the
//! leader's), so nothing else changes them meanwhile, and locks here are
//! the no-ops of a file nobody else opens (the connections of one worker
//! lock each other in `gather.rs`). Files other than the database, its
//! journal and its WAL (SQLite's temporary files) live in memory only.

use crate::codec::blocks::BlockFile;
use crate::codec::frames::FramedFile;
use crate::codec::{Error, Result};
use js_sys::{Array, Uint32Array};
use sqlite_wasm_rs::vfs::{
    register_vfs, AccessMode, FileKind, LockLevel, OpenAccess, OpenRequest, OpenedFile, SQLiteIoMethods, SQLiteVfs,
    SyncOptions, VfsError, VfsErrorCode, VfsFile, VfsRegistration, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, FileReaderSync};

mod segments;
use segments::{blob, fetch_from, Kept, Segments, WHOLE_FROM};

/// Bytes a block: the database's page size, so a page is one block.
pub const BLOCK: usize = 8192;
/// Bytes of writes a file holds in memory before they become a segment.
pub const SPILL: usize = 4 << 20;

/// One file: its blocks, and the `Blob` of each segment they are in.
struct File {
    path: String,
    content: FramedFile,
    segs: Segments,
    next: u32,
    /// Stored in IndexedDB (the database, its journal, its WAL), or a
    /// temporary file in memory only.
    stored: bool,
}

type Shared = Rc<RefCell<File>>;

/// What the VFS's callbacks share: the stored files by path, and their
/// IndexedDB side (an `IdbFiles`, `idb.ts`).
pub struct Files {
    idb: JsValue,
    reader: FileReaderSync,
    by_path: RefCell<HashMap<String, Shared>>,
    /// The segments its files read whole last.
    kept: Rc<Kept>,
    /// The last error a callback returned, for `xGetLastError`.
    last_error: RefCell<Option<VfsError>>,
}

/// A JS error as its `toString()` gives it ("NotReadableError: …").
fn text(e: &JsValue) -> String {
    match e.as_string() {
        Some(s) => s,
        None if e.is_object() => e.unchecked_ref::<js_sys::Object>().to_string().into(),
        None => format!("{e:?}"),
    }
}

fn io(code: VfsErrorCode) -> impl Fn(Error) -> VfsError {
    move |e| VfsError::new(code, e.to_string().into())
}

/// A file as SQLite has it open.
pub struct IdbFile {
    file: Shared,
    files: Rc<Files>,
}

impl IdbFile {
    /// Packs what `file` holds into a new segment, and hands it to the
    /// IndexedDB side to store ahead of the sync that will name it, so the
    /// browser holds it only until then (`IdbFiles.ahead`, idb.ts).
    fn stage(&self, file: &mut File) -> VfsResult<()> {
        let seg = file.next;
        let packed = file.content.blocks.stage(seg, SPILL);
        if packed.is_empty() {
            return Ok(());
        }
        file.segs.insert(seg, &blob(&packed)?);
        file.next += 1;
        let segment = file.segs.get(seg).map_err(io(VfsErrorCode::IoWrite))?;
        let ahead = Array::of3(&file.path.as_str().into(), &seg.into(), segment.holder());
        self.files.call("ahead", &ahead).map_err(io(VfsErrorCode::IoWrite))
    }
}

impl VfsFile for IdbFile {
    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        let file = self.file.borrow();
        let n = file.content.size().saturating_sub(offset).min(buf.len() as u64) as usize;
        file.segs.in_order.set(file.content.frames().is_some() && buf.len() >= WHOLE_FROM);
        let mut fetch = fetch_from(&self.files.reader, &file.segs);
        let read = file.content.read(offset, buf, &mut fetch).map_err(io(VfsErrorCode::IoRead));
        file.segs.in_order.set(false);
        read?;
        Ok(n)
    }

    fn write(&mut self, buf: &[u8], offset: u64) -> VfsResult<()> {
        let mut guard = self.file.borrow_mut();
        let file = &mut *guard;
        let mut fetch = fetch_from(&self.files.reader, &file.segs);
        file.content.write(offset, buf, &mut fetch).map_err(io(VfsErrorCode::IoWrite))?;
        drop(fetch);
        if file.stored && file.content.blocks.spill_due(SPILL) {
            self.stage(file)?;
        }
        Ok(())
    }

    fn truncate(&mut self, size: u64) -> VfsResult<()> {
        let mut guard = self.file.borrow_mut();
        let file = &mut *guard;
        let mut fetch = fetch_from(&self.files.reader, &file.segs);
        file.content.truncate(size, &mut fetch).map_err(io(VfsErrorCode::IoTruncate))
    }

    fn sync(&mut self, _: SyncOptions) -> VfsResult<()> {
        let mut file = self.file.borrow_mut();
        if !file.stored {
            return Ok(());
        }
        // What is held is packed a SPILL at a time, as writes stage it: a
        // sync of many sparse blocks would otherwise make them all whole
        // in wasm memory at once.
        while file.content.blocks.packed_bytes() > SPILL {
            let seg = file.next;
            let packed = file.content.blocks.stage_for_sync(seg, SPILL);
            file.segs.insert(seg, &blob(&packed)?);
            file.next += 1;
        }
        let seg = file.next;
        let s = file.content.blocks.take_sync(seg);
        if !s.packed.is_empty() {
            let wal = file.content.is_wal();
            file.segs.make(seg, &s.packed, wal)?;
            file.next += 1;
        }
        let segments = Array::new();
        for seg in &s.segments {
            let segment = file.segs.get(*seg).map_err(io(VfsErrorCode::IoSync))?;
            segments.push(&Array::of2(&(*seg).into(), segment.holder()));
        }
        let chunks: Array =
            s.chunks.iter().map(|(n, words)| Array::of2(&(*n as f64).into(), &Uint32Array::from(&words[..]))).collect();
        let dead: Array = s.dead.iter().map(|&seg| JsValue::from(seg)).collect();
        let released: Array = s.released.iter().map(|&seg| JsValue::from(seg)).collect();
        let sync = js_sys::Object::new();
        let frames = file.content.frames().map_or(JsValue::UNDEFINED, |size| (size as f64).into());
        let fields: [(&str, JsValue); 10] = [
            ("path", file.path.as_str().into()),
            ("frames", frames),
            ("size", (s.size as f64).into()),
            ("block", (BLOCK as f64).into()),
            ("next", file.next.into()),
            ("chunkCount", (s.chunk_count as f64).into()),
            ("chunks", chunks.into()),
            ("segments", segments.into()),
            ("dead", dead.into()),
            ("released", released.into()),
        ];
        for (k, v) in fields {
            let _ = js_sys::Reflect::set(&sync, &k.into(), &v);
        }
        self.files.call("store", &sync.into()).map_err(io(VfsErrorCode::IoSync))?;
        for seg in s.dead.iter().chain(&s.released) {
            file.segs.remove(*seg);
        }
        Ok(())
    }

    fn size(&self) -> VfsResult<u64> {
        Ok(self.file.borrow().content.size())
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

struct IdbStore;

impl VfsStore for IdbStore {
    type File = IdbFile;
    type AppData = Rc<Files>;

    fn record_error(files: &Rc<Files>, error: VfsError) {
        files.last_error.replace(Some(error));
    }

    fn last_error(files: &Rc<Files>) -> Option<VfsError> {
        files.last_error.borrow().clone()
    }

    fn open_file(files: &Rc<Files>, request: OpenRequest<'_>) -> VfsResult<OpenedFile<IdbFile>> {
        let options = request.options;
        let kept = matches!(options.kind(), Some(FileKind::MainDb | FileKind::MainJournal | FileKind::Wal));
        let path = request.filename.map(|f| f.path().to_owned()).filter(|_| kept);
        let file = match path {
            Some(path) => {
                let mut by_path = files.by_path.borrow_mut();
                match by_path.get(&path) {
                    Some(file) => Rc::clone(file),
                    None if options.create() => {
                        let file = new_file(files, path.clone(), true);
                        by_path.insert(path, Rc::clone(&file));
                        file
                    }
                    None => return Err(VfsError::new(VfsErrorCode::CantOpen, format!("{path} does not exist").into())),
                }
            }
            None => new_file(files, String::new(), false),
        };
        if matches!(options.kind(), Some(FileKind::Wal)) {
            file.borrow_mut().content.opened_as_wal();
        }
        Ok(OpenedFile { file: IdbFile { file, files: Rc::clone(files) }, access: OpenAccess::ReadWrite })
    }

    fn close_file(_: &Rc<Files>, _: Option<&str>, _: IdbFile, _: sqlite_wasm_rs::vfs::OpenOptions) -> VfsResult<()> {
        Ok(())
    }

    fn access(files: &Rc<Files>, name: &str, _: AccessMode) -> VfsResult<bool> {
        Ok(files.by_path.borrow().contains_key(name))
    }

    fn full_pathname(_: &Rc<Files>, name: &str) -> VfsResult<String> {
        Ok(name.into())
    }

    fn delete_file(files: &Rc<Files>, name: &str, _: bool) -> VfsResult<()> {
        if files.by_path.borrow_mut().remove(name).is_some() {
            files.call("delete", &name.into()).map_err(io(VfsErrorCode::IoDelete))?;
        }
        Ok(())
    }
}

fn new_file(files: &Files, path: String, stored: bool) -> Shared {
    Rc::new(RefCell::new(File {
        path,
        content: FramedFile::new(BlockFile::load(BLOCK, 0, &[]), None),
        segs: Segments::new(&files.kept),
        next: 0,
        stored,
    }))
}

struct IdbIo;

impl SQLiteIoMethods for IdbIo {
    type Store = IdbStore;
}

struct IdbVfsMethods;

impl SQLiteVfs<IdbIo> for IdbVfsMethods {
    type Os = WasmOsCallback;

    fn os(_: &Rc<Files>) -> &WasmOsCallback {
        &WasmOsCallback
    }
}

/// The VFS of one database in IndexedDB, registered under its own name;
/// unregistered when dropped, after every connection on it has closed.
pub struct IdbVfs {
    registration: Option<VfsRegistration<Rc<Files>>>,
    _files: Rc<Files>,
}

impl Files {
    /// Calls `method` of the IndexedDB side with `arg`.
    fn call(&self, method: &str, arg: &JsValue) -> Result<()> {
        let f: js_sys::Function = js_sys::Reflect::get(&self.idb, &method.into())
            .ok()
            .and_then(|f| f.dyn_into().ok())
            .ok_or_else(|| Error::Unsupported(format!("the IndexedDB side has no {method}()")))?;
        f.call1(&self.idb, arg)
            .map(|_| ())
            .map_err(|e| Error::Unsupported(format!("IndexedDB {method}() failed: {}", text(&e))))
    }
}

/// A field of a loaded file, a number.
fn num(v: &JsValue, field: &str) -> f64 {
    js_sys::Reflect::get(v, &field.into()).ok().and_then(|v| v.as_f64()).unwrap_or(0.0)
}

/// `[n, value]` pairs: each number, and its value as `T`.
fn pairs<T: JsCast>(v: &JsValue, field: &str) -> Vec<(f64, T)> {
    let list: Array = js_sys::Reflect::get(v, &field.into()).map(|v| Array::from(&v)).unwrap_or_default();
    list.iter()
        .map(|p| {
            let p = Array::from(&p);
            (p.get(0).as_f64().unwrap_or(0.0), p.get(1).unchecked_into())
        })
        .collect()
}

/// The files an `IdbFiles` loaded (its `files`).
fn loaded(idb: &JsValue) -> Array {
    js_sys::Reflect::get(idb, &"files".into()).map(|v| Array::from(&v)).unwrap_or_default()
}

impl IdbVfs {
    /// Whether `idb` (an `IdbFiles`, which loads one database's files) found any.
    pub fn holds(idb: &JsValue) -> bool {
        loaded(idb).length() > 0
    }

    /// Registers the VFS `vfs` over the files `idb` (an `IdbFiles` of
    /// `idb.ts`) loaded.
    pub fn install(vfs: &str, idb: JsValue) -> Result<IdbVfs> {
        let reader =
            FileReaderSync::new().map_err(|e| Error::Unsupported(format!("no FileReaderSync here: {}", text(&e))))?;
        let mut by_path = HashMap::new();
        let kept = Rc::new(Kept::default());
        for f in loaded(&idb).iter() {
            let path = js_sys::Reflect::get(&f, &"path".into()).ok().and_then(|p| p.as_string()).unwrap_or_default();
            let block = num(&f, "block") as usize;
            if block != BLOCK {
                return Err(Error::Unsupported(format!("{path} is stored in blocks of {block} bytes, not {BLOCK}")));
            }
            let chunks: Vec<(u64, Vec<u32>)> =
                pairs::<Uint32Array>(&f, "chunks").into_iter().map(|(n, w)| (n as u64, w.to_vec())).collect();
            let mut segs = Segments::new(&kept);
            for (n, b) in pairs::<Blob>(&f, "segments") {
                segs.insert(n as u32, &b);
            }
            let blocks = BlockFile::load(BLOCK, num(&f, "size") as u64, &chunks);
            // A WAL in frame groups: its record gives its own size.
            let laid = js_sys::Reflect::get(&f, &"frames".into()).ok().and_then(|v| v.as_f64());
            let content = FramedFile::new(blocks, laid.map(|size| size as u64));
            let file = File { path: path.clone(), content, segs, next: num(&f, "next") as u32, stored: true };
            by_path.insert(path, Rc::new(RefCell::new(file)));
        }
        let files =
            Rc::new(Files { idb, reader, by_path: RefCell::new(by_path), kept, last_error: RefCell::new(None) });
        // SAFETY: the types agree on the file layout; the registration is
        // dropped only after the last connection on it closed (`Storage::release`).
        let registration = unsafe { register_vfs::<IdbIo, IdbVfsMethods>(vfs, Rc::clone(&files), false) }
            .map_err(|e| Error::Unsupported(format!("could not register the IndexedDB VFS: {e}")))?;
        Ok(IdbVfs { registration: Some(registration), _files: files })
    }
}

impl Drop for IdbVfs {
    fn drop(&mut self) {
        if let Some(r) = self.registration.take() {
            // SAFETY: no connection is open on it (see `install`).
            let _ = unsafe { r.unregister() };
        }
    }
}
