//! Writes that continue each other, gathered into one OPFS write; reads
//! that continue each other, read ahead.
//!
//! SQLite writes a commit one page at a time, and every write through a
//! sync access handle costs about 20 µs in calls alone: an 8 MB value at
//! 8 KB pages was 1,027 writes and 21 ms, against 1.4 ms for one write of
//! the same bytes (`benches/experiments/011-gathered-writes.md`). This VFS
//! sits over the pool's. It keeps each file's writes that continue the
//! previous one, land inside it, or leave a short gap past it, in a buffer
//! of up to a mebibyte ([`Writes`]), and writes the buffer as one
//! before anything that could see the file differently: a read of those
//! bytes, a sync, a truncate, a file control, an unlock, a close, or a
//! write elsewhere. IndexedDB storage's writes are passed on as they
//! come ([`Writing::PassedOn`]): there a write lands in wasm memory, so
//! gathering saves no call, and bridging a gap would make its blocks new.
//!
//! Between two syncs SQLite assumes any of its writes may or may not have
//! reached the disk, in any order, so holding them until the next sync
//! changes nothing a power loss can leave (the power-loss simulation
//! records the OPFS calls below this layer). An unlock writes them too, so
//! a worker stopped between transactions loses nothing a commit wrote,
//! even with `synchronous=OFF`.
//!
//! A buffered write that fails is reported by the call that wrote the
//! buffer (the sync, say) with the pool's own code (`SQLITE_FULL` when the
//! quota is used up), and SQLite rolls the transaction back as it would
//! for the write itself.
//!
//! Reads are the mirror: SQLite reads a value's pages one by one too (an
//! 8 MB value at 8 KB pages is 1,024 reads), each through the same costly
//! call, so reads that continue each other are read ahead
//! ([`ReadAhead`]). Whatever is written over the range read ahead (through
//! the pool, held writes included once they are written) goes into it too,
//! and a truncate drops it; nothing is read ahead over writes still held.
//!
//! A worker opens several connections on one database under WAL, a writer
//! and readers, and the pool gives each the same handle. So what this VFS
//! keeps of a file is kept once per file name, for every connection that
//! has it open: the writes held and the bytes read ahead (one
//! connection's write is the next one's read), and, for the database
//! itself, the locks between the connections and the wal-index (`shm`).

use crate::codec::ahead::ReadAhead;
use crate::codec::locks::Held;
use crate::codec::writes::Writes;
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;
use std::rc::{Rc, Weak};

mod shm;

/// The VFS, registered under its own name over the pool's. Dropping it
/// unregisters it; it must outlive every connection opened through it.
pub struct Gathered {
    vfs: Box<ffi::sqlite3_vfs>,
    _under: Box<Under>,
    _name: CString,
}

/// Whether writes are held back and gathered, or passed on as they come.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Writing {
    /// Held and gathered: each write below costs a call (OPFS).
    Gathered,
    /// Passed on: a write below is cheap (IndexedDB storage's blocks, in
    /// wasm memory until a sync), and a gap's bytes written again would
    /// make their blocks new (SQLite's header rewrites at a commit, in a
    /// WAL laid out in frame groups: `codec::frames`).
    PassedOn,
}

/// The VFS below, and how writes go to it: this VFS's `pAppData`.
struct Under {
    vfs: *mut ffi::sqlite3_vfs,
    writing: Writing,
}

impl Gathered {
    /// Registers `name` over the registered VFS `inner`.
    pub fn register(inner: &str, name: &str, writing: Writing) -> Result<Gathered> {
        let inner_name = CString::new(inner).map_err(|_| Error::BadParam("a VFS name holds a NUL".into()))?;
        let name = CString::new(name).map_err(|_| Error::BadParam("a VFS name holds a NUL".into()))?;
        // SAFETY: SQLite's own lookup; the pool's VFS stays registered
        // until `Storage::release`, after this one is dropped.
        let under = unsafe { ffi::sqlite3_vfs_find(inner_name.as_ptr()) };
        if under.is_null() {
            return Err(Error::Unsupported(format!("the VFS {inner} is not registered")));
        }
        let u = unsafe { &*under };
        let mut below = Box::new(Under { vfs: under, writing });
        let vfs = Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: (INNER + u.szOsFile as usize) as c_int,
            mxPathname: u.mxPathname,
            pNext: ptr::null_mut(),
            zName: name.as_ptr(),
            pAppData: ptr::from_mut(&mut *below).cast(),
            xOpen: Some(open),
            xDelete: Some(delete),
            xAccess: Some(access),
            xFullPathname: Some(full_pathname),
            xDlOpen: None,
            xDlError: None,
            xDlSym: None,
            xDlClose: None,
            xRandomness: Some(randomness),
            xSleep: Some(sleep),
            xCurrentTime: Some(current_time),
            xGetLastError: Some(last_error),
            xCurrentTimeInt64: Some(current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        });
        let mut gathered = Gathered { vfs, _under: below, _name: name };
        // SAFETY: the struct and its name live in `gathered`, boxed, until
        // drop unregisters it.
        let rc = unsafe { ffi::sqlite3_vfs_register(&mut *gathered.vfs, 0) };
        if rc != ffi::SQLITE_OK {
            return Err(Error::Unsupported(format!(
                "could not register the VFS {:?} (SQLite code {rc})",
                gathered._name
            )));
        }
        Ok(gathered)
    }
}

