//! Locks between the connections one worker opens on one database file.
//!
//! The OPFS pool keeps one handle per file and locks nothing: OPFS already
//! keeps other workers out, and the pool assumed one connection per file.
//! Under WAL a worker opens a writer and readers on the same file, so this
//! table is what keeps them apart, as a POSIX VFS's advisory locks keep
//! processes apart: the file's lock levels (SQLite's `xLock`), and the
//! wal-index's eight lock slots (`xShmLock`). Everything runs on one
//! thread, so a lock that is taken returns [`Busy`] at once and never
//! waits; SQLite then retries or gives up as it does with any other VFS.

/// A lock is held by another connection.
#[derive(Debug, PartialEq, Eq)]
pub struct Busy;

/// SQLite's file lock levels, in order.
pub const NONE: i32 = 0;
pub const SHARED: i32 = 1;
pub const RESERVED: i32 = 2;
pub const PENDING: i32 = 3;
pub const EXCLUSIVE: i32 = 4;

/// The wal-index's lock slots (`SQLITE_SHM_NLOCK`).
pub const SLOTS: usize = 8;

/// Every connection's locks on one file.
#[derive(Default, Debug)]
pub struct Locks {
    /// Connections at SHARED or above.
    shared: u32,
    /// A connection is at RESERVED or above.
    reserved: bool,
    /// A connection is at PENDING or above: no new SHARED lock.
    pending: bool,
    exclusive: bool,
    /// Per wal-index slot: how many connections hold it shared, or -1 for
    /// one holding it exclusive.
    slots: [i32; SLOTS],
}

/// One connection's locks on the file: its level, and which wal-index
/// slots it holds (bit `i` for slot `i`).
#[derive(Default, Debug, Clone, Copy)]
pub struct Held {
    pub level: i32,
    shared: u8,
    exclusive: u8,
}

impl Locks {
    /// Raises `held` to `want` (SHARED, RESERVED or EXCLUSIVE), as SQLite's
    /// `xLock` does. An EXCLUSIVE lock that other readers keep out leaves
    /// `held` at PENDING, so no new reader comes while SQLite retries.
    pub fn lock(&mut self, held: &mut Held, want: i32) -> Result<(), Busy> {
        if held.level >= want {
            return Ok(());
        }
        match want {
            SHARED => {
                if self.pending || self.exclusive {
                    return Err(Busy);
                }
                self.shared += 1;
            }
            RESERVED => {
                if self.reserved {
                    return Err(Busy);
                }
                self.reserved = true;
            }
            _ => {
                if held.level < PENDING {
                    // Straight from SHARED (a hot journal's rollback) takes
                    // what RESERVED would have.
                    if held.level < RESERVED && self.reserved {
                        return Err(Busy);
                    }
                    if held.level < RESERVED {
                        self.reserved = true;
                    }
                    self.pending = true;
                    held.level = PENDING;
                }
                if self.shared > 1 {
                    return Err(Busy);
                }
                self.exclusive = true;
                held.level = EXCLUSIVE;
                return Ok(());
            }
        }
        held.level = want;
        Ok(())
    }

    /// Lowers `held` to `to` (SHARED or NONE), as `xUnlock` does.
    pub fn unlock(&mut self, held: &mut Held, to: i32) {
        if held.level <= to {
            return;
        }
        if held.level >= RESERVED {
            self.reserved = false;
        }
        if held.level >= PENDING {
            self.pending = false;
        }
        if held.level == EXCLUSIVE {
            self.exclusive = false;
        }
        if to == NONE && held.level >= SHARED {
            self.shared -= 1;
        }
        held.level = to;
    }

    /// Whether any connection holds RESERVED or above (`xCheckReservedLock`).
    pub fn reserved(&self) -> bool {
        self.reserved || self.pending || self.exclusive
    }

    /// Takes wal-index slots `from..from + n`, shared or exclusive, as
    /// `xShmLock` does: all of them or none.
    pub fn lock_slots(&mut self, held: &mut Held, from: usize, n: usize, exclusive: bool) -> Result<(), Busy> {
        let mask = slot_mask(from, n);
        if exclusive {
            let others = |i: usize| self.slots[i] - i32::from(held.shared & (1 << i) != 0);
            if (from..from + n).any(|i| held.exclusive & (1 << i) == 0 && others(i) != 0) {
                return Err(Busy);
            }
            for i in from..from + n {
                if held.shared & (1 << i) != 0 {
                    held.shared &= !(1 << i);
                }
                self.slots[i] = -1;
            }
            held.exclusive |= mask;
        } else {
            for i in from..from + n {
                if held.shared & (1 << i) == 0 && held.exclusive & (1 << i) == 0 && self.slots[i] < 0 {
                    return Err(Busy);
                }
            }
            for i in from..from + n {
                if held.shared & (1 << i) == 0 && held.exclusive & (1 << i) == 0 {
                    self.slots[i] += 1;
                    held.shared |= 1 << i;
                }
            }
        }
        Ok(())
    }

