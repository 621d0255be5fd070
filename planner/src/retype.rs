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
use crate::dml::{named, scratch_context, scratch_plan, select_query, table_ref};
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

/// Changes column `column` of `def` to `data_type`, rewriting the stored rows; `def` becomes
/// the stored definition (fresh keyspaces and all).
pub(crate) async fn alter_column_type(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    column: &ast::Ident,
    data_type: &ast::DataType,
    using: Option<&ast::Expr>,
) -> Result<()> {
    let name = normalize_ident(column);
    let i = def
        .column_index(&name)
        .filter(|&i| !def.columns[i].hidden)
        .ok_or_else(|| {
            Error::Sql(sql::Error::UnknownColumn {
                table: def.name.clone(),
                column: name.clone(),
            })
        })?;
    let old = def.columns[i].ty;
    let new = SqlType::from_ast(data_type)?;
    if def.columns[i].identity.is_some()
        && !matches!(new, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
    {
        return Err(Error::Sql(sql::Error::InvalidParameter(
            "identity column type must be smallint, integer, or bigint".into(),
        )));
    }
    if using.is_none() && !old.assigns_to(new) {
        return Err(Error::CannotCoerce {
            message: format!("column \"{name}\" cannot be cast automatically to type {new}"),
            hint: format!("You might need to specify \"USING {name}::{new}\"."),
        });
    }
    if let Some(expr) = using {
        refuse_subqueries(expr)?;
    }
    refuse_if_views_use(session, def, i, &name)?;
    if def.columns[i].default.is_some() && !old.assigns_to(new) {
        return Err(Error::DatatypeMismatch(format!(
            "default for column \"{name}\" cannot be cast automatically to type {new}"
        )));
    }
    let rows = in_txn(txn, |t| {
        t.scan(def.keyspace, &KeyRange::all(), Direction::Forward)?
            .map(|row| Ok(stored_values(def, &row?.value)?))
            .collect::<Result<Vec<_>>>()
    })?;
    let values = converted(session, def, i, new, using, &rows).await?;

    let mut retyped = def.clone();
    retyped.columns[i].ty = new;
    // As in PostgreSQL, an identity column's sequence takes the new type (a bound at the old
    // type's limit moves to the new one's); a serial column's keeps its own.
    let column = &def.columns[i];
    if column.identity.is_some() || column.owned_sequence(&def.name).is_some() {
        let options = column.sequence_options();
        retyped.columns[i].sequence_options = Some(match column.identity {
            Some(_) => {
                options
                    .with(&[sql::SequenceOption::As(new.to_ast())], false)?
                    .0
            }
            None => options,
        });
    }
    // Rows stored before the column was added are written whole again.
    retyped.missing_values.clear();
    retyped.schema_version += 1;
    crate::conditions::validate(&retyped)?;
    let keys = crate::foreign::retyped(session, &retyped, i)?;
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
    let layout = fresh.layout()?;
    for (mut row, value) in rows.into_iter().zip(values) {
        row[i] = value;
        crate::dml::insert_new(&fresh, &layout, txn, &row, false).map_err(|e| match e {
            Error::NotNull { table, column } => Error::NullsInColumn { table, column },
            Error::CheckViolation {
                table, constraint, ..
            } => Error::CheckViolatedByRow { table, constraint },
            other => crate::index::in_new_index(other),
        })?;
    }
    crate::ddl::store_def(session, txn, fresh.clone())?;
    // The stored values may have changed (a USING expression, rounding): each foreign key
    // over the column holds for them, on either side.
    for (child, fk) in keys {
        let child = if child.name == fresh.name {
            fresh.clone()
        } else {
            child
        };
        crate::foreign::validate(session, txn, &child, &fk)?;
    }
    *def = fresh;
    Ok(())
}

/// Each row's value of the column under its new type `new`: the USING expression (else the
/// column) over the row, cast to `new`, in `rows`' order.
async fn converted(
    session: &Session,
    def: &TableDef,
    i: usize,
    new: SqlType,
    using: Option<&ast::Expr>,
    rows: &[Vec<Value>],
) -> Result<Vec<Value>> {
    let zone = session.zone().arrow.clone();
    let ctx = scratch_context(&zone);
    let batch = crate::dml::rows_batch(def, &zone, &mut rows.iter())?;
    ctx.register_table(
        datafusion::common::TableReference::bare(def.name.clone()),
        Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]])?),
    )?;
    let name = &def.columns[i].name;
    let source = using
        .cloned()
        .unwrap_or_else(|| ast::Expr::Identifier(ast::Ident::with_quote('"', name)));
    let expr = ast::Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(ast::Expr::Nested(Box::new(source))),
        data_type: cast_target(new),
        array: false,
        format: None,
    };
    let query = select_query(
        vec![named(expr, "__partita_value")],
        vec![table_ref(&def.name, None)],
        None,
    );
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
    let mut values = Vec::with_capacity(rows.len());
    for batch in ctx.execute_logical_plan(plan).await?.collect().await? {
        for r in 0..batch.num_rows() {
            values.push(value_from_array(batch.column(0), r, new, name)?);
        }
    }
    if values.len() != rows.len() {
        return Err(Error::Internal("a converted value for each row".into()));
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
