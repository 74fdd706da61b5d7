//! The one error type, and the codes users see on `ResqError.code`.
//!
//! SQLite failures keep SQLite's extended result code (`errno`) and its
//! extended name (`SQLITE_CONSTRAINT_UNIQUE`); the package's own failures use
//! the `RESQ_*` codes from API.md. The names are decided here, once.

use std::fmt;

/// Everything a call can fail with.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// SQLite returned an error: its extended result code and message.
    Sqlite { errno: i32, message: String },
    /// A value or argument the call cannot take (bad type, count, name).
    BadParam(String),
    /// The database was closed before this call.
    Closed,
    /// The database file is held by another tab, worker or `open()`.
    Locked(String),
    /// The origin's storage quota is exhausted.
    Quota(String),
    /// The browser lacks something the call needs (OPFS, a worker).
    Unsupported(String),
    /// An offset or length outside the stored value.
    Range(String),
    /// No such table, column or rowid for a blob method.
    NotFound(String),
    /// The key does not open the database: wrong, missing, or given for a
    /// plain file.
    BadKey(String),
    /// A reader connection was asked for what only the writer may run (a
    /// write, a transaction, a pragma, something its schema lacks). Never
    /// reaches the page: the worker runs the call on the writer instead.
    OnWriter,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The string users match on: `ResqError.code`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Sqlite { errno, .. } => sqlite_code_name(*errno),
            Error::BadParam(_) => "RESQ_BAD_PARAM",
            Error::Closed => "RESQ_CLOSED",
            Error::Locked(_) => "RESQ_LOCKED",
            Error::Quota(_) => "RESQ_QUOTA",
            Error::Unsupported(_) => "RESQ_UNSUPPORTED",
            Error::Range(_) => "RESQ_RANGE",
            Error::NotFound(_) => "RESQ_NOT_FOUND",
            Error::BadKey(_) => "RESQ_BAD_KEY",
            Error::OnWriter => "RESQ_ON_WRITER",
        }
    }

    /// SQLite's extended result code, where there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Sqlite { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// Appends the failing SQL to the message, as API.md asks.
    pub fn with_sql(self, sql: &str) -> Error {
        const MAX: usize = 200;
        let shown = match sql.char_indices().nth(MAX) {
            Some((cut, _)) => format!("{}…", &sql[..cut]),
            None => sql.to_owned(),
        };
        let add = |m: String| format!("{m} (in: {shown})");
        match self {
            Error::Sqlite { errno, message } => Error::Sqlite { errno, message: add(message) },
            Error::BadParam(m) => Error::BadParam(add(m)),
            other => other,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Sqlite { message, .. } => f.write_str(message),
            Error::Closed => f.write_str("the database is closed"),
            Error::OnWriter => f.write_str("this call runs on the writer"),
            Error::BadParam(m)
            | Error::Locked(m)
            | Error::Quota(m)
            | Error::Unsupported(m)
            | Error::Range(m)
            | Error::NotFound(m)
            | Error::BadKey(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// SQLite's name for an extended (or primary) result code, as in `sqlite3.h`.
/// An extended code SQLite adds later falls back to its primary name.
pub fn sqlite_code_name(errno: i32) -> &'static str {
    fn find(code: i32) -> Option<&'static str> {
        SQLITE_CODES.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)
    }
    find(errno).or_else(|| find(errno & 0xff)).unwrap_or("SQLITE_ERROR")
}

