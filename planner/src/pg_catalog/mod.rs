//! PostgreSQL's system catalogs, generated from Partita's catalog: `pg_catalog` and
//! `information_schema` for psql's `\d` commands, drivers' metadata calls and ORMs' reflection.
//!
//! Each catalog table is built when a statement resolves it, from the catalog as that
//! statement's transaction sees it (its own uncommitted DDL included). Tables, materialized
//! views, indexes and primary keys are relations with stable OIDs derived from their
//! keyspaces (`relation_oid`); types carry PostgreSQL's built-in OIDs. Catalogs of features
//! Partita does not have (policies, publications, rules, triggers …) exist and are empty, so
//! clients' queries of them plan and return no rows.
//!
//! The SQL clients send is normalized first (`rewrite`): `pg_catalog.` qualifiers,
//! `OPERATOR(pg_catalog.~)`, `COLLATE`, `::regclass` and the other OID-alias casts, and
//! `ARRAY(subquery)`.

mod functions;
mod rewrite;
mod tables;

pub use functions::format_type;
pub use functions::register;
pub(crate) use functions::register_identity;
pub(crate) use rewrite::call;
pub use rewrite::normalize;
pub use tables::{
    CatalogSchema, Snapshot, builtin_type_oid, field_type_oid, leads_with_partition_key,
    sequence_oid,
};

/// The first OID PostgreSQL gives user objects; relation OIDs start here.
const FIRST_USER_OID: i32 = 16384;
pub const PG_CATALOG_NAMESPACE: i32 = 11;
pub const PUBLIC_NAMESPACE: i32 = 2200;
pub const INFORMATION_SCHEMA_NAMESPACE: i32 = 13183;
/// The session's schema of temporary tables (`pg_temp_<n>`; each session sees its own only).
pub const TEMP_NAMESPACE: i32 = 16383;
/// The one role, owner of everything, named as the session's user (`Identity`).
pub const OWNER_OID: i32 = 10;
/// The one database, named as the session's database.
pub const DATABASE_OID: i32 = 5;
/// The PL/pgSQL extension's `pg_extension` row, PostgreSQL 15's OID for it.
pub const PLPGSQL_EXTENSION_OID: i32 = 13_563;

/// The OID of the table, materialized view or index stored in `keyspace`. The three
/// following OIDs belong to it too: a table's primary key (as an index), the primary key's
/// constraint and the table's row type.
pub fn relation_oid(keyspace: storage::KeyspaceId) -> i32 {
    FIRST_USER_OID.wrapping_add((keyspace as i32).wrapping_mul(4))
}

pub(crate) fn primary_key_oid(keyspace: storage::KeyspaceId) -> i32 {
    relation_oid(keyspace) + 1
}

pub(crate) fn primary_key_constraint_oid(keyspace: storage::KeyspaceId) -> i32 {
    relation_oid(keyspace) + 2
}

/// The OID of CHECK constraint `i` of a table, in a range of its own above relations'.
pub(crate) fn check_constraint_oid(keyspace: storage::KeyspaceId, i: usize) -> i32 {
    0x4000_0000_i32
        .wrapping_add((keyspace as i32).wrapping_mul(256))
        .wrapping_add(i as i32)
}

/// The OID of foreign key `i` of a table, after its CHECKs' in the same range.
pub(crate) fn foreign_key_oid(keyspace: storage::KeyspaceId, i: usize) -> i32 {
    check_constraint_oid(keyspace, 128 + i)
}

pub(crate) fn row_type_oid(keyspace: storage::KeyspaceId) -> i32 {
    relation_oid(keyspace) + 3
}