impl Drop for Gathered {
    fn drop(&mut self) {
        // SAFETY: registered in `register`; no connection uses it any more.
        unsafe { ffi::sqlite3_vfs_unregister(&mut *self.vfs) };
    }
}

/// One open file: SQLite's handle, the pool's file after it in the same
/// allocation, and what this VFS keeps of the file.
///
/// SQLite aligns the allocations it makes to 8 bytes, but SQLite3 Multiple
/// Ciphers' VFS places the file it opens through this one within its own,
/// 4 bytes off. So this struct holds nothing wider than a pointer (its
/// state, with 8-byte integers, is boxed), and the pool's file is placed at
/// the next multiple of 8.
#[repr(C)]
struct File {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    own: Box<Own>,
}

/// What one connection's open file has of its own.
struct Own {
    state: Rc<RefCell<State>>,
    /// This connection's locks on the file (see `shm`).
    locks: Held,
    /// Whether this connection has the wal-index mapped.
    mapped: bool,
    writing: Writing,
}

/// What this VFS keeps of one file, shared by every connection that has
/// it open: the writes held back, the bytes read ahead, and for a
/// database, the locks and the wal-index.
#[derive(Default)]
struct State {
    held: Writes,
    ahead: ReadAhead,
    shm: shm::Shm,
}

thread_local! {
    /// Each open file's state, by name.
    static FILES: RefCell<HashMap<String, Weak<RefCell<State>>>> = Default::default();
}

/// The state of the file `name` (a temporary file, `None`, has its own).
fn state_of(name: Option<&str>) -> Rc<RefCell<State>> {
    let Some(name) = name else { return Default::default() };
    FILES.with(|files| {
        let mut files = files.borrow_mut();
        files.retain(|_, s| s.strong_count() > 0);
        if let Some(state) = files.get(name).and_then(Weak::upgrade) {
            return state;
        }
        let state: Rc<RefCell<State>> = Default::default();
        files.insert(name.to_owned(), Rc::downgrade(&state));
        state
    })
}

/// Bytes of a file's allocation before the pool's file, at most: `File`,
/// and room to align the pool's file to 8.
const INNER: usize = std::mem::size_of::<File>() + 7;

fn under(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    below(vfs).vfs
}

fn below<'a>(vfs: *mut ffi::sqlite3_vfs) -> &'a Under {
    // SAFETY: `pAppData` is the `Under` that `register` boxed in the
    // `Gathered`, which outlives every call through the VFS.
    unsafe { &*(*vfs).pAppData.cast::<Under>() }
}

impl File {
    /// # Safety
    /// `file` is a `File` this VFS opened.
    unsafe fn of<'a>(file: *mut ffi::sqlite3_file) -> &'a mut File {
        &mut *file.cast::<File>()
    }

    fn methods(&self) -> &ffi::sqlite3_io_methods {
        // SAFETY: the pool's open succeeded, so its file has methods.
        unsafe { &*(*self.inner).pMethods }
    }

    fn state(&self) -> RefMut<'_, State> {
        self.own.state.borrow_mut()
    }

    /// Writes what is held back, as one write; forgets it either way.
    fn write_held(&self) -> c_int {
        let mut state = self.state();
        state.write_held(self.inner)
    }
}

impl State {
    fn end(&self) -> i64 {
        self.held.end() as i64
    }

