//! Enum types: CREATE TYPE … AS ENUM, ALTER TYPE … ADD VALUE and DROP TYPE.
//!
//! An enum is a catalog record (`sql::types::EnumType`: its name, OID and labels) and a
//! column type (`SqlType::Enum`) whose values are stored as their labels' text, checked
//! against the labels when written (22P02). The column definitions carry the type itself,
//! so ALTER TYPE … ADD VALUE writes the definitions of the tables that use it again.

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::provider::in_txn;
use crate::session::Session;
use datafusion::sql::sqlparser::ast;
use sql::SqlType;
use sql::types::EnumType;
use std::sync::Arc;

/// CREATE TYPE name AS ENUM ('a', 'b', …). The other kinds of CREATE TYPE are 0A000.
pub async fn create(
    session: &mut Session,
    name: &ast::ObjectName,
    representation: Option<&ast::UserDefinedTypeRepresentation>,
) -> Result<WriteResult> {
    let Some(ast::UserDefinedTypeRepresentation::Enum { labels }) = representation else {
        return Err(Error::Unsupported("CREATE TYPE other than AS ENUM".into()));
    };
    let name = sql::ddl::table_name(name)?;
    let changes = crate::sequences::session_changes(session);
    if session.db.catalog.user_type(&name, &changes).is_some() || builtin(&name) {
        return Err(sql::Error::DuplicateObject(format!("type \"{name}\" already exists")).into());
    }
    let labels: Vec<String> = labels.iter().map(|l| l.value.clone()).collect();
    for label in &labels {
        check_label(label)?;
    }
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        let oid = catalog.next_type_oid(t)?;
        let ty = EnumType { name, oid, labels };
        Ok(catalog.write_type(t, &mut scope.changes, ty)?)
    })?;
    Ok(WriteResult::command("CREATE TYPE"))
}

/// Whether `name` is a type PostgreSQL has built in (`CREATE TYPE text` is 42710 there).
fn builtin(name: &str) -> bool {
    crate::pg_catalog::builtin_type_oid(name).is_some()
}

/// A label PostgreSQL takes: not empty, at most 63 bytes.
fn check_label(label: &str) -> Result<()> {
    if label.is_empty() || label.len() > 63 {
        return Err(Error::InvalidName(format!(
            "invalid enum label \"{label}\""
        )));
    }
    Ok(())
}

/// The enum `name`, or 42704.
fn find(session: &Session, name: &str) -> Result<Arc<EnumType>> {
    let changes = crate::sequences::session_changes(session);
    session
        .db
        .catalog
        .user_type(name, &changes)
        .ok_or_else(|| sql::Error::UnknownType(name.to_string()).into())
}

/// The columns (`table`, `column`) whose type is enum `name`, materialized views' too.
fn columns_of(session: &Session, name: &str) -> Vec<(String, String)> {
    let changes = crate::sequences::session_changes(session);
    let mut found = Vec::new();
    for table in session.db.catalog.tables(&changes) {
        for column in &table.columns {
            if matches!(column.ty, SqlType::Enum { ty } if ty.name == name) {
                found.push((table.name.clone(), column.name.clone()));
            }
        }
    }
    found
}

/// DROP TYPE [IF EXISTS] name, …: 2BP01 while a column is of the type (CASCADE, which
/// would drop those columns, is 0A000 then).
pub async fn drop(
    session: &mut Session,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    for name in names {
        let name = sql::ddl::table_name(name)?;
        let changes = crate::sequences::session_changes(session);
        if session.db.catalog.user_type(&name, &changes).is_none() {
            if if_exists {
                session.notice(format!("type \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(sql::Error::UnknownType(name).into());
        }
        let users = columns_of(session, &name);
        if !users.is_empty() {
            if cascade {
                return Err(Error::Unsupported(
                    "DROP TYPE … CASCADE of a type columns use".into(),
                ));
            }
            return Err(Error::DependentObjects {
                message: format!("cannot drop type {name} because other objects depend on it"),
                detail: users
                    .iter()
                    .map(|(t, c)| format!("column {c} of table {t} depends on type {name}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            });
        }
        let catalog = session.db.catalog.clone();
        let scope = Arc::clone(&session.scope);
        in_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            Ok(catalog.drop_type(t, &mut scope.changes, &name)?)
        })?;
    }
    Ok(WriteResult::command("DROP TYPE"))
}

/// ALTER TYPE name ADD VALUE [IF NOT EXISTS] 'v' [BEFORE | AFTER 'w']. Renaming the type or
/// a value is 0A000: stored values are labels' text, which a rename would have to rewrite.
pub async fn alter(session: &mut Session, alter: &ast::AlterType) -> Result<WriteResult> {
    let name = sql::ddl::table_name(&alter.name)?;
    let ast::AlterTypeOperation::AddValue(add) = &alter.operation else {
        return Err(Error::Unsupported(format!(
            "ALTER TYPE … {}",
            match &alter.operation {
                ast::AlterTypeOperation::Rename(_) => "RENAME TO",
                _ => "RENAME VALUE",
            }
        )));
    };
    let old = find(session, &name)?;
    let label = add.value.value.clone();
    check_label(&label)?;
    if old.labels.contains(&label) {
        let message = format!("enum label \"{label}\" already exists");
        if add.if_not_exists {
            session.notice_coded("42710", format!("{message}, skipping"));
            return Ok(WriteResult::command("ALTER TYPE"));
        }
        return Err(sql::Error::DuplicateObject(message).into());
    }
    let mut labels = old.labels.clone();
    let at = match &add.position {
        None => labels.len(),
        Some(
            ast::AlterTypeAddValuePosition::Before(other)
            | ast::AlterTypeAddValuePosition::After(other),
        ) => {
            let i = labels
                .iter()
                .position(|l| *l == other.value)
                .ok_or_else(|| {
                    Error::InvalidParameterValue(format!(
                        "\"{}\" is not an existing enum label",
                        other.value
                    ))
                })?;
            match add.position {
                Some(ast::AlterTypeAddValuePosition::After(_)) => i + 1,
                _ => i,
            }
        }
    };
    labels.insert(at, label);
    let new = EnumType {
        labels,
        ..EnumType::clone(&old)
    };
    let ty = SqlType::enum_of(new.clone());
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        Ok(catalog.write_type(t, &mut scope.changes, new)?)
    })?;
    // The tables whose columns are of the type, and the base tables' copies of their
    // materialized views, take the new labels.
    let changes = crate::sequences::session_changes(session);
    for table in session.db.catalog.tables(&changes) {
        let mut def = sql::TableDef::clone(&table);
        let mut changed = retype(&mut def.columns, &name, ty);
        for view in &mut def.views {
            changed |= retype(&mut view.columns, &name, ty);
        }
        if changed {
            crate::ddl::store_def(session, &txn, def)?;
        }
    }
    Ok(WriteResult::command("ALTER TYPE"))
}

/// Gives the columns of enum `name` type `ty`; whether there was one.
fn retype(columns: &mut [sql::ColumnDef], name: &str, ty: SqlType) -> bool {
    let mut changed = false;
    for column in columns {
        if matches!(column.ty, SqlType::Enum { ty: old } if old.name == name) {
            column.ty = ty;
            changed = true;
        }
    }
    changed
}
