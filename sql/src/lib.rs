//! Partita's SQL layer: declared types, the catalog, and DDL from sqlparser's AST.
//!
//! Input: parsed statements (sqlparser via DataFusion's re-export). Output: table definitions
//! stored through `storage` transactions. No query execution and no wire protocol here.

pub mod catalog;
pub mod ddl;
pub mod error;
pub mod sequence;
pub mod types;

pub use catalog::{Catalog, CatalogChanges, ColumnDef, Identity, PlainView, TableDef};
pub use error::{Error, Result};
pub use sequence::{SequenceOption, SequenceOptions};
pub use types::SqlType;
