//! Partita's planner: sessions and statement execution over DataFusion, the table provider
//! and key scans, DML and DDL execution.
//!
//! Input: parsed statements. Output: Arrow record batch streams and command tags. No wire
//! protocol and no sockets here.

pub mod advisory;
pub mod arrays;
pub mod autoparam;
pub mod binary;
pub mod casts;
pub mod classify;
mod conditions;
pub mod convert;
pub mod copy;
pub mod cursor;
mod datetime_input;
pub mod ddl;
pub mod digits;
pub mod dml;
mod do_block;
mod enums;
pub mod error;
pub mod executor;
pub mod explain;
mod expression_index;
pub mod extensions;
pub mod fastpath;
mod foreign;
pub mod functions;
pub mod index;
pub mod interrupt;
pub mod interval;
mod interval_input;
pub mod json;
mod lateral;
mod lateral_limit;
mod like;
pub mod literals;
pub mod naming;
pub mod notify;
pub mod numeric;
pub mod objects;
pub mod output;
mod params;
pub mod pg_catalog;
mod plain_view;
pub mod provider;
mod query_forms;
mod retype;
mod rows;
pub mod schema;
pub mod semantics;
pub mod sequences;
pub mod session;
pub mod setops;
pub mod sqlstate;
mod srf;
pub mod subquery;
mod temp;
pub mod text;
pub mod to_char;
mod using;
pub mod view;
pub mod wildcard;
mod with_writes;
pub mod zone;

pub use error::{Error, Result};
pub use session::{Database, Output, Param, Session, TxnStatus, parse_sql};
