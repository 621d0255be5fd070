//! CREATE TABLE, ALTER TABLE ADD COLUMN and DROP TABLE, in the session's transaction.

use crate::convert::value_from_array;
use crate::dml::{WriteResult, parse_expr};
use crate::error::{Error, Result};
use crate::provider::{encode_hex, with_txn};
use crate::session::Session;
use datafusion::sql::sqlparser::ast::{self, AlterTableOperation, ObjectName};
use sql::ddl::{normalize_ident, table_def_from_create, table_name};
use storage::{Direction, KeyRange, Value};

fn storage_err(e: sql::Error) -> storage::Error {
    match e {
        sql::Error::Storage(e) => e,
        other => storage::Error::Internal(other.to_string()),
    }
}

pub async fn create_table(session: &mut Session, create: &ast::CreateTable) -> Result<WriteResult> {
    let def = table_def_from_create(create)?;
    for col in &def.columns {
        if let Some(default) = &col.default {
            parse_expr(default)?;
        }
    }
    let txn = session.open_txn()?;
    let exists = session.table_def(&def.name).is_ok();
    if exists {
        if create.if_not_exists {
            session.notice(format!(
                "relation \"{}\" already exists, skipping",
                def.name
            ));
            return Ok(WriteResult::command("CREATE TABLE"));
        }
        return Err(Error::Sql(sql::Error::DuplicateTable(def.name)));
    }
    let catalog = session.db.catalog.clone();
    let scope = std::sync::Arc::clone(&session.scope);
    let mut sql_error = None;
    with_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        match catalog.create_table(t, &mut scope.changes, def) {
            Ok(_) => Ok(()),
            Err(e @ sql::Error::Storage(_)) => Err(storage_err(e)),
            Err(e) => {
                sql_error = Some(e);
                Ok(())
            }
        }
    })?;
    if let Some(e) = sql_error {
        return Err(Error::Sql(e));
    }
    Ok(WriteResult::command("CREATE TABLE"))
}

pub async fn drop_tables(
    session: &mut Session,
    names: &[ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    for name in names {
        let name = table_name(name)?;
        let Ok(def) = session.table_def(&name) else {
            if if_exists {
                session.notice(format!("table \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(Error::Sql(sql::Error::UnknownTable(name)));
        };
        if def.view.is_some() {
            return Err(Error::WrongObjectType(format!(
                "\"{name}\" is not a table; use DROP MATERIALIZED VIEW"
            )));
        }
        if !def.views.is_empty() {
            let names: Vec<&str> = def.views.iter().map(|v| v.name.as_str()).collect();
            if !cascade {
                return Err(Error::DependentObjects(format!(
                    "cannot drop table {name} because other objects depend on it: materialized view {}",
                    names.join(", ")
                )));
            }
            for v in names {
                session.notice(format!("drop cascades to materialized view {v}"));
            }
        }
        let catalog = session.db.catalog.clone();
        let scope = std::sync::Arc::clone(&session.scope);
        with_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            catalog
                .drop_table(t, &mut scope.changes, &name)
                .map_err(storage_err)
        })?;
    }
    Ok(WriteResult::command("DROP TABLE"))
}

pub async fn alter_table(session: &mut Session, alter: &ast::AlterTable) -> Result<WriteResult> {
    let name = table_name(&alter.name)?;
    let Ok(def) = session.table_def(&name) else {
        if alter.if_exists {
            session.notice(format!("relation \"{name}\" does not exist, skipping"));
            return Ok(WriteResult::command("ALTER TABLE"));
        }
        return Err(Error::Sql(sql::Error::UnknownTable(name)));
    };
    let mut def = (*def).clone();
    let txn = session.open_txn()?;
    for op in &alter.operations {
        let AlterTableOperation::AddColumn {
            if_not_exists,
            column_def,
            ..
        } = op
        else {
            return Err(Error::Unsupported(format!("ALTER TABLE {op}")));
        };
        let col_name = normalize_ident(&column_def.name);
        if def.column_index(&col_name).is_some() {
            if *if_not_exists {
                session.notice(format!(
                    "column \"{col_name}\" of relation \"{name}\" already exists, skipping"
                ));
                continue;
            }
            return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                "column \"{col_name}\" of relation \"{name}\" already exists"
            ))));
        }
        if matches!(&column_def.data_type, ast::DataType::Custom(n, _)
            if n.to_string().to_ascii_lowercase().contains("serial"))
        {
            return Err(Error::Unsupported(
                "ALTER TABLE ADD COLUMN of a serial column".into(),
            ));
        }
        let ty = sql::SqlType::from_ast(&column_def.data_type)?;
        let mut col = sql::ColumnDef {
            name: col_name.clone(),
            ty,
            nullable: true,
            default: None,
            hidden: false,
            identity: None,
        };
        for opt in &column_def.options {
            match &opt.option {
                ast::ColumnOption::Null => col.nullable = true,
                ast::ColumnOption::NotNull => col.nullable = false,
                ast::ColumnOption::Default(expr) => col.default = Some(expr.to_string()),
                other => return Err(Error::Unsupported(format!("ADD COLUMN with {other}"))),
            }
        }
        // Rows already stored get the default, evaluated once now (PostgreSQL does the same).
        let missing = match &col.default {
            Some(text) => {
                let query = format!("SELECT CAST(({text}) AS {}) AS v", ty.to_ast());
                let stmt = crate::session::parse_sql(&query)?.remove(0);
                let ast::Statement::Query(q) = stmt else {
                    return Err(Error::Internal("default query".into()));
                };
                let batches = session.collect_query(*q, false).await?;
                match batches.iter().find(|b| b.num_rows() > 0) {
                    Some(b) => value_from_array(b.column(0), 0, ty, &col_name)?,
                    None => Value::Null,
                }
            }
            None => Value::Null,
        };
        if !col.nullable && missing.is_null() {
            let has_rows = with_txn(&txn, |t| {
                Ok(t.scan(def.keyspace, &KeyRange::all(), Direction::Forward)?
                    .next()
                    .is_some())
            })?;
            if has_rows {
                return Err(Error::NotNull {
                    table: name.clone(),
                    column: col_name,
                });
            }
        }
        let index = def.columns.len();
        if !missing.is_null() {
            def.missing_values.insert(
                index,
                encode_hex(&storage::rowcodec::encode_row(0, &[missing])),
            );
        }
        // The hidden row id stays the last stored column only in order of creation; new
        // columns go after it, which is fine: positions are by index, not by visibility.
        def.columns.push(col);
        def.schema_version += 1;
    }
    let catalog = session.db.catalog.clone();
    let scope = std::sync::Arc::clone(&session.scope);
    with_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        catalog
            .write(t, &mut scope.changes, def)
            .map(|_| ())
            .map_err(storage_err)
    })?;
    Ok(WriteResult::command("ALTER TABLE"))
}
