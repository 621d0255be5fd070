//! Partita's storage: a durable, partitioned, key-ordered store.
//!
//! Tables, index tables and views are keyspaces of rows stored in (partition key, row key)
//! order under an order-preserving encoding of typed values (`keycodec`, `layout`). Reads come
//! from one consistent snapshot; writes are buffered by optimistic transactions (`txn`) and
//! committed atomically and durably across keyspaces by a group-commit leader (`store`).
//! Range partitions (`ranges`) track each keyspace's physical shards. Everything sits on a
//! narrow engine interface (`engine`), fjall by default.
//!
//! This crate knows nothing of SQL text, DataFusion or the wire protocol.

pub mod engine;
pub mod error;
pub mod keycodec;
pub mod layout;
pub mod ranges;
pub mod rowcodec;
pub mod store;
pub mod txn;
pub mod value;

pub use engine::{Direction, KeyRange, KeyspaceId};
pub use error::{Error, Result};
pub use keycodec::{KeyColumn, SortOrder};
pub use layout::{KeyLayout, MAX_KEY_BYTES};
pub use ranges::RangePartition;
pub use store::{
    CATALOG_KEYSPACE, CommitInfo, KeyspaceDef, KeyspaceKind, ReadView, Row, RowIter, RowRef, Rows,
    Store, StoreOptions,
};
pub use txn::{Savepoint, Transaction};
pub use value::{Decimal, Interval, ScalarType, Value, ValueRef};
