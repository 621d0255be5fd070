//! Temporary tables: `CREATE TEMP[ORARY] TABLE`, tables of one session.
//!
//! Each session has a schema of its own, `pg_temp_<n>` (`CatalogChanges::temp_schema`). A
//! table made TEMPORARY is kept under it (`TableDef::temp_schema`): the session finds it by
//! its name, which no permanent relation may share (`Catalog::name_taken`), and no other
//! session finds it at all. Its rows
//! are stored as any table's, in keyspaces of its own. The session drops its temporary
//! tables when it ends (`Drop for Session`), DISCARD TEMP or ALL drops them sooner, and those
//! a crash left behind are dropped when the database opens (`Database::open`).
//!
//! `ON COMMIT DROP` drops the table when the transaction that made it commits;
//! `ON COMMIT DELETE ROWS` empties it at every commit of the session (`on_commit`).

use crate::error::{Error, Result};
use crate::session::Session;
use datafusion::sql::sqlparser::ast;
use sql::TableDef;
use sql::catalog::OnCommit;
use std::sync::atomic::{AtomicU64, Ordering};
use storage::{Direction, KeyRange, Transaction};

/// The number the next session's schema is given; numbers are not given twice while the
/// server runs (a session that could not drop its tables leaves them to the next start).
static NEXT_SCHEMA: AtomicU64 = AtomicU64::new(1);

/// A new session's schema for its temporary tables.
pub(crate) fn next_schema() -> String {
    format!("pg_temp_{}", NEXT_SCHEMA.fetch_add(1, Ordering::Relaxed))
}

/// Gives new sessions schema numbers past those of the temporary tables still in `catalog`
/// (left because they could not be dropped), which no session may take for its own.
pub(crate) fn skip_schemas(catalog: &sql::Catalog) {
    for table in catalog.temporary_tables() {
        let number = table
            .temp_schema
            .as_deref()
            .and_then(|s| s.strip_prefix("pg_temp_"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(number) = number {
            NEXT_SCHEMA.fetch_max(number + 1, Ordering::Relaxed);
        }
    }
}

/// Makes `def` the session's temporary table when `create` says TEMPORARY, with its
/// ON COMMIT action. ON COMMIT of a permanent table is 42P16, as in PostgreSQL.
pub(crate) fn mark(
    session: &mut Session,
    create: &ast::CreateTable,
    def: &mut TableDef,
) -> Result<()> {
    let on_commit = match create.on_commit {
        None | Some(ast::OnCommit::PreserveRows) => None,
        Some(ast::OnCommit::DeleteRows) => Some(OnCommit::DeleteRows),
        Some(ast::OnCommit::Drop) => Some(OnCommit::Drop),
    };
    if !create.temporary {
        if create.on_commit.is_some() {
            return Err(Error::Sql(sql::Error::InvalidDefinition(
                "ON COMMIT can only be used on temporary tables".into(),
            )));
        }
        return Ok(());
    }
    def.temp_schema = Some(schema(session));
    def.on_commit = on_commit;
    if on_commit.is_some() {
        session.temp_on_commit = true;
    }
    Ok(())
}

/// The session's schema for temporary tables.
pub(crate) fn schema(session: &Session) -> String {
    let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
    scope
        .changes
        .temp_schema
        .as_deref()
        .unwrap_or_default()
        .to_string()
}

/// Runs the ON COMMIT actions of the session's temporary tables in `txn`, which is about to
/// commit: drops the ON COMMIT DROP ones (only the committing transaction can have made
/// them) and deletes the rows of the ON COMMIT DELETE ROWS ones.
pub(crate) fn on_commit(session: &mut Session, txn: &mut Transaction) -> Result<()> {
    let catalog = session.db.catalog.clone();
    let mut scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
    let acting: Vec<_> = catalog
        .tables(&scope.changes)
        .into_iter()
        .filter(|t| t.temp_schema.is_some() && t.on_commit.is_some())
        .collect();
    for table in &acting {
        match table.on_commit {
            Some(OnCommit::Drop) => catalog
                .drop_table(txn, &mut scope.changes, &table.name)
                .map_err(Error::Sql)?,
            Some(OnCommit::DeleteRows) => empty(txn, table).map_err(Error::from_storage)?,
            None => {}
        }
    }
    drop(scope);
    session.temp_on_commit = acting
        .iter()
        .any(|t| t.on_commit == Some(OnCommit::DeleteRows));
    Ok(())
}

/// Deletes every row of `table` and every entry of its indexes in `txn`.
fn empty(txn: &mut Transaction, table: &TableDef) -> storage::Result<()> {
    let keyspaces = std::iter::once(table.keyspace).chain(table.indexes.iter().map(|i| i.keyspace));
    for keyspace in keyspaces {
        let keys: Vec<_> = txn
            .scan(keyspace, &KeyRange::all(), Direction::Forward)?
            .map(|row| row.map(|r| r.key))
            .collect::<storage::Result<_>>()?;
        for key in keys {
            txn.delete(keyspace, &key)?;
        }
    }
    Ok(())
}

/// DISCARD TEMP (and ALL): drops the session's temporary tables, in the open transaction
/// if there is one, else in a transaction of their own.
pub(crate) fn discard(session: &mut Session) -> Result<()> {
    let catalog = session.db.catalog.clone();
    let Some(open) = &session.txn else {
        let schema = schema(session);
        catalog
            .drop_temporary_tables(&session.db.store, Some(&schema))
            .map_err(Error::Sql)?;
        return Ok(());
    };
    let mut scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
    let names: Vec<String> = catalog
        .tables(&scope.changes)
        .into_iter()
        .filter(|t| t.temp_schema.is_some())
        .map(|t| t.name.clone())
        .collect();
    let mut failed = None;
    crate::provider::with_txn(&open.txn, |t| {
        for name in &names {
            match catalog.drop_table(t, &mut scope.changes, name) {
                Ok(()) => {}
                Err(sql::Error::Storage(e)) => return Err(e),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        Ok(())
    })
    .map_err(Error::from_storage)?;
    match failed {
        Some(e) => Err(Error::Sql(e)),
        None => Ok(()),
    }
}

/// Drops the session's temporary tables when it ends, in a transaction of their own (its
/// own transaction, if one is open, rolls back first). A conflict is tried again a few
/// times; tables still left are dropped at the next start.
pub(crate) fn drop_at_end(session: &mut Session) {
    if let Some(open) = session.txn.take()
        && let Some(txn) = open.txn.lock().unwrap_or_else(|e| e.into_inner()).take()
    {
        txn.rollback();
    }
    let schema = schema(session);
    for attempt in 0.. {
        match session
            .db
            .catalog
            .drop_temporary_tables(&session.db.store, Some(&schema))
        {
            Ok(_) => return,
            Err(sql::Error::Storage(storage::Error::Conflict)) if attempt < 8 => {
                std::thread::sleep(std::time::Duration::from_millis(1 << attempt));
            }
            Err(e) => {
                eprintln!(
                    "partita: the temporary tables of {schema} are left for the next start: {e}"
                );
                return;
            }
        }
    }
}