    /// Lets go of wal-index slots `from..from + n`, however they are held.
    pub fn unlock_slots(&mut self, held: &mut Held, from: usize, n: usize) {
        for i in from..from + n {
            if held.exclusive & (1 << i) != 0 {
                self.slots[i] = 0;
            } else if held.shared & (1 << i) != 0 {
                self.slots[i] -= 1;
            }
        }
        let mask = slot_mask(from, n);
        held.shared &= !mask;
        held.exclusive &= !mask;
    }

    /// Lets go of everything `held` holds: a connection's file closing.
    pub fn release(&mut self, held: &mut Held) {
        self.unlock_slots(held, 0, SLOTS);
        self.unlock(held, NONE);
    }
}

fn slot_mask(from: usize, n: usize) -> u8 {
    (((1u16 << n) - 1) << from) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_share_and_a_writer_waits_for_them() {
        let mut l = Locks::default();
        let (mut a, mut b) = (Held::default(), Held::default());
        l.lock(&mut a, SHARED).unwrap();
        l.lock(&mut b, SHARED).unwrap();
        l.lock(&mut a, RESERVED).unwrap();
        assert_eq!(l.lock(&mut b, RESERVED), Err(Busy));
        assert!(l.reserved());
        // b still reads: a waits at PENDING, and no new reader comes.
        assert_eq!(l.lock(&mut a, EXCLUSIVE), Err(Busy));
        assert_eq!(a.level, PENDING);
        let mut c = Held::default();
        assert_eq!(l.lock(&mut c, SHARED), Err(Busy));
        l.unlock(&mut b, NONE);
        l.lock(&mut a, EXCLUSIVE).unwrap();
        l.unlock(&mut a, SHARED);
        l.lock(&mut c, SHARED).unwrap();
        l.unlock(&mut a, NONE);
        l.unlock(&mut c, NONE);
        assert!(!l.reserved());
        assert_eq!(l.shared, 0);
    }

    #[test]
    fn a_hot_journal_goes_from_shared_to_exclusive() {
        let mut l = Locks::default();
        let mut a = Held::default();
        l.lock(&mut a, SHARED).unwrap();
        l.lock(&mut a, EXCLUSIVE).unwrap();
        assert!(l.reserved());
        l.release(&mut a);
        assert!(!l.reserved());
        let mut b = Held::default();
        l.lock(&mut b, SHARED).unwrap();
        l.lock(&mut b, RESERVED).unwrap();
    }

    #[test]
    fn slots_are_shared_or_exclusive() {
        let mut l = Locks::default();
        let (mut a, mut b) = (Held::default(), Held::default());
        l.lock_slots(&mut a, 3, 1, false).unwrap();
        l.lock_slots(&mut b, 3, 1, false).unwrap();
        assert_eq!(l.lock_slots(&mut a, 3, 1, true), Err(Busy));
        l.unlock_slots(&mut b, 3, 1);
        // Its own shared lock does not stand in its way.
        l.lock_slots(&mut a, 3, 1, true).unwrap();
        assert_eq!(l.lock_slots(&mut b, 3, 1, false), Err(Busy));
        assert_eq!(l.lock_slots(&mut b, 2, 3, true), Err(Busy));
        // A failed range takes nothing.
        l.lock_slots(&mut b, 2, 1, true).unwrap();
        l.unlock_slots(&mut a, 3, 1);
        l.lock_slots(&mut b, 3, 5, true).unwrap();
        l.release(&mut b);
        assert_eq!(l.slots, [0; SLOTS]);
    }

    #[test]
    fn release_lets_go_of_everything() {
        let mut l = Locks::default();
        let mut a = Held::default();
        l.lock(&mut a, SHARED).unwrap();
        l.lock(&mut a, RESERVED).unwrap();
        l.lock_slots(&mut a, 0, 1, true).unwrap();
        l.lock_slots(&mut a, 4, 2, false).unwrap();
        l.release(&mut a);
        assert_eq!(l.slots, [0; SLOTS]);
        assert_eq!(l.shared, 0);
        assert!(!l.reserved());
        assert_eq!(a.level, NONE);
    }
}
