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
use js_sys::{Array, Uint32Array, Uint8Array};
use sqlite_wasm_rs::vfs::{
    register_vfs, AccessMode, FileKind, LockLevel, OpenAccess, OpenRequest, OpenedFile, SQLiteIoMethods, SQLiteVfs,
    SyncOptions, VfsError, VfsErrorCode, VfsFile, VfsRegistration, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, FileReaderSync};

/// Bytes a block: the database's page size, so a page is one block.
pub const BLOCK: usize = 8192;
/// Bytes of writes a file holds in memory before they become a segment.
pub const SPILL: usize = 4 << 20;

/// A segment, in a JS object the IndexedDB side reads and updates: its
/// `Blob` (`{ blob }`), which that side swaps for IndexedDB's once the
/// segment is stored; or, for a WAL's small segment, its bytes
/// (`{ bytes }`, an `ArrayBuffer`), stored as they are (see [`INLINE`]).
#[derive(Clone)]
struct Segment(js_sys::Object);

impl Segment {
    fn new(field: &str, value: &JsValue) -> Segment {
        let holder = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&holder, &field.into(), value);
        Segment(holder)
    }

    fn blob(&self) -> Blob {
        js_sys::Reflect::get(&self.0, &"blob".into()).unwrap_or_default().unchecked_into()
    }

    /// The bytes of a segment kept as its bytes.
    fn bytes(&self) -> Option<Uint8Array> {
        let bytes = js_sys::Reflect::get(&self.0, &"bytes".into()).ok()?;
        bytes.is_instance_of::<js_sys::ArrayBuffer>().then(|| Uint8Array::new(&bytes))
    }
}

/// A WAL's segment smaller than this is kept and stored as its bytes, not
/// a `Blob`: a small commit's. In Chromium a `Blob` costs about 0.5 ms to
/// make and a `FileReaderSync` read of it as much, and the transaction
/// storing one took 2.5 ms where its bytes took 1.2–1.4 (experiment 043).
/// Only a WAL's: its segments go when the WAL starts over after a
/// checkpoint, where a database of many small commits opened would read
/// all of theirs (IndexedDB gives bytes back as bytes).
const INLINE: usize = 64 << 10;
/// Bytes of a WAL's segments kept as bytes at most, in the worker's JS
/// heap; past that, small segments are `Blob`s too (a WAL that a long read
/// keeps from starting over).
const INLINE_MOST: usize = 8 << 20;

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

fn blob(bytes: &[u8]) -> std::result::Result<Blob, VfsError> {
    // SAFETY: the view is read by the Blob constructor, which copies it,
    // before anything can allocate in wasm memory.
    let view = unsafe { Uint8Array::view(bytes) };
    Blob::new_with_u8_array_sequence(&Array::of1(&view))
        .map_err(|e| VfsError::new(VfsErrorCode::IoWrite, format!("could not make a segment: {}", text(&e)).into()))
}

/// A file's segments: each one's `Blob`; the bytes of those read whole
/// last are in the database's [`Kept`].
///
/// A read of [`WHOLE_FROM`] bytes or more is a read in order (SQLite's
/// pages read ahead, a value streamed, the WAL read back at a commit), and
/// reads the whole segment: every `FileReaderSync` read costs about 0.7 ms
/// in Chromium however small, and a segment read whole costs about as much
/// as one read of a mebibyte of it (experiment 041). The reads after it
/// that fall in the same segment are copied from there, outside wasm
/// memory. A segment never changes once made, and its number is never
/// used again by the file, so what is kept stays right.
struct Segments {
    blobs: HashMap<u32, Segment>,
    /// Bytes of the segments kept as bytes.
    inline: usize,
    kept: Rc<Kept>,
    /// This file's number in `kept`.
    file: u32,
    /// A read in order is under way: every segment it fetches from is
    /// read whole, the short fetches too (a WAL in frame groups reads a
    /// few KiB of headers beside each run of pages).
    in_order: Cell<bool>,
}

/// The segments of a database's files read whole last, by file and
/// segment number, the latest used first: [`KEPT_BYTES`] of them at most.
/// One budget for all the files: a commit's checkpoint and a value
/// streamed back read in order from the database and its WAL at once,
/// each from its pages' segment, often the next one too, and a WAL's
/// headers' segment; four kept a file re-read 2 GiB of segments for a
/// 1 GiB value read once, eight 1 GiB (experiment 044), and this budget
/// streams it back faster than four a file (experiment 045).
#[derive(Default)]
struct Kept {
    list: RefCell<VecDeque<((u32, u32), Uint8Array)>>,
    /// Files numbered so far.
    files: Cell<u32>,
}

/// Bytes of segments a database keeps read whole: the worker's JS heap
/// holds them, beside at most 64 MiB of wasm memory, within 128 MiB.
const KEPT_BYTES: u32 = 48 << 20;

impl Kept {
    fn get(&self, key: (u32, u32)) -> Option<Uint8Array> {
        let mut list = self.list.borrow_mut();
        let at = list.iter().position(|(k, _)| *k == key)?;
        let hit = list.remove(at)?;
        let bytes = hit.1.clone();
        list.push_front(hit);
        Some(bytes)
    }

