//! The storage crate's one error type.

use crate::value::ScalarType;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A key column was NULL. Keys never hold NULL.
    #[error("a key column cannot be NULL")]
    NullKeyPart,

    #[error("type {ty} cannot be part of a key")]
    UnsupportedKeyType { ty: ScalarType },

    #[error("key column of type {expected} was given a value of type {}", .found.map_or("null".to_string(), |t| t.to_string()))]
    KeyTypeMismatch {
        expected: ScalarType,
        found: Option<ScalarType>,
    },

    #[error("encoded key is {size} bytes, over the limit of {limit} bytes")]
    KeyTooLarge { size: usize, limit: usize },

    /// Another transaction changed what this one read or wrote after its snapshot was taken.
    #[error("could not serialize access due to a concurrent update")]
    Conflict,

    #[error("keyspace {id} does not exist")]
    UnknownKeyspace { id: u32 },

    /// A write or fsync failed earlier; the store refuses writes until it is reopened.
    #[error("the store refuses writes after an earlier I/O failure; restart the server")]
    Poisoned,

    /// The transaction was already committed or failed.
    #[error("the transaction is no longer active")]
    TransactionClosed,

    #[error("stored data is corrupt: {0}")]
    Corrupt(String),

    #[error("storage engine: {0}")]
    Engine(String),

    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),

    /// A bug in Partita, never a user error.
    #[error("internal error (this is a bug): {0}")]
    Internal(String),
}
