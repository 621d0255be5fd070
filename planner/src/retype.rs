//! `ALTER TABLE … ALTER COLUMN c [SET DATA] TYPE t [USING e]`: every stored row is
//! converted and written again, as PostgreSQL rewrites the table.
//!
//! Without USING the column's values convert by assignment cast (number types among
//! themselves, anything to a string type…), else 42804 with the USING to write. With USING
//! each row's new value is the expression, evaluated over the row and cast to the new type.
//! The rows go into fresh keyspaces (the table's, its indexes', its materialized views'),
//! through the same writes an INSERT makes: a key column's new type orders the rows anew,
//! indexes are built over the new values, and NOT NULL, CHECK, unique and foreign-key
//! constraints hold for them or the statement fails. The old keyspaces are dropped at
//! commit; a rollback keeps them.

use crate::convert::value_from_array;
use crate::dml::{named, scratch_plan, select_query, table_ref};
use crate::error::{Error, Result};
use crate::provider::{SharedTxn, in_txn, stored_values};
use crate::session::Session;
use datafusion::common::tree_node::TreeNode;
use datafusion::datasource::MemTable;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast;
use sql::ddl::normalize_ident;
use sql::{SqlType, TableDef};
use std::ops::ControlFlow;
use std::sync::Arc;
use storage::{Direction, KeyRange, Value};

/// One `ALTER COLUMN c [SET DATA] TYPE t [USING e]` of a statement.
pub(crate) struct TypeChange<'a> {
    pub column: &'a ast::Ident,
    pub data_type: &'a ast::DataType,
    pub using: Option<&'a ast::Expr>,
}

/// A change resolved against the table: the column's position, name and types.
struct Resolved<'a> {
    i: usize,
    name: String,
    old: SqlType,
    new: SqlType,
    using: Option<&'a ast::Expr>,
}