    /// Writes what is held back through `inner` (the pool's file), as one
    /// write, its gaps read from the file first; forgets it either way.
    fn write_held(&mut self, inner: *mut ffi::sqlite3_file) -> c_int {
        if self.held.is_empty() {
            return ffi::SQLITE_OK;
        }
        // SAFETY: the pool's file is open; the buffers are live for the calls.
        let rc = unsafe {
            let methods = &*(*inner).pMethods;
            let read = methods.xRead.expect("the pool reads files");
            let filled = self.held.fill(|at, into| {
                match read(inner, into.as_mut_ptr().cast(), into.len() as c_int, at as i64) {
                    ffi::SQLITE_OK => Ok(()),
                    rc => Err(rc),
                }
            });
            match filled {
                Ok(()) => {
                    let (at, bytes) = (self.held.at(), self.held.bytes());
                    self.ahead.written(at, bytes);
                    let write = methods.xWrite.expect("the pool's files write");
                    write(inner, bytes.as_ptr().cast(), bytes.len() as c_int, at as i64)
                }
                Err(rc) => rc,
            }
        };
        self.held.clear();
        rc
    }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    let end = file.cast::<u8>().add(std::mem::size_of::<File>());
    let inner = end.add(end.align_offset(8)).cast::<ffi::sqlite3_file>();
    let named = (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy());
    ptr::write(
        file.cast::<File>(),
        File {
            base: ffi::sqlite3_file { pMethods: ptr::null() },
            inner,
            own: Box::new(Own {
                state: state_of(named.as_deref()),
                locks: Held::default(),
                mapped: false,
                writing: below(vfs).writing,
            }),
        },
    );
    let vfs = under(vfs);
    let rc = ((*vfs).xOpen.expect("the pool opens files"))(vfs, name, inner, flags, out);
    if (*inner).pMethods.is_null() {
        // SQLite closes nothing without methods: drop the buffer here.
        ptr::drop_in_place(file.cast::<File>());
        return rc;
    }
    (*file).pMethods = &METHODS;
    rc
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(shm::lock),
    xUnlock: Some(shm::unlock),
    xCheckReservedLock: Some(shm::check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm::map),
    xShmLock: Some(shm::lock_slots),
    xShmBarrier: Some(shm::barrier),
    xShmUnmap: Some(shm::unmap),
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    let f = File::of(file);
    let rc = f.write_held();
    shm::release(f);
    let closed = (f.methods().xClose.expect("the pool closes files"))(f.inner);
    ptr::drop_in_place(file.cast::<File>());
    if rc != ffi::SQLITE_OK {
        rc
    } else {
        closed
    }
}

unsafe extern "C" fn read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amt: c_int, off: i64) -> c_int {
    let f = File::of(file);
    let inner = f.inner;
    let mut state = f.state();
    if !state.held.is_empty() && off < state.end() && off + amt as i64 > state.held.at() as i64 {
        let rc = state.write_held(inner);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    let out = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amt as usize);
    // SAFETY: the pool's file is open, its methods live as long.
    let methods = &*(*inner).pMethods;
    let held = (!state.held.is_empty()).then(|| (state.held.at() as i64, state.end()));
    // What may be read ahead (or behind): the pool's file from `from` on,
    // up to the first write still held.
    let available = |from: u64| {
        let mut size = 0i64;
        if (methods.xFileSize.expect("the pool sizes files"))(inner, &mut size) != ffi::SQLITE_OK {
            return 0;
        }
        if let Some((at, _)) = held.filter(|&(_, end)| end > from as i64) {
            size = size.min(at);
        }
        (size - from as i64).max(0) as u64
    };
    let read = methods.xRead.expect("the pool reads files");
    let from_pool =
        |at: u64, into: &mut [u8]| match read(inner, into.as_mut_ptr().cast(), into.len() as c_int, at as i64) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(rc),
        };
    match state.ahead.read(out, off as u64, available, from_pool) {
        Ok(()) => ffi::SQLITE_OK,
        Err(rc) => rc,
    }
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, buf: *const c_void, amt: c_int, off: i64) -> c_int {
    let f = File::of(file);
    let inner = f.inner;
    let methods = f.methods();
    let mut state = f.state();
    let bytes = std::slice::from_raw_parts(buf.cast::<u8>(), amt as usize);
    // The pool's file size, for a gap between held writes (a call to OPFS:
    // asked once per buffer).
    let size = || {
        let mut size = 0i64;
        match (methods.xFileSize.expect("the pool sizes files"))(inner, &mut size) {
            ffi::SQLITE_OK => size.max(0) as u64,
            _ => 0,
        }
    };
    let State { held, ahead, .. } = &mut *state;
    if f.own.writing == Writing::Gathered && held.hold(off as u64, bytes, ahead, size) {
        return ffi::SQLITE_OK;
    }
    let rc = state.write_held(inner);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let State { held, ahead, .. } = &mut *state;
    if f.own.writing == Writing::Gathered && held.hold(off as u64, bytes, ahead, size) {
        return ffi::SQLITE_OK;
    }
    // Larger than a buffer, or passed on: written at once.
    ahead.written(off as u64, bytes);
    (methods.xWrite.expect("the pool's files write"))(inner, buf, amt, off)
}

