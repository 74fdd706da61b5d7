//! Which storage a database name opens in (issue 30): OPFS where the
//! browser has sync access handles, else IndexedDB, and never a new, empty
//! database in one storage while the name's data is in the other.
//!
//! Where each name lives is recorded when its data is first written (the
//! record is the caller's: one IndexedDB store for the origin). A name with
//! a record opens where it says, or is refused with the reason that storage
//! failed. A name without one (new, or made before the record existed) is
//! placed by what OPFS does here and now: a browser without it (no
//! `getDirectory`, a private window, no sync access handles) gets
//! IndexedDB; OPFS that exists but failed this time (Safari's first
//! attempt can fail with `UnknownError`) is refused, since the name's data
//! could be there.

use super::{Error, Result};

/// A place a database lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    Opfs,
    Idb,
    Memory,
}

impl Storage {
    /// As `open()`'s `storage` option and `db.storage` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Storage::Opfs => "opfs",
            Storage::Idb => "idb",
            Storage::Memory => "memory",
        }
    }
}

/// What the worker found when it looked at OPFS for the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opfs {
    /// OPFS answered: the name's sync access handles opened, or (asked for
    /// IndexedDB) its directory was read and holds no data.
    Works,
    /// The name's OPFS directory holds data (read without opening it).
    HasData,
    /// This browser has no OPFS sync access handles, for the reason given
    /// (the browser's error, or what is missing).
    Absent(String),
    /// OPFS is here but failed this time, for the reason given: whether the
    /// name has data there cannot be told.
    Failed(String),
    /// Not looked at, since the name's record answers.
    Untried,
}