/// Changes the types of the columns `changes` name, rewriting the stored rows once: every
/// USING reads the row as it was, as in PostgreSQL. `def` becomes the stored definition
/// (fresh keyspaces and all).
pub(crate) async fn alter_column_types(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    changes: &[TypeChange<'_>],
) -> Result<()> {
    let mut resolved: Vec<Resolved> = Vec::with_capacity(changes.len());
    for change in changes {
        let r = resolve(def, change, &session.user_types())?;
        if resolved.iter().any(|o| o.i == r.i) {
            return Err(Error::NotSupported {
                message: format!("cannot alter type of column \"{}\" twice", r.name),
                detail: None,
            });
        }
        resolved.push(r);
    }
    for r in &resolved {
        refuse_if_views_use(session, def, r.i, &r.name)?;
        // As in PostgreSQL; a generated column itself may change type (its values are
        // computed again, as every row is written again).
        // An index expression's column is computed again, with the type it then has.
        if let Some(g) = def.columns.iter().find(|c| {
            !crate::expression_index::is_expression(c)
                && c.generated
                    .as_deref()
                    .is_some_and(|g| crate::ddl::reads_column(g, &r.name).unwrap_or(true))
        }) {
            return Err(Error::NotSupported {
                message: "cannot alter type of a column used by a generated column".into(),
                detail: Some(format!(
                    "Column \"{}\" is used by generated column \"{}\".",
                    r.name, g.name
                )),
            });
        }
        if def.columns[r.i].default.is_some() && !r.old.assigns_to(r.new) {
            return Err(Error::DatatypeMismatch(format!(
                "default for column \"{}\" cannot be cast automatically to type {}",
                r.name,
                base_name(r.new)
            )));
        }
    }
    let rows = in_txn(txn, |t| {
        t.scan(def.keyspace, &KeyRange::all(), Direction::Forward)?
            .map(|row| Ok(stored_values(def, &row?.value)?))
            .collect::<Result<Vec<_>>>()
    })?;
    let values = converted(session, def, &resolved, &rows).await?;

    let mut retyped = def.clone();
    for r in &resolved {
        retyped.columns[r.i].ty = r.new;
        // As in PostgreSQL, an identity column's sequence takes the new type (a bound at the
        // old type's limit moves to the new one's); a serial column's keeps its own.
        let column = &def.columns[r.i];
        if column.identity.is_some() || column.owned_sequence(&def.name).is_some() {
            let options = column.sequence_options();
            retyped.columns[r.i].sequence_options = Some(match column.identity {
                Some(_) => {
                    options
                        .with(&[sql::SequenceOption::As(r.new.to_ast())], false)?
                        .0
                }
                None => options,
            });
        }
    }
    crate::expression_index::retype(&mut retyped)?;
    // Rows stored before a column was added are written whole again.
    retyped.missing_values.clear();
    retyped.schema_version += 1;
    crate::conditions::validate(&retyped)?;
    let mut keys: Vec<(TableDef, sql::catalog::ForeignKeyDef)> = Vec::new();
    for r in &resolved {
        for (child, fk) in crate::foreign::retyped(session, &retyped, r.i)? {
            if !keys
                .iter()
                .any(|(c, k)| c.name == child.name && k.name == fk.name)
            {
                keys.push((child, fk));
            }
        }
    }
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    let fresh = in_txn(txn, |t| {
        let mut fresh = crate::ddl::emptied(t, &retyped)?;
        fresh.sequence_keyspace = Some(def.sequence_keyspace.unwrap_or(def.keyspace));
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        for view in &fresh.views {
            catalog.write(t, &mut scope.changes, view.clone())?;
        }
        Ok(fresh)
    })?;
    // The rows are written as an INSERT writes them (indexes, views, NOT NULL, uniqueness),
    // checked against the CHECK constraints that read a changed column: as in PostgreSQL,
    // the others are not checked again.
    let mut writer = fresh.clone();
    writer.checks.retain(|c| {
        resolved
            .iter()
            .any(|r| crate::ddl::reads_column(&c.expr, &r.name).unwrap_or(true))
    });
    let layout = writer.layout()?;
    for (mut row, new) in rows.into_iter().zip(values) {
        for (r, value) in resolved.iter().zip(new) {
            row[r.i] = value;
        }
        // Index expressions are computed again, maybe of another type now.
        for (value, column) in row.iter_mut().zip(&fresh.columns) {
            if crate::expression_index::is_expression(column) {
                *value = storage::Value::Null;
            }
        }
        crate::dml::insert_new(&writer, &layout, txn, &mut row, false).map_err(|e| match e {
            Error::NotNull { table, column, .. } => Error::NullsInColumn { table, column },
            Error::CheckViolation {
                table, constraint, ..
            } => Error::CheckViolatedByRow { table, constraint },
            other => crate::index::in_new_index(other),
        })?;
    }
    crate::ddl::store_def(session, txn, fresh.clone())?;
    // The stored values may have changed (a USING expression, rounding): each foreign key
    // over a changed column holds for them, on either side, unless it was added NOT VALID.
    for (child, fk) in keys.iter().filter(|(_, k)| !k.not_valid) {
        let child = if child.name == fresh.name {
            &fresh
        } else {
            child
        };
        crate::foreign::validate(session, txn, child, fk)?;
    }
    *def = fresh;
    Ok(())
}

/// Resolves `change` against `def`, refusing what PostgreSQL refuses before reading a row.
fn resolve<'a>(def: &TableDef, change: &TypeChange<'a>, user: &[SqlType]) -> Result<Resolved<'a>> {
    let name = normalize_ident(change.column);
    let i = def
        .column_index(&name)
        .filter(|&i| !def.columns[i].hidden)
        .ok_or_else(|| {
            Error::Sql(sql::Error::UnknownColumn {
                table: def.name.clone(),
                column: name.clone(),
            })
        })?;
    // serial is a shorthand of CREATE TABLE, not a type.
    let written = change.data_type.to_string().to_lowercase();
    if written.ends_with("serial") {
        return Err(Error::Sql(sql::Error::UnknownType(written)));
    }
    let old = def.columns[i].ty;
    let new = SqlType::from_ast_with(change.data_type, user)?;
    if def.columns[i].identity.is_some()
        && !matches!(new, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
    {
        return Err(Error::Sql(sql::Error::InvalidParameter(
            "identity column type must be smallint, integer, or bigint".into(),
        )));
    }
    if change.using.is_none() && !old.assigns_to(new) {
        return Err(Error::CannotCoerce {
            message: format!(
                "column \"{name}\" cannot be cast automatically to type {}",
                base_name(new)
            ),
            hint: format!(
                "You might need to specify \"USING {}::{new}\".",
                crate::functions::text::quote_ident(&name)
            ),
        });
    }
    if let Some(expr) = change.using {
        refuse_subqueries(expr)?;
    }
    Ok(Resolved {
        i,
        name,
        old,
        new,
        using: change.using,
    })
}

/// A type's name without its modifier (`numeric`, `character varying`), as PostgreSQL's
/// messages name a target type.
fn base_name(ty: SqlType) -> String {
    let name = ty.to_string();
    match name.split_once('(') {
        Some((base, _)) => base.to_string(),
        None => name,
    }
}

