//! Which tables committed transactions changed: the bookkeeping behind
//! `takeChanged`, the worker side of live queries.
//!
//! SQLite tells the worker of each row change as it happens (a pre-update
//! hook) and of each transaction's end (commit and rollback hooks). A change
//! is *pending* until its transaction ends: a commit makes every pending
//! table *committed*, a rollback forgets them. [`Changes::take`] hands the
//! committed tables out once.
//!
//! `ROLLBACK TO` a savepoint fires no hook. The engine's own savepoints
//! (scripts, batches, streamed writes) undo their pending tables with a
//! [`Mark`] taken when they began; a user's `ROLLBACK TO` leaves its tables
//! pending, so a later commit may report a table whose rows did not change
//! in the end. A table reported for nothing costs a watcher one re-run (it
//! compares result hashes); a change never reported would be a stale result.
//!
//! ```
//! use resq_wasm::codec::changes::Changes;
//! let mut c = Changes::default();
//! c.changed("Photos");
//! c.changed("tags");
//! c.committed();
//! c.changed("photos");
//! c.rolled_back();
//! assert_eq!(c.take(), ["photos", "tags"]);
//! assert!(c.take().is_empty());
//! ```

use std::collections::BTreeSet;

/// The name DDL is reported under: any change to the schema table (CREATE,
/// DROP, ALTER) changes it, under its current name rather than the legacy
/// `sqlite_master` SQLite uses internally (both name the same table).
pub const SCHEMA: &str = "sqlite_schema";

/// A table name as live queries compare it: SQLite's names are
/// case-insensitive (ASCII only), so lowercased; `sqlite_master` is
/// [`SCHEMA`]. The one rule for `queryTables` and `takeChanged` alike.
pub fn table_key(name: &str) -> String {
    let key = name.to_ascii_lowercase();
    if key == "sqlite_master" {
        SCHEMA.to_owned()
    } else {
        key
    }
}

/// Where a savepoint began, to forget what it changed when it is rolled back.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Mark {
    /// Which transaction: a mark taken before the last commit or rollback
    /// undoes nothing.
    ends: u64,
    pending: usize,
}

#[derive(Debug, Default)]
pub struct Changes {
    /// Changed by the open transaction, in the order first changed (so a
    /// savepoint's tables are a tail), each once, as [`table_key`]s.
    pending: Vec<String>,
    committed: BTreeSet<String>,
    /// Transactions ended so far (see [`Mark`]).
    ends: u64,
}

impl Changes {
    /// A row of `table` changed in the open transaction.
    pub fn changed(&mut self, table: &str) {
        // Called for every row written: look before allocating a key.
        let known = self
            .pending
            .iter()
            .any(|p| p.eq_ignore_ascii_case(table) || (p == SCHEMA && table.eq_ignore_ascii_case("sqlite_master")));
        if !known {
            self.pending.push(table_key(table));
        }
    }

    /// The open transaction committed.
    pub fn committed(&mut self) {
        self.committed.extend(self.pending.drain(..));
        self.ends += 1;
    }

    /// The open transaction rolled back.
    pub fn rolled_back(&mut self) {
        self.pending.clear();
        self.ends += 1;
    }

    /// Marks the start of a savepoint.
    pub fn mark(&self) -> Mark {
        Mark { ends: self.ends, pending: self.pending.len() }
    }

    /// The savepoint begun at `mark` rolled back: the tables first changed
    /// since are pending no more.
    pub fn rolled_back_to(&mut self, mark: Mark) {
        if mark.ends == self.ends {
            self.pending.truncate(mark.pending);
        }
    }

    /// The tables committed since the last call, sorted; forgets them.
    pub fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.committed).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for (name, key) in [
            ("Photos", "photos"),
            ("photos", "photos"),
            ("sqlite_master", SCHEMA),
            ("SQLITE_SCHEMA", SCHEMA),
            ("Ünïcode", "Ünïcode"),
        ] {
            assert_eq!(table_key(name), key, "{name}");
        }
    }

    /// Runs `steps` (a table name: a row changed; `commit`, `rollback`,
    /// `mark`, `to`: back to the last mark) and returns what `take` gives.
    fn check(steps: &[&str], want: &[&str]) {
        let mut c = Changes::default();
        let mut marks = Vec::new();
        for step in steps {
            match *step {
                "commit" => c.committed(),
                "rollback" => c.rolled_back(),
                "mark" => marks.push(c.mark()),
                "to" => c.rolled_back_to(marks.pop().unwrap()),
                table => c.changed(table),
            }
        }
        assert_eq!(c.take(), want, "{steps:?}");
        assert!(c.take().is_empty(), "take forgets");
    }

    #[test]
    fn transactions() {
        check(&[], &[]);
        check(&["a"], &[]);
        check(&["b", "A", "a", "commit"], &["a", "b"]);
        check(&["a", "rollback"], &[]);
        check(&["a", "commit", "b", "rollback"], &["a"]);
        check(&["sqlite_master", "sqlite_schema", "t", "commit"], &[SCHEMA, "t"]);
        // Savepoints: what was pending before the mark stays pending.
        check(&["a", "mark", "b", "a", "to", "commit"], &["a"]);
        check(&["mark", "a", "mark", "b", "to", "commit"], &["a"]);
        check(&["mark", "a", "mark", "b", "to", "to", "commit"], &[]);
        check(&["mark", "a", "commit", "b", "to", "commit"], &["a", "b"]);
        check(&["a", "mark", "rollback", "b", "to", "commit"], &["b"]);
    }
}
