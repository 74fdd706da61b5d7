//! Locks and the wal-index between the connections one worker opens on a
//! database: the writer and its readers under WAL.
//!
//! One worker owns the file (OPFS keeps other workers out), so the
//! wal-index need not be shared across threads: it lives here, in this
//! worker's memory, in 32 KB regions that stay where they are until the
//! last connection unmaps them, and is rebuilt from the `-wal` file (WAL
//! recovery) by the next connection after that. The locks are the pure
//! table of `codec::locks`, one per file.

use super::File;
use crate::codec::locks::{Busy, SLOTS};
use sqlite_wasm_rs as ffi;
use std::ffi::{c_int, c_void};

/// A database's locks and wal-index, in its file's shared state.
#[derive(Default)]
pub(super) struct Shm {
    locks: crate::codec::locks::Locks,
    /// The wal-index's regions, 8-byte aligned, never moved while mapped.
    regions: Vec<Box<[u64]>>,
    /// Connections that have it mapped.
    mapped: usize,
}

fn code(r: Result<(), Busy>) -> c_int {
    match r {
        Ok(()) => ffi::SQLITE_OK,
        Err(Busy) => ffi::SQLITE_BUSY,
    }
}

pub(super) unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let f = File::of(file);
    let mut state = f.own.state.borrow_mut();
    code(state.shm.locks.lock(&mut f.own.locks, level))
}

pub(super) unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let f = File::of(file);
    let mut state = f.own.state.borrow_mut();
    // An unlock ends a transaction's writes: they leave this VFS first.
    let rc = state.write_held(f.inner);
    state.shm.locks.unlock(&mut f.own.locks, level);
    rc
}

pub(super) unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let f = File::of(file);
    *out = c_int::from(f.own.state.borrow().shm.locks.reserved());
    ffi::SQLITE_OK
}

/// Everything a closing connection holds: its locks and its mapping.
pub(super) fn release(f: &mut File) {
    let mut state = f.own.state.borrow_mut();
    state.shm.locks.release(&mut f.own.locks);
    if f.own.mapped {
        f.own.mapped = false;
        unmapped(&mut state.shm);
    }
}

fn unmapped(shm: &mut Shm) {
    shm.mapped -= 1;
    if shm.mapped == 0 {
        shm.regions = Vec::new();
    }
}

pub(super) unsafe extern "C" fn map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let f = File::of(file);
    let mut state = f.own.state.borrow_mut();
    let shm = &mut state.shm;
    if !f.own.mapped {
        f.own.mapped = true;
        shm.mapped += 1;
    }
    let (region, words) = (region as usize, (size as usize).div_ceil(8));
    if region >= shm.regions.len() {
        if extend == 0 {
            *out = std::ptr::null_mut();
            return ffi::SQLITE_OK;
        }
        shm.regions.resize_with(region + 1, || vec![0u64; words].into_boxed_slice());
    }
    *out = shm.regions[region].as_mut_ptr().cast();
    ffi::SQLITE_OK
}

pub(super) unsafe extern "C" fn lock_slots(file: *mut ffi::sqlite3_file, from: c_int, n: c_int, flags: c_int) -> c_int {
    let f = File::of(file);
    let (from, n) = (from as usize, n as usize);
    if n == 0 || from + n > SLOTS {
        return ffi::SQLITE_IOERR_SHMLOCK;
    }
    let mut state = f.own.state.borrow_mut();
    let locks = &mut state.shm.locks;
    if flags & ffi::SQLITE_SHM_UNLOCK != 0 {
        locks.unlock_slots(&mut f.own.locks, from, n);
        return ffi::SQLITE_OK;
    }
    code(locks.lock_slots(&mut f.own.locks, from, n, flags & ffi::SQLITE_SHM_EXCLUSIVE != 0))
}

/// One thread reads and writes the wal-index: nothing to order but the
/// compiler's accesses.
pub(super) unsafe extern "C" fn barrier(_file: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Unmaps the wal-index for this connection; the last one out frees it
/// (`delete` or not: it was never anywhere but here).
pub(super) unsafe extern "C" fn unmap(file: *mut ffi::sqlite3_file, _delete: c_int) -> c_int {
    let f = File::of(file);
    let mut state = f.own.state.borrow_mut();
    state.shm.locks.unlock_slots(&mut f.own.locks, 0, SLOTS);
    if f.own.mapped {
        f.own.mapped = false;
        unmapped(&mut state.shm);
    }
    ffi::SQLITE_OK
}
