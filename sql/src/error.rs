//! The sql crate's one error type. Variants follow PostgreSQL's error classes so the wire
//! layer can map each to its SQLSTATE.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("relation \"{0}\" does not exist")]
    UnknownTable(String),

    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),

    #[error("index \"{0}\" does not exist")]
    UnknownIndex(String),

    #[error("column \"{column}\" of relation \"{table}\" does not exist")]
    UnknownColumn { table: String, column: String },

    /// An object name taken (a constraint's; 42710).
    #[error("{0}")]
    DuplicateObject(String),

    #[error("column \"{0}\" specified more than once")]
    DuplicateColumn(String),

    #[error("column \"{column}\" of relation \"{table}\" already exists")]
    ColumnExists { table: String, column: String },

    #[error("type \"{0}\" does not exist")]
    UnknownType(String),

    /// Bad DDL: a key that names no column, two primary keys, a json key, …
    #[error("{0}")]
    InvalidDefinition(String),

    /// A bad type modifier (varchar(0), numeric(50)).
    #[error("{0}")]
    InvalidParameter(String),

    /// A value beyond a type's or a sequence's range (22003).
    #[error("{0}")]
    OutOfRange(String),

    /// Text that is not a value of its type (22P02).
    #[error("{0}")]
    InvalidText(String),

    /// A sequence has no values left (2200H).
    #[error("{0}")]
    SequenceLimit(String),

    #[error("{0} is not supported")]
    Unsupported(String),

    /// A clause that contradicts another (`NOT DEFERRABLE INITIALLY DEFERRED`): 42601.
    #[error("{0}")]
    Syntax(String),

    #[error("catalog record is corrupt: {0}")]
    CorruptCatalog(String),

    #[error(transparent)]
    Storage(#[from] storage::Error),
}
