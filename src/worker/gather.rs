//! Writes that continue each other, gathered into one OPFS write; reads
//! that continue each other, read ahead.
//!
//! SQLite writes a commit one page at a time, and every write through a
//! sync access handle costs about 20 µs in calls alone: an 8 MB value at
//! 8 KB pages was 1,027 writes and 21 ms, against 1.4 ms for one write of
//! the same bytes (`benches/experiments/011-gathered-writes.md`). This VFS
//! sits over the pool's. It keeps each file's writes that continue the
//! previous one (or land inside it) in a buffer of up to [`LIMIT`] bytes,
//! and writes the buffer as one before anything that could see the file
//! differently: a read of those bytes, a sync, a truncate, a file control,
//! an unlock, a close, or a write elsewhere.
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
//! the pool, held writes included once they are written) or a truncate
//! drops it; nothing is read ahead over writes still held.

use crate::codec::ahead::ReadAhead;
use crate::codec::{Error, Result};
use sqlite_wasm_rs as ffi;
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;

/// The most one file holds back: 1 MiB, 128 pages of 8 KB, a few calls
/// per 8 MB value, and little wasm memory per open file.
const LIMIT: usize = 1 << 20;

/// The VFS, registered under its own name over the pool's. Dropping it
/// unregisters it; it must outlive every connection opened through it.
pub struct Gathered {
    vfs: Box<ffi::sqlite3_vfs>,
    _name: CString,
}

impl Gathered {
    /// Registers `name` over the registered VFS `inner`.
    pub fn register(inner: &str, name: &str) -> Result<Gathered> {
        let inner_name = CString::new(inner).map_err(|_| Error::BadParam("a VFS name holds a NUL".into()))?;
        let name = CString::new(name).map_err(|_| Error::BadParam("a VFS name holds a NUL".into()))?;
        // SAFETY: SQLite's own lookup; the pool's VFS stays registered
        // until `Storage::release`, after this one is dropped.
        let under = unsafe { ffi::sqlite3_vfs_find(inner_name.as_ptr()) };
        if under.is_null() {
            return Err(Error::Unsupported(format!("the VFS {inner} is not registered")));
        }
        let u = unsafe { &*under };
        let vfs = Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: (INNER + u.szOsFile as usize) as c_int,
            mxPathname: u.mxPathname,
            pNext: ptr::null_mut(),
            zName: name.as_ptr(),
            pAppData: under.cast(),
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
        let mut gathered = Gathered { vfs, _name: name };
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
    state: Box<State>,
}

/// The writes held back and the bytes read ahead of one file.
struct State {
    held: Vec<u8>,
    /// The file offset of `held[0]`.
    at: i64,
    ahead: ReadAhead,
}

/// Bytes of a file's allocation before the pool's file, at most: `File`,
/// and room to align the pool's file to 8.
const INNER: usize = std::mem::size_of::<File>() + 7;

fn under(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: `pAppData` is the pool's VFS, set in `register`.
    unsafe { (*vfs).pAppData.cast() }
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

    fn end(&self) -> i64 {
        self.state.at + self.state.held.len() as i64
    }

    /// Writes what is held back, as one write; forgets it either way.
    fn write_held(&mut self) -> c_int {
        if self.state.held.is_empty() {
            return ffi::SQLITE_OK;
        }
        self.state.ahead.overwritten(self.state.at as u64, self.end() as u64);
        let write = self.methods().xWrite.expect("the pool's files write");
        // SAFETY: the pool's file is open; `held` is live for the call.
        let rc = unsafe {
            write(self.inner, self.state.held.as_ptr().cast(), self.state.held.len() as c_int, self.state.at)
        };
        self.state.held.clear();
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
    ptr::write(
        file.cast::<File>(),
        File {
            base: ffi::sqlite3_file { pMethods: ptr::null() },
            inner,
            state: Box::new(State { held: Vec::new(), at: 0, ahead: ReadAhead::default() }),
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
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    let f = File::of(file);
    let rc = f.write_held();
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
    if !f.state.held.is_empty() && off < f.end() && off + amt as i64 > f.state.at {
        let rc = f.write_held();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    let out = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amt as usize);
    // SAFETY: the pool's file is open, its methods live as long.
    let (inner, methods) = (f.inner, &*(*f.inner).pMethods);
    let held = (!f.state.held.is_empty()).then(|| (f.state.at, f.end()));
    // What may be read ahead: the pool's file from `off` on, up to the
    // first write still held.
    let available = || {
        let mut size = 0i64;
        if (methods.xFileSize.expect("the pool sizes files"))(inner, &mut size) != ffi::SQLITE_OK {
            return 0;
        }
        if let Some((at, _)) = held.filter(|&(_, end)| end > off) {
            size = size.min(at);
        }
        (size - off).max(0) as u64
    };
    let read = methods.xRead.expect("the pool reads files");
    let from_pool =
        |at: u64, into: &mut [u8]| match read(inner, into.as_mut_ptr().cast(), into.len() as c_int, at as i64) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(rc),
        };
    match f.state.ahead.read(out, off as u64, available, from_pool) {
        Ok(()) => ffi::SQLITE_OK,
        Err(rc) => rc,
    }
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, buf: *const c_void, amt: c_int, off: i64) -> c_int {
    let f = File::of(file);
    let bytes = std::slice::from_raw_parts(buf.cast::<u8>(), amt as usize);
    if !f.state.held.is_empty() {
        if off == f.end() && f.state.held.len() + bytes.len() <= LIMIT {
            f.state.held.extend_from_slice(bytes);
            return ffi::SQLITE_OK;
        }
        if off >= f.state.at && off + amt as i64 <= f.end() {
            let from = (off - f.state.at) as usize;
            f.state.held[from..from + bytes.len()].copy_from_slice(bytes);
            return ffi::SQLITE_OK;
        }
        let rc = f.write_held();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    if bytes.len() >= LIMIT {
        f.state.ahead.overwritten(off as u64, (off + amt as i64) as u64);
        return (f.methods().xWrite.expect("the pool's files write"))(f.inner, buf, amt, off);
    }
    if f.state.held.capacity() == 0 {
        f.state.held.reserve_exact(LIMIT);
    }
    f.state.held.extend_from_slice(bytes);
    f.state.at = off;
    ffi::SQLITE_OK
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
    f.state.ahead.clear();
    (f.methods().xTruncate.expect("the pool truncates"))(f.inner, size)
}

after_held!(sync(flags: c_int) => xSync);
after_held!(unlock(level: c_int) => xUnlock);
after_held!(file_control(op: c_int, arg: *mut c_void) => xFileControl);

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    let f = File::of(file);
    let rc = (f.methods().xFileSize.expect("the pool sizes files"))(f.inner, size);
    if rc == ffi::SQLITE_OK && !f.state.held.is_empty() {
        *size = (*size).max(f.end());
    }
    rc
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let f = File::of(file);
    (f.methods().xLock.expect("the pool locks"))(f.inner, level)
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let f = File::of(file);
    (f.methods().xCheckReservedLock.expect("the pool locks"))(f.inner, out)
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
