//! A file's segments as the IndexedDB VFS holds them (`idb.rs`): each
//! one's `Blob`, or a WAL's small one's bytes, and the bytes of those read
//! whole last, kept within one budget for a database's files; and the
//! synchronous reads of their bytes.

use super::{text, SPILL};
use crate::codec::{Error, Result};
use js_sys::{Array, Uint8Array};
use sqlite_wasm_rs::vfs::{VfsError, VfsErrorCode, VfsResult};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, FileReaderSync};

/// A segment, in a JS object the IndexedDB side reads and updates: its
/// `Blob` (`{ blob }`), which that side swaps for IndexedDB's once the
/// segment is stored; or, for a WAL's small segment, its bytes
/// (`{ bytes }`, an `ArrayBuffer`), stored as they are (see [`INLINE`]).
#[derive(Clone)]
pub(super) struct Segment(js_sys::Object);

impl Segment {
    fn new(field: &str, value: &JsValue) -> Segment {
        let holder = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&holder, &field.into(), value);
        Segment(holder)
    }

    /// The JS object the IndexedDB side reads and updates.
    pub(super) fn holder(&self) -> &js_sys::Object {
        &self.0
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

pub(super) fn blob(bytes: &[u8]) -> std::result::Result<Blob, VfsError> {
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
pub(super) struct Segments {
    blobs: HashMap<u32, Segment>,
    /// Bytes of the segments kept as bytes.
    inline: usize,
    kept: Rc<Kept>,
    /// This file's number in `kept`.
    file: u32,
    /// A read in order is under way: every segment it fetches from is
    /// read whole, the short fetches too (a WAL in frame groups reads a
    /// few KiB of headers beside each run of pages).
    pub(super) in_order: Cell<bool>,
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
pub(super) struct Kept {
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
pub(super) const WHOLE_FROM: usize = 256 << 10;
/// The largest segment read whole: segments are made a [`SPILL`] at a time.
const WHOLE_MOST: f64 = (2 * SPILL) as f64;

impl Segments {
    pub(super) fn new(kept: &Rc<Kept>) -> Segments {
        let file = kept.files.get();
        kept.files.set(file + 1);
        Segments { blobs: HashMap::new(), inline: 0, kept: Rc::clone(kept), file, in_order: Cell::new(false) }
    }

    pub(super) fn insert(&mut self, seg: u32, blob: &Blob) {
        self.blobs.insert(seg, Segment::new("blob", blob));
    }

    /// Makes segment `seg` of `packed`: its bytes for a WAL's small one
    /// (see [`INLINE`]), else a `Blob`.
    pub(super) fn make(&mut self, seg: u32, packed: &[u8], wal: bool) -> VfsResult<()> {
        if wal && packed.len() < INLINE && self.inline + packed.len() <= INLINE_MOST {
            self.inline += packed.len();
            self.blobs.insert(seg, Segment::new("bytes", &Uint8Array::from(packed).buffer()));
            return Ok(());
        }
        self.insert(seg, &blob(packed)?);
        Ok(())
    }

    pub(super) fn remove(&mut self, seg: u32) {
        if let Some(bytes) = self.blobs.remove(&seg).and_then(|s| s.bytes()) {
            self.inline -= bytes.length() as usize;
        }
        self.kept.forget(|k| *k == (self.file, seg));
    }

    pub(super) fn get(&self, seg: u32) -> Result<&Segment> {
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
pub(super) fn fetch_from<'a>(
    reader: &'a FileReaderSync,
    segs: &'a Segments,
) -> impl FnMut(u32, u64, &mut [u8]) -> Result<()> + 'a {
    move |seg, at, out| segs.fetch(reader, seg, at, out)
}