/// Writes what is held back, then passes the call on.
macro_rules! after_held {
    ($name:ident ( $($arg:ident : $ty:ty),* ) => $method:ident) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            let f = File::of(file);
            let rc = f.write_held();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            (f.methods().$method.expect(concat!("the pool has ", stringify!($method))))(f.inner, $($arg),*)
        }
    };
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    let f = File::of(file);
    let rc = f.write_held();
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    f.state().ahead.clear();
    (f.methods().xTruncate.expect("the pool truncates"))(f.inner, size)
}

after_held!(sync(flags: c_int) => xSync);
after_held!(file_control(op: c_int, arg: *mut c_void) => xFileControl);

/// A file control of this VFS's own, which like every file control writes
/// what the file holds back first, and does nothing else (the pool answers
/// `SQLITE_NOTFOUND`). A checkpoint in slices (`backfill.rs`) ends each
/// slice with it, so its writes fail, if they do, in the slice, not in the
/// call that comes next.
pub const FCNTL_WRITE_HELD: c_int = 0x5245_5351;

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    let f = File::of(file);
    let rc = (f.methods().xFileSize.expect("the pool sizes files"))(f.inner, size);
    let state = f.state();
    if rc == ffi::SQLITE_OK && !state.held.is_empty() {
        *size = (*size).max(state.end());
    }
    rc
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let f = File::of(file);
    f.methods().xSectorSize.map_or(4096, |m| m(f.inner))
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let f = File::of(file);
    f.methods().xDeviceCharacteristics.map_or(0, |m| m(f.inner))
}

// The rest of the VFS is the pool's, called with the pool's VFS.

unsafe extern "C" fn delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync: c_int) -> c_int {
    if !name.is_null() {
        // A file made again under this name starts with nothing kept.
        let name = CStr::from_ptr(name).to_string_lossy();
        if let Some(state) = FILES.with(|files| files.borrow().get(name.as_ref()).and_then(Weak::upgrade)) {
            let mut state = state.borrow_mut();
            state.held.clear();
            state.ahead.clear();
        }
    }
    let vfs = under(vfs);
    ((*vfs).xDelete.expect("the pool deletes"))(vfs, name, sync)
}

unsafe extern "C" fn access(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
    let vfs = under(vfs);
    ((*vfs).xAccess.expect("the pool answers access"))(vfs, name, flags, out)
}

unsafe extern "C" fn full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    let vfs = under(vfs);
    ((*vfs).xFullPathname.expect("the pool names files"))(vfs, name, n, out)
}

unsafe extern "C" fn randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let vfs = under(vfs);
    ((*vfs).xRandomness.expect("the pool has randomness"))(vfs, n, out)
}

unsafe extern "C" fn sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    let vfs = under(vfs);
    ((*vfs).xSleep.expect("the pool sleeps"))(vfs, micros)
}

unsafe extern "C" fn current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    let vfs = under(vfs);
    ((*vfs).xCurrentTime.expect("the pool tells time"))(vfs, out)
}

unsafe extern "C" fn last_error(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let vfs = under(vfs);
    (*vfs).xGetLastError.map_or(0, |m| m(vfs, n, out))
}

unsafe extern "C" fn current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    let vfs = under(vfs);
    match (*vfs).xCurrentTimeInt64 {
        Some(m) if (*vfs).iVersion >= 2 => m(vfs, out),
        _ => {
            let mut days = 0.0;
            let rc = ((*vfs).xCurrentTime.expect("the pool tells time"))(vfs, &mut days);
            *out = (days * 86_400_000.0) as i64;
            rc
        }
    }
}