/// Where `name` opens: `asked` is `open()`'s `storage` option (`None`: the
/// default for a file name), `recorded` where its data lives, if recorded.
/// A refusal is `RESQ_UNSUPPORTED` with the reason.
pub fn place(name: &str, asked: Option<Storage>, recorded: Option<Storage>, opfs: &Opfs) -> Result<Storage> {
    if asked == Some(Storage::Memory) {
        return Ok(Storage::Memory);
    }
    let refuse = |why: String| Err(Error::Unsupported(why));
    let move_hint = "to move it, export() it and importDatabase() it with the other storage";
    if let Some(lives) = recorded {
        if let Some(a) = asked.filter(|&a| a != lives) {
            return refuse(format!(
                "{name:?} lives in {}, not {}: open it without `storage` or with storage '{}'; {move_hint}",
                lives.as_str(),
                a.as_str(),
                lives.as_str()
            ));
        }
        return match (lives, opfs) {
            (Storage::Opfs, Opfs::Absent(why) | Opfs::Failed(why)) => {
                refuse(format!("{name:?} lives in OPFS, which this browser refused now ({why}); nothing was opened"))
            }
            (Storage::Opfs, Opfs::Untried) => refuse(format!("{name:?} lives in OPFS, which was not tried")),
            _ => Ok(lives),
        };
    }
    let unknown = |why: &str| {
        refuse(format!(
            "OPFS failed here ({why}), so whether {name:?} has data there cannot be told; nothing was opened: try again"
        ))
    };
    match asked {
        Some(Storage::Opfs) => match opfs {
            Opfs::Works | Opfs::HasData => Ok(Storage::Opfs),
            Opfs::Absent(why) | Opfs::Failed(why) => {
                refuse(format!("OPFS sync access handles are not available here ({why})"))
            }
            Opfs::Untried => unknown("not tried"),
        },
        Some(Storage::Idb) => match opfs {
            Opfs::HasData => refuse(format!(
                "{name:?} has data in OPFS, so it is not opened as a new database in IndexedDB; {move_hint}"
            )),
            // Asked for by name: where OPFS cannot be read (Safari's private
            // windows may fail with UnknownError every time), this is the
            // app's way to keep data at all.
            Opfs::Works | Opfs::Absent(_) | Opfs::Failed(_) => Ok(Storage::Idb),
            Opfs::Untried => unknown("not tried"),
        },
        // The default for a file name.
        _ => match opfs {
            Opfs::Works | Opfs::HasData => Ok(Storage::Opfs),
            Opfs::Absent(_) => Ok(Storage::Idb),
            Opfs::Failed(why) => unknown(why),
            Opfs::Untried => unknown("not tried"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::Storage::{Idb, Memory, Opfs as O};
    use super::*;

    const WORKS: Opfs = Opfs::Works;
    const HAS_DATA: Opfs = Opfs::HasData;

    fn absent() -> Opfs {
        Opfs::Absent("SecurityError: private window".into())
    }

    fn failed() -> Opfs {
        Opfs::Failed("UnknownError: try again".into())
    }

    /// The place, or the refusal's code and whether it names `reason`.
    fn at(asked: Option<Storage>, recorded: Option<Storage>, opfs: &Opfs) -> std::result::Result<Storage, String> {
        place("m.db", asked, recorded, opfs).map_err(|e| {
            assert_eq!(e.code(), "RESQ_UNSUPPORTED", "{e}");
            e.to_string()
        })
    }

    #[test]
    fn a_new_name_goes_to_opfs_where_it_works_else_to_indexeddb() {
        assert_eq!(at(None, None, &WORKS), Ok(O));
        assert_eq!(at(None, None, &HAS_DATA), Ok(O));
        assert_eq!(at(None, None, &absent()), Ok(Idb));
        assert_eq!(at(Some(Idb), None, &WORKS), Ok(Idb));
        assert_eq!(at(Some(Idb), None, &absent()), Ok(Idb));
        assert_eq!(at(Some(O), None, &WORKS), Ok(O));
        assert_eq!(at(Some(Memory), None, &absent()), Ok(Memory));
    }

    #[test]
    fn opfs_asked_where_there_is_none_is_refused_with_the_reason() {
        let e = at(Some(O), None, &absent()).unwrap_err();
        assert!(e.contains("SecurityError"), "{e}");
        let e = at(Some(O), None, &failed()).unwrap_err();
        assert!(e.contains("UnknownError"), "{e}");
    }

    #[test]
    fn opfs_that_failed_this_time_gives_a_new_indexeddb_database_only_if_asked() {
        // Whether the name has data in OPFS cannot be told.
        let e = at(None, None, &failed()).unwrap_err();
        assert!(e.contains("UnknownError") && e.contains("try again"), "{e}");
        // Unless IndexedDB is asked for by name: the app's choice.
        assert_eq!(at(Some(Idb), None, &failed()), Ok(Idb));
        // Data in OPFS, not recorded (made before the record existed).
        let e = at(Some(Idb), None, &HAS_DATA).unwrap_err();
        assert!(e.contains("importDatabase"), "{e}");
        // Not looked at, with no record to answer: refused, never placed.
        for asked in [None, Some(Idb), Some(O)] {
            let e = at(asked, None, &Opfs::Untried).unwrap_err();
            assert!(e.contains("not tried"), "{e}");
        }
        let e = at(None, Some(O), &Opfs::Untried).unwrap_err();
        assert!(e.contains("not tried"), "{e}");
    }

    #[test]
    fn a_recorded_name_opens_where_it_lives_or_is_refused() {
        assert_eq!(at(None, Some(O), &HAS_DATA), Ok(O));
        assert_eq!(at(Some(O), Some(O), &HAS_DATA), Ok(O));
        // Recorded in IndexedDB: there, even where OPFS works now.
        assert_eq!(at(None, Some(Idb), &WORKS), Ok(Idb));
        assert_eq!(at(None, Some(Idb), &failed()), Ok(Idb));
        assert_eq!(at(None, Some(Idb), &Opfs::Untried), Ok(Idb));
        assert_eq!(at(Some(Idb), Some(Idb), &absent()), Ok(Idb));
        // Recorded in OPFS, which fails now: refused, never a new database.
        for opfs in [absent(), failed()] {
            for asked in [None, Some(O)] {
                let e = at(asked, Some(O), &opfs).unwrap_err();
                assert!(e.contains("lives in OPFS") && e.contains("Error"), "{e}");
            }
        }
        // Asked for the other storage: refused, naming where it lives.
        let e = at(Some(Idb), Some(O), &HAS_DATA).unwrap_err();
        assert!(e.contains("lives in opfs, not idb"), "{e}");
        let e = at(Some(O), Some(Idb), &WORKS).unwrap_err();
        assert!(e.contains("lives in idb, not opfs"), "{e}");
        // Memory asked: a memory database, whatever the name holds elsewhere.
        assert_eq!(at(Some(Memory), Some(O), &HAS_DATA), Ok(Memory));
    }
}