/// Generated from SQLite 3.54.1's `sqlite3.h` (primary codes, then extended).
const SQLITE_CODES: &[(i32, &str)] = &[
    (0, "SQLITE_OK"),
    (1, "SQLITE_ERROR"),
    (2, "SQLITE_INTERNAL"),
    (3, "SQLITE_PERM"),
    (4, "SQLITE_ABORT"),
    (5, "SQLITE_BUSY"),
    (6, "SQLITE_LOCKED"),
    (7, "SQLITE_NOMEM"),
    (8, "SQLITE_READONLY"),
    (9, "SQLITE_INTERRUPT"),
    (10, "SQLITE_IOERR"),
    (11, "SQLITE_CORRUPT"),
    (12, "SQLITE_NOTFOUND"),
    (13, "SQLITE_FULL"),
    (14, "SQLITE_CANTOPEN"),
    (15, "SQLITE_PROTOCOL"),
    (16, "SQLITE_EMPTY"),
    (17, "SQLITE_SCHEMA"),
    (18, "SQLITE_TOOBIG"),
    (19, "SQLITE_CONSTRAINT"),
    (20, "SQLITE_MISMATCH"),
    (21, "SQLITE_MISUSE"),
    (22, "SQLITE_NOLFS"),
    (23, "SQLITE_AUTH"),
    (24, "SQLITE_FORMAT"),
    (25, "SQLITE_RANGE"),
    (26, "SQLITE_NOTADB"),
    (27, "SQLITE_NOTICE"),
    (28, "SQLITE_WARNING"),
    (100, "SQLITE_ROW"),
    (101, "SQLITE_DONE"),
    (257, "SQLITE_ERROR_MISSING_COLLSEQ"),
    (513, "SQLITE_ERROR_RETRY"),
    (769, "SQLITE_ERROR_SNAPSHOT"),
    (1025, "SQLITE_ERROR_RESERVESIZE"),
    (1281, "SQLITE_ERROR_KEY"),
    (1537, "SQLITE_ERROR_UNABLE"),
    (266, "SQLITE_IOERR_READ"),
    (522, "SQLITE_IOERR_SHORT_READ"),
    (778, "SQLITE_IOERR_WRITE"),
    (1034, "SQLITE_IOERR_FSYNC"),
    (1290, "SQLITE_IOERR_DIR_FSYNC"),
    (1546, "SQLITE_IOERR_TRUNCATE"),
    (1802, "SQLITE_IOERR_FSTAT"),
    (2058, "SQLITE_IOERR_UNLOCK"),
    (2314, "SQLITE_IOERR_RDLOCK"),
    (2570, "SQLITE_IOERR_DELETE"),
    (2826, "SQLITE_IOERR_BLOCKED"),
    (3082, "SQLITE_IOERR_NOMEM"),
    (3338, "SQLITE_IOERR_ACCESS"),
    (3594, "SQLITE_IOERR_CHECKRESERVEDLOCK"),
    (3850, "SQLITE_IOERR_LOCK"),
    (4106, "SQLITE_IOERR_CLOSE"),
    (4362, "SQLITE_IOERR_DIR_CLOSE"),
    (4618, "SQLITE_IOERR_SHMOPEN"),
    (4874, "SQLITE_IOERR_SHMSIZE"),
    (5130, "SQLITE_IOERR_SHMLOCK"),
    (5386, "SQLITE_IOERR_SHMMAP"),
    (5642, "SQLITE_IOERR_SEEK"),
    (5898, "SQLITE_IOERR_DELETE_NOENT"),
    (6154, "SQLITE_IOERR_MMAP"),
    (6410, "SQLITE_IOERR_GETTEMPPATH"),
    (6666, "SQLITE_IOERR_CONVPATH"),
    (6922, "SQLITE_IOERR_VNODE"),
    (7178, "SQLITE_IOERR_AUTH"),
    (7434, "SQLITE_IOERR_BEGIN_ATOMIC"),
    (7690, "SQLITE_IOERR_COMMIT_ATOMIC"),
    (7946, "SQLITE_IOERR_ROLLBACK_ATOMIC"),
    (8202, "SQLITE_IOERR_DATA"),
    (8458, "SQLITE_IOERR_CORRUPTFS"),
    (8714, "SQLITE_IOERR_IN_PAGE"),
    (8970, "SQLITE_IOERR_BADKEY"),
    (9226, "SQLITE_IOERR_CODEC"),
    (262, "SQLITE_LOCKED_SHAREDCACHE"),
    (518, "SQLITE_LOCKED_VTAB"),
    (261, "SQLITE_BUSY_RECOVERY"),
    (517, "SQLITE_BUSY_SNAPSHOT"),
    (773, "SQLITE_BUSY_TIMEOUT"),
    (270, "SQLITE_CANTOPEN_NOTEMPDIR"),
    (526, "SQLITE_CANTOPEN_ISDIR"),
    (782, "SQLITE_CANTOPEN_FULLPATH"),
    (1038, "SQLITE_CANTOPEN_CONVPATH"),
    (1294, "SQLITE_CANTOPEN_DIRTYWAL"),
    (1550, "SQLITE_CANTOPEN_SYMLINK"),
    (267, "SQLITE_CORRUPT_VTAB"),
    (523, "SQLITE_CORRUPT_SEQUENCE"),
    (779, "SQLITE_CORRUPT_INDEX"),
    (264, "SQLITE_READONLY_RECOVERY"),
    (520, "SQLITE_READONLY_CANTLOCK"),
    (776, "SQLITE_READONLY_ROLLBACK"),
    (1032, "SQLITE_READONLY_DBMOVED"),
    (1288, "SQLITE_READONLY_CANTINIT"),
    (1544, "SQLITE_READONLY_DIRECTORY"),
    (516, "SQLITE_ABORT_ROLLBACK"),
    (275, "SQLITE_CONSTRAINT_CHECK"),
    (531, "SQLITE_CONSTRAINT_COMMITHOOK"),
    (787, "SQLITE_CONSTRAINT_FOREIGNKEY"),
    (1043, "SQLITE_CONSTRAINT_FUNCTION"),
    (1299, "SQLITE_CONSTRAINT_NOTNULL"),
    (1555, "SQLITE_CONSTRAINT_PRIMARYKEY"),
    (1811, "SQLITE_CONSTRAINT_TRIGGER"),
    (2067, "SQLITE_CONSTRAINT_UNIQUE"),
    (2323, "SQLITE_CONSTRAINT_VTAB"),
    (2579, "SQLITE_CONSTRAINT_ROWID"),
    (2835, "SQLITE_CONSTRAINT_PINNED"),
    (3091, "SQLITE_CONSTRAINT_DATATYPE"),
    (283, "SQLITE_NOTICE_RECOVER_WAL"),
    (539, "SQLITE_NOTICE_RECOVER_ROLLBACK"),
    (795, "SQLITE_NOTICE_RBU"),
    (284, "SQLITE_WARNING_AUTOINDEX"),
    (279, "SQLITE_AUTH_USER"),
    (256, "SQLITE_OK_LOAD_PERMANENTLY"),
    (512, "SQLITE_OK_SYMLINK"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        let check = |e: Error, code: &str| assert_eq!(e.code(), code);
        check(Error::Sqlite { errno: 2067, message: String::new() }, "SQLITE_CONSTRAINT_UNIQUE");
        check(Error::Sqlite { errno: 1555, message: String::new() }, "SQLITE_CONSTRAINT_PRIMARYKEY");
        check(Error::Sqlite { errno: 1, message: String::new() }, "SQLITE_ERROR");
        check(Error::Sqlite { errno: 5, message: String::new() }, "SQLITE_BUSY");
        check(Error::Sqlite { errno: 13, message: String::new() }, "SQLITE_FULL");
        check(Error::Sqlite { errno: 266, message: String::new() }, "SQLITE_IOERR_READ");
        // An extended code this table does not know falls back to its primary.
        check(Error::Sqlite { errno: 19 | (99 << 8), message: String::new() }, "SQLITE_CONSTRAINT");
        check(Error::BadParam("x".into()), "RESQ_BAD_PARAM");
        check(Error::Closed, "RESQ_CLOSED");
        check(Error::Range("x".into()), "RESQ_RANGE");
        check(Error::BadKey("x".into()), "RESQ_BAD_KEY");
    }

    #[test]
    fn message_names_the_sql() {
        let e = Error::Sqlite { errno: 1, message: "near \"SELEC\": syntax error".into() };
        assert_eq!(e.with_sql("SELEC 1").to_string(), "near \"SELEC\": syntax error (in: SELEC 1)");
        let long = "x".repeat(500);
        assert!(Error::BadParam("m".into()).with_sql(&long).to_string().ends_with("…)"));
    }
}