    fn put(&self, key: (u32, u32), bytes: Uint8Array) {
        let mut list = self.list.borrow_mut();
        list.push_front((key, bytes));
        let mut total: u32 = list.iter().map(|(_, b)| b.length()).sum();
        while total > KEPT_BYTES && list.len() > 1 {
            total -= list.pop_back().map_or(0, |(_, b)| b.length());
        }
    }

    fn forget(&self, mut gone: impl FnMut(&(u32, u32)) -> bool) {
        self.list.borrow_mut().retain(|(k, _)| !gone(k));
    }
}

/// Bytes a read takes for it to read its whole segment: a read-ahead's
/// window from its third on (`codec::ahead`). The read-ahead's largest
/// window alone (1 MiB) kept most of the gain away: a WAL read back at a
/// commit is read ahead in shorter windows between its writes
/// (experiment 041).
const WHOLE_FROM: usize = 256 << 10;
/// The largest segment read whole: segments are made a [`SPILL`] at a time.
const WHOLE_MOST: f64 = (2 * SPILL) as f64;

impl Segments {
    fn new(kept: &Rc<Kept>) -> Segments {
        let file = kept.files.get();
        kept.files.set(file + 1);
        Segments { blobs: HashMap::new(), inline: 0, kept: Rc::clone(kept), file, in_order: Cell::new(false) }
    }

    fn insert(&mut self, seg: u32, blob: &Blob) {
        self.blobs.insert(seg, Segment::new("blob", blob));
    }

    /// Makes segment `seg` of `packed`: its bytes for a WAL's small one
    /// (see [`INLINE`]), else a `Blob`.
    fn make(&mut self, seg: u32, packed: &[u8], wal: bool) -> VfsResult<()> {
        if wal && packed.len() < INLINE && self.inline + packed.len() <= INLINE_MOST {
            self.inline += packed.len();
            self.blobs.insert(seg, Segment::new("bytes", &Uint8Array::from(packed).buffer()));
            return Ok(());
        }
        self.insert(seg, &blob(packed)?);
        Ok(())
    }

    fn remove(&mut self, seg: u32) {
        if let Some(bytes) = self.blobs.remove(&seg).and_then(|s| s.bytes()) {
            self.inline -= bytes.length() as usize;
        }
        self.kept.forget(|k| *k == (self.file, seg));
    }

    fn get(&self, seg: u32) -> Result<&Segment> {
        self.blobs.get(&seg).ok_or_else(|| Error::Unsupported(format!("segment {seg} is missing")))
    }

    /// Reads `out.len()` bytes of segment `seg` from `at`, synchronously.
    fn fetch(&self, reader: &FileReaderSync, seg: u32, at: u64, out: &mut [u8]) -> Result<()> {
        let end = at + out.len() as u64;
        let short = || Error::Unsupported(format!("segment {seg} is shorter than its map says"));
        if let Some(whole) = self.kept.get((self.file, seg)) {
            return copy_from(&whole, at, out).ok_or_else(short);
        }
        let segment = self.get(seg)?;
        if let Some(bytes) = segment.bytes() {
            return copy_from(&bytes, at, out).ok_or_else(short);
        }
        let blob = segment.blob();
        let failed = |e: JsValue| Error::Unsupported(format!("could not read segment {seg}: {}", text(&e)));
        if (out.len() >= WHOLE_FROM || self.in_order.get()) && blob.size() <= WHOLE_MOST {
            let whole = Uint8Array::new(&reader.read_as_array_buffer(&blob).map_err(failed)?.into());
            copy_from(&whole, at, out).ok_or_else(short)?;
            self.kept.put((self.file, seg), whole);
            return Ok(());
        }
        let part =
            blob.slice_with_f64_and_f64(at as f64, end as f64).and_then(|part| reader.read_as_array_buffer(&part));
        let bytes = Uint8Array::new(&part.map_err(failed)?.into());
        if bytes.length() as usize != out.len() {
            return Err(short());
        }
        bytes.copy_to(out);
        Ok(())
    }
}

/// Copies `out.len()` bytes of a segment's `bytes` from `at` into `out`;
/// `None` when the segment is shorter than that.
fn copy_from(bytes: &Uint8Array, at: u64, out: &mut [u8]) -> Option<()> {
    let end = at + out.len() as u64;
    (end <= u64::from(bytes.length())).then(|| bytes.subarray(at as u32, end as u32).copy_to(out))
}

impl Drop for Segments {
    fn drop(&mut self) {
        let file = self.file;
        self.kept.forget(|k| k.0 == file);
    }
}

/// Reads bytes of a segment synchronously, as `BlockFile` asks for them.
fn fetch_from<'a>(
    reader: &'a FileReaderSync,
    segs: &'a Segments,
) -> impl FnMut(u32, u64, &mut [u8]) -> Result<()> + 'a {
    move |seg, at, out| segs.fetch(reader, seg, at, out)
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
    /// Packs what `file` holds into a new segment.
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
        let ahead = Array::of3(&file.path.as_str().into(), &seg.into(), &segment.0);
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
            segments.push(&Array::of2(&(*seg).into(), &segment.0));
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