/// Each row's values of the changed columns under their new types: each USING expression
/// (else the column) over the row as stored, cast to the new type, in `rows`' order.
async fn converted(
    session: &Session,
    def: &TableDef,
    changes: &[Resolved<'_>],
    rows: &[Vec<Value>],
) -> Result<Vec<Vec<Value>>> {
    let zone = session.zone().arrow.clone();
    let ctx = crate::dml::scratch_context_with(&zone, Some(session.clock()), session.user_types());
    crate::pg_catalog::register_identity(&ctx, &session.identity());
    let batch = crate::dml::rows_batch(def, &zone, &mut rows.iter())?;
    ctx.register_table(
        datafusion::common::TableReference::bare(def.name.clone()),
        Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]])?),
    )?;
    let projection = changes
        .iter()
        .enumerate()
        .map(|(n, r)| {
            let source = r.using.cloned().unwrap_or_else(|| {
                ast::Expr::Identifier(ast::Ident::with_quote('"', r.name.as_str()))
            });
            let expr = ast::Expr::Cast {
                kind: ast::CastKind::Cast,
                expr: Box::new(ast::Expr::Nested(Box::new(source))),
                data_type: cast_target(r.new),
                array: false,
                format: None,
            };
            named(expr, &format!("__partita_value_{n}"))
        })
        .collect();
    let query = select_query(projection, vec![table_ref(&def.name, None)], None);
    let plan = scratch_plan(&ctx, ast::Statement::Query(Box::new(query))).await?;
    if plan.exists(|p| Ok(matches!(p, LogicalPlan::Aggregate(_))))? {
        return Err(Error::Grouping(
            "aggregate functions are not allowed in transform expressions".into(),
        ));
    }
    if plan.exists(|p| Ok(matches!(p, LogicalPlan::Window(_))))? {
        return Err(Error::Windowing(
            "window functions are not allowed in transform expressions".into(),
        ));
    }
    if plan.exists(|p| Ok(matches!(p, LogicalPlan::Unnest(_))))? {
        return Err(Error::NotSupported {
            message: "set-returning functions are not allowed in transform expressions".into(),
            detail: None,
        });
    }
    let mut values = Vec::with_capacity(rows.len());
    for batch in ctx.execute_logical_plan(plan).await?.collect().await? {
        for r in 0..batch.num_rows() {
            let row = changes
                .iter()
                .enumerate()
                .map(|(n, c)| value_from_array(batch.column(n), r, c.new, &c.name))
                .collect::<Result<Vec<_>>>()?;
            values.push(row);
        }
    }
    if values.len() != rows.len() {
        return Err(Error::Internal("converted values for each row".into()));
    }
    Ok(values)
}

/// The type values are cast to before `value_from_array` applies `ty`'s own rules: a string
/// type's length and a numeric's precision are checked there (22001, 22003), not cut or
/// rounded by the cast, and text becomes bytea by PostgreSQL's rules there.
fn cast_target(ty: SqlType) -> ast::DataType {
    match ty {
        SqlType::Text | SqlType::Varchar { .. } | SqlType::Char { .. } | SqlType::Bytea => {
            SqlType::Text.to_ast()
        }
        SqlType::Numeric { .. } => SqlType::Numeric {
            precision: None,
            scale: None,
        }
        .to_ast(),
        other => other.to_ast(),
    }
}

/// A USING expression reads only its own row: a subquery is 0A000, as in PostgreSQL.
fn refuse_subqueries(expr: &ast::Expr) -> Result<()> {
    let found = ast::visit_expressions(expr, |e| match e {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    match found {
        ControlFlow::Break(()) => Err(Error::NotSupported {
            message: "cannot use subquery in transform expression".into(),
            detail: None,
        }),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// A view, plain or materialized, that reads column `i` (`name`) keeps its type: 0A000, as
/// PostgreSQL refuses it.
fn refuse_if_views_use(session: &Session, def: &TableDef, i: usize, name: &str) -> Result<()> {
    let plain = crate::plain_view::readers(session, &def.name)
        .into_iter()
        .find(|v| crate::plain_view::may_read_column(v, name))
        .map(|v| format!("view {}", v.name));
    let materialized = || {
        def.views
            .iter()
            .find(|v| {
                v.view
                    .as_ref()
                    .is_some_and(|vd| crate::ddl::view_uses(vd, i, name))
            })
            .map(|v| format!("materialized view {}", v.name))
    };
    match plain.or_else(materialized) {
        Some(view) => Err(Error::NotSupported {
            message: "cannot alter type of a column used by a view or rule".into(),
            detail: Some(format!(
                "rule _RETURN on {view} depends on column \"{name}\""
            )),
        }),
        None => Ok(()),
    }
}
